"""``python -m neurips25.leff_peft_study [--scale small|full] [--out PATH] [--jobs N]``: the leff
chapter's PEFT study (one shared learning rate for LEFF, FedLoRA and FedBitFit; FedLoRA at rank 1),
written to ``notebooks/results/leff_peft_study.json`` -- the same as ``python -m neurips25.leff
--peft-study`` (see :func:`neurips25.leff.peft_study`)."""
import sys

from .leff import main

if __name__ == "__main__":
    main(["--peft-study", *sys.argv[1:]])
