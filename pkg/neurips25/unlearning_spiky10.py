"""``python -m neurips25.unlearning_spiky10 [--scale small|full] [--out PATH]``: the unlearning chapter's
spiky setup over the paper's ten trials (evaluation seeds 0–9, three held-out tuning seeds, snapshots up
to 100,000 steps), written to ``notebooks/results/unlearning_spiky10.json`` — the same as
``python -m neurips25.unlearning --experiment spiky10`` (settings ``neurips25.unlearning.SPIKY10``)."""
import sys

from .unlearning import main

if __name__ == "__main__":
    main(["--experiment", "spiky10", *sys.argv[1:]])
