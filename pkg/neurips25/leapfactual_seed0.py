"""``python -m neurips25.leapfactual_seed0 [--scale small|full] [--out PATH]``: the leapfactual chapter's
own seed-0 run where the notebook's budget is too small (the MLP refit of every training set, per fit
seed; the official-protocol CE pool: oracle agreement, refit accuracy at 10 / 50 / 100 %, nearest
training digits), written to ``notebooks/results/leapfactual_seed0.json`` — the same as
``python -m neurips25.leapfactual --part seed0`` (settings ``neurips25.leapfactual.SEED0``)."""
import sys

from .leapfactual import main

if __name__ == "__main__":
    main(["--part", "seed0", *sys.argv[1:]])
