"""``python -m neurips25.unlearning_spiky_selection [--scale small|full] [--out PATH]``: every configuration
of the unlearning chapter's spiky-setup grids evaluated on held-out and evaluation seeds, written to
``notebooks/results/unlearning_spiky_selection.json`` — the same as ``python -m neurips25.unlearning
--experiment selection`` (settings ``neurips25.unlearning.SPIKY_SELECTION``)."""
import sys

from .unlearning import main

if __name__ == "__main__":
    main(["--experiment", "selection", *sys.argv[1:]])
