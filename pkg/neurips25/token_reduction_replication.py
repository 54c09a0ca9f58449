"""``python -m neurips25.token_reduction_replication [--scale small|full] [--out PATH] [--seeds ...]``: the
token_reduction chapter's fine-tuned comparison (ours, EViT, ToMe) on 30 fresh seeds, written to
``notebooks/results/token_reduction_replication.json`` — the same as ``python -m neurips25.token_reduction
--model vit64 --replication`` (see :func:`neurips25.token_reduction.vit64.main_replication`)."""
import sys

from .token_reduction import main

if __name__ == "__main__":
    main(["--model", "vit64", "--replication", *sys.argv[1:]])
