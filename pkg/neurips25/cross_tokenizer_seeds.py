"""The cross-tokenizer chapter's transfer, every method, on several seeds (``cross_tokenizer_seeds.json``).

The notebook runs seed 0 live, step by step; this replays the same pipeline for each seed (transfer set
``markov_corpus(seed=200 + seed)``, batch order ``seed``; the teacher, the held-out text and both
tokenizers' training text do not depend on it) and stores every method's held-out bits per byte and word
log-likelihood gap, so the chapter's per-seed statements, the matched ALM+SFT-vs-ULD comparison included,
rest on stored numbers. ``python -m neurips25.cross_tokenizer_seeds [--seeds 0 1 2] [--scale ...]``.
"""
from __future__ import annotations

import argparse
import sys

from . import cross_tokenizer as ct
from .runtime import cap

__all__ = ["SEEDS", "run_seed", "main"]

# The notebook's CFG (notebooks/cross_tokenizer.ipynb), without the one-line checkpoint option.
SEEDS = {
    "small": dict(seeds=[0, 1, 2], n_pretrain=3000, n_transfer=128, n_test=150, vocab_t=512, vocab_s=400,
                  n_embd=64, n_layer=2, teacher_steps=150, steps=150, lr=3e-3, tau=10.0, batch_size=32,
                  noise=0.8),
    "full": dict(seeds=[0, 1, 2], n_pretrain=20000, n_transfer=1024, n_test=1000, vocab_t=1024, vocab_s=800,
                 n_embd=256, n_layer=4, teacher_steps=2000, steps=500, lr=1e-3, tau=10.0, batch_size=64,
                 noise=0.8),
}


def run_seed(seed: int, cfg: dict) -> dict[str, dict[str, float]]:
    """Held-out ``{"bpb": ..., "gap": ...}`` per method (and for the teacher and the FVT student)."""
    from .lm import build_tokenizer, tiny_model, train_lm
    from .runtime import seed_everything

    seed_everything(0)  # as the notebook's setup cell
    pretrain = ct.markov_corpus(cap(cfg["n_pretrain"], 2000), seed=100)
    transfer = ct.markov_corpus(cfg["n_transfer"], seed=200 + seed, noise=cfg["noise"])
    test = ct.markov_corpus(cap(cfg["n_test"], 100), seed=300)
    tok_t = build_tokenizer("bpe", pretrain, vocab_size=cfg["vocab_t"])
    tok_s = build_tokenizer("bpe", transfer, vocab_size=cfg["vocab_s"])
    teacher = tiny_model(tok_t, n_layer=cfg["n_layer"], n_embd=cfg["n_embd"], n_head=4, n_positions=64, seed=0)
    train_lm(teacher, tok_t, pretrain, steps=cap(cfg["teacher_steps"]), lr=3e-3, batch_size=32)
    out = {"teacher": {"bpb": ct.bits_per_byte(teacher, tok_t, test), "gap": 0.0}}
    student0 = ct.transfer_model(teacher, tok_t, tok_s)
    out["fvt"] = {"bpb": ct.bits_per_byte(student0, tok_s, test),
                  "gap": ct.chunk_gap(teacher, tok_t, student0, tok_s, test)}
    data = ct.DistillData(transfer, teacher, tok_t, tok_s)
    for method in ct.METHODS:
        student = ct.transfer_model(teacher, tok_t, tok_s)
        ct.distill(student, data, method, steps=cfg["steps"], batch_size=cfg["batch_size"], tau=cfg["tau"],
                   lr=cfg["lr"], seed=seed)
        out[method] = {"bpb": ct.bits_per_byte(student, tok_s, test),
                       "gap": ct.chunk_gap(teacher, tok_t, student, tok_s, test)}
    return out


def main(argv: list[str] | None = None) -> None:
    """``python -m neurips25.cross_tokenizer_seeds``: every method on ``SEEDS[scale]["seeds"]``."""
    import torch

    from .results import add_scale_arguments, save_results

    p = argparse.ArgumentParser(prog="python -m neurips25.cross_tokenizer_seeds", description=main.__doc__)
    add_scale_arguments(p)
    p.add_argument("--seeds", type=int, nargs="+", default=None)
    a = p.parse_args(argv)
    torch.set_num_threads(1)  # tiny models: thread synchronisation costs more than it saves
    cfg = dict(SEEDS[a.scale])
    if a.seeds is not None:
        cfg["seeds"] = a.seeds
    runs = {}
    for s in cfg["seeds"][: cap(len(cfg["seeds"]), 1)]:
        runs[str(s)] = run_seed(s, cfg)
        print("seed", s, {m: round(r["bpb"], 3) for m, r in runs[str(s)].items()}, file=sys.stderr, flush=True)
    cmd = "python -m neurips25.cross_tokenizer_seeds " + " ".join(argv if argv is not None else sys.argv[1:])
    print(save_results("cross_tokenizer_seeds", {"settings": cfg, "runs": runs}, cmd.strip(), seed=0, path=a.out,
                       scale=a.scale))


if __name__ == "__main__":
    main()
