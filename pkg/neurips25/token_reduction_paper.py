"""``python -m neurips25.token_reduction_paper [--scale small|full] [--out PATH] [--seeds ...]``: the paper's
own Fig. 5a/6 protocols on the token_reduction chapter's shipped 64-token ViTs, written to
``notebooks/results/token_reduction_paper.json`` — the same as ``python -m neurips25.token_reduction
--model vit64 --paper-protocols`` (see :func:`neurips25.token_reduction.vit64.main_paper_protocols`)."""
import sys

from .token_reduction import main

if __name__ == "__main__":
    main(["--model", "vit64", "--paper-protocols", *sys.argv[1:]])
