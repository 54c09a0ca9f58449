"""``python -m neurips25.regen_full_sizes [--scale small|full] [--out PATH]``: the regen chapter's
R@1 gain at the sizes of its ``full`` scale (``neurips25.regen.RETRIEVAL["full"]``: 50 training films,
30 test films, the paper's 66 candidates per film, 5 training seeds) on the stored sweep's data seeds,
written to ``notebooks/results/regen_full_sizes.json`` — the same as
``python -m neurips25.regen --full-sizes``."""
import sys

from .regen import main

if __name__ == "__main__":
    main(["--full-sizes", *sys.argv[1:]])
