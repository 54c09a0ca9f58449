"""``python -m neurips25.unlearning_spiky [--scale small|full] [--out PATH]``: the unlearning chapter's run
of the paper's own ("spiky") sine setup, written to ``notebooks/results/unlearning_spiky.json`` — the same
as ``python -m neurips25.unlearning --experiment spiky`` (settings ``neurips25.unlearning.SPIKY``)."""
import sys

from .unlearning import main

if __name__ == "__main__":
    main(["--experiment", "spiky", *sys.argv[1:]])
