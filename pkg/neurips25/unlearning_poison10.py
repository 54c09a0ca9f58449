"""``python -m neurips25.unlearning_poison10 [--scale small|full] [--out PATH]``: the unlearning chapter's
data-poisoning sweep (Table 1 at CPU scale) over the paper's ten trials (evaluation seeds 0–9,
configurations chosen on the stored sweep's two held-out tuning seeds), written to
``notebooks/results/unlearning_poison10.json`` — the same as
``python -m neurips25.unlearning --experiment poison10`` (settings ``neurips25.unlearning.POISON10``)."""
import sys

from .unlearning import main

if __name__ == "__main__":
    main(["--experiment", "poison10", *sys.argv[1:]])
