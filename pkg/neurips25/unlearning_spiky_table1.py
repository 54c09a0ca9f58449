"""``python -m neurips25.unlearning_spiky_table1 [--scale small|full] [--out PATH]``: the unlearning
chapter's Table 1 in the paper's own setup (every method at T = 10 / 100 / 1000 from the 100,000-step
poisoned network, evaluation seeds 0–9, three held-out tuning seeds), written to
``notebooks/results/unlearning_spiky_table1.json`` — the same as
``python -m neurips25.unlearning --experiment spiky_table1`` (settings ``neurips25.unlearning.SPIKY_TABLE1``)."""
import sys

from .unlearning import main

if __name__ == "__main__":
    main(["--experiment", "spiky_table1", *sys.argv[1:]])
