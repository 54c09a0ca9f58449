"""``python -m neurips25.grid_reasoning_distance [--scale small|full] [--out PATH]``: the grid_reasoning
chapter's premise-distance probe over seeds, written to ``notebooks/results/grid_reasoning_distance.json``
— the same as ``python -m neurips25.grid_reasoning --experiment distance`` (settings
``neurips25.grid_reasoning.probe.DISTANCE``)."""
import sys

from .grid_reasoning.model import main

if __name__ == "__main__":
    main(["--experiment", "distance", *sys.argv[1:]])
