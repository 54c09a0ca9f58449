"""``python -m neurips25.grid_reasoning_proposer [--scale small|full] [--out PATH]``: the grid_reasoning
chapter's proposer B (trained on the traces Algorithm 1 keeps) for the first seed of the sweep, with its
weights, written to ``notebooks/results/grid_reasoning_proposer.json`` — the same as ``python -m
neurips25.grid_reasoning --experiment proposer`` (see :func:`neurips25.grid_reasoning.model.ship_proposer_b`)."""
import sys

from .grid_reasoning.model import main

if __name__ == "__main__":
    main(["--experiment", "proposer", *sys.argv[1:]])
