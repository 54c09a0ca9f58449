"""``python -m neurips25.tree_sb_treedsb [--scale small|full] [--out PATH]``: the tree_sb chapter's TreeDSB
(tree IPF) baseline sweep, written to ``notebooks/results/tree_sb_treedsb.json`` — the same as
``python -m neurips25.tree_sb --baseline treedsb`` (settings: ``neurips25.tree_sb.experiment.SWEEP_TREEDSB``)."""
import sys

from neurips25.tree_sb.experiment import main

if __name__ == "__main__":
    main(["--baseline", "treedsb", *sys.argv[1:]])
