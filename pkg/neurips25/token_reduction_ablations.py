"""``python -m neurips25.token_reduction_ablations [--scale small|full] [--out PATH] [--seeds ...]``: the
paper's two analyses measured training-free on the token_reduction chapter's shipped 64-token ViTs,
written to ``notebooks/results/token_reduction_ablations.json`` — the same as ``python -m
neurips25.token_reduction --model vit64 --paper-ablations`` (see
:func:`neurips25.token_reduction.vit64.main_paper_ablations`)."""
import sys

from .token_reduction import main

if __name__ == "__main__":
    main(["--model", "vit64", "--paper-ablations", *sys.argv[1:]])
