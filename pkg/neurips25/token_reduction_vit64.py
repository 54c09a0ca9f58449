"""``python -m neurips25.token_reduction_vit64 [--scale small|full] [--out PATH] [--seeds ...]``: trains
and ships the token_reduction chapter's 64-token ViT and writes ``notebooks/results/token_reduction_vit64.json``
— the same as ``python -m neurips25.token_reduction --model vit64`` (see :mod:`neurips25.token_reduction.vit64`)."""
import sys

from .token_reduction import main

if __name__ == "__main__":
    main(["--model", "vit64", *sys.argv[1:]])
