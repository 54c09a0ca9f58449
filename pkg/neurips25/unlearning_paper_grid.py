"""``python -m neurips25.unlearning_paper_grid [--scale small|full] [--out PATH]``: the unlearning chapter's
spiky claim tuned on the official code's grids (MinNorm-OG 162 / 72 configurations at T = 10 / 100, GD
three learning rates), every configuration evaluated on three held-out tuning seeds and evaluation seeds
0–9, written to ``notebooks/results/unlearning_paper_grid.json`` — the same as ``python -m
neurips25.unlearning --experiment paper_grid`` (settings ``neurips25.unlearning.PAPER_GRID``)."""
import sys

from .unlearning import main

if __name__ == "__main__":
    main(["--experiment", "paper_grid", *sys.argv[1:]])
