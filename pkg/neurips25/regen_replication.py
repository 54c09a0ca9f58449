"""``python -m neurips25.regen_replication [--scale small|full] [--out PATH]``: the regen chapter's
replication of the R@1 gain on fresh data seeds (``neurips25.regen.REPLICATION_DATA_SEEDS``, the stored
sweep's sizes), written to ``notebooks/results/regen_replication.json`` — the same as
``python -m neurips25.regen --replication``."""
import sys

from .regen import main

if __name__ == "__main__":
    main(["--replication", *sys.argv[1:]])
