"""``python -m neurips25.leapfactual_table2 [--scale small|full] [--out PATH]``: the leapfactual
chapter's Table 2 (counterfactual quality per method, argmax and soft labels: flip rate of f, oracle
agreement, distances) for each of the notebook's seeds, as the notebook computes it live for seed 0,
written to ``notebooks/results/leapfactual_table2.json`` — the same as
``python -m neurips25.leapfactual --part table2`` (``neurips25.leapfactual.table2_run``, settings
``TABLE2``)."""
import sys

from .leapfactual import main

if __name__ == "__main__":
    main(["--part", "table2", *sys.argv[1:]])
