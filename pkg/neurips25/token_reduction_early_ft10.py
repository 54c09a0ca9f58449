"""``python -m neurips25.token_reduction_early_ft10 [--scale small|full] [--out PATH] [--seeds ...]``: the
token_reduction chapter's block-0 study fine-tuned 10 epochs instead of the protocol's 2 (the stored runs:
``--seeds 3 4 ... 14``), written to ``notebooks/results/token_reduction_early_ft10.json`` — the same as
``python -m neurips25.token_reduction --model vit64 --replication --early --ft-epochs 10``."""
import sys

from .token_reduction import main

if __name__ == "__main__":
    main(["--model", "vit64", "--replication", "--early", "--ft-epochs", "10", *sys.argv[1:]])
