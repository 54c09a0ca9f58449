"""``python -m neurips25.token_reduction_early [--scale small|full] [--out PATH] [--seeds ...]``: the
token_reduction chapter's replication seeds with the paper's budget started at block 0 (training-free and
fine-tuned: ours, EViT, ToMe, and random pruning training-free), written to
``notebooks/results/token_reduction_early.json`` — the same as ``python -m neurips25.token_reduction
--model vit64 --replication --early`` (see :func:`neurips25.token_reduction.vit64.main_replication`)."""
import sys

from .token_reduction import main

if __name__ == "__main__":
    main(["--model", "vit64", "--replication", "--early", *sys.argv[1:]])
