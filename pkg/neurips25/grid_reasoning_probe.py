"""``python -m neurips25.grid_reasoning_probe [--scale small|full] [--out PATH]``: the grid_reasoning
chapter's recall-order probe over seeds, written to ``notebooks/results/grid_reasoning_probe.json`` — the
same as ``python -m neurips25.grid_reasoning --experiment probe`` (settings
``neurips25.grid_reasoning.probe.PROBE``)."""
import sys

from .grid_reasoning.model import main

if __name__ == "__main__":
    main(["--experiment", "probe", *sys.argv[1:]])
