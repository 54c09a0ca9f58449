"""``python -m neurips25.unlearning_table6 [--scale small|full] [--out PATH]``: the unlearning chapter's spiky claim
with the configurations the paper reports (its Table 6, ``neurips25.unlearning.PAPER_TABLE6``), no tuning, on fresh
seeds 10-19 from new 100,000-step networks, written to ``notebooks/results/unlearning_table6.json`` — the same as
``python -m neurips25.unlearning --experiment table6`` (settings ``neurips25.unlearning.TABLE6``)."""
import sys

from .unlearning import main

if __name__ == "__main__":
    main(["--experiment", "table6", *sys.argv[1:]])
