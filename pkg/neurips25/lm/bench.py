"""Throughput of the toolkit: ``python -m neurips25.lm.bench [--steps 40] [--device cpu|cuda]``.

Trains a 2-layer, width-128 GPT-2-style model (byte tokenizer, 128-token blocks, batch 32) for the
same number of optimizer steps twice — through ``train_lm`` (Lightning) and through a plain PyTorch
loop over the same data, loss, optimizer and schedule — and prints training tokens/second for both,
so Lightning's overhead is measured, not assumed. Then generation tokens/second for ``generate``
with and without the KV cache, and for ``model.generate`` from transformers as a reference.
Timings exclude a short warm-up. Numbers depend on the machine and its load: run it alone.
"""
from __future__ import annotations

import argparse
import time

import torch

from neurips25.runtime import device as pick_device
from neurips25.runtime import seed_everything

from . import build_tokenizer, default_grammar, generate, tiny_model, train_lm
from .train import TextDataModule, lm_loss, warmup_cosine


def _plain_loop(model, dm: TextDataModule, steps: int, lr: float, warmup: int, dev) -> float:
    """The same work as ``train_lm`` without Lightning: returns seconds for ``steps`` steps."""
    model.to(dev).train()
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: warmup_cosine(s, warmup=warmup, total=steps))
    it, step = iter(dm.train_dataloader()), 0
    if dev.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    while step < steps:
        try:
            batch = next(it)
        except StopIteration:
            it = iter(dm.train_dataloader())
            continue
        batch = {k: v.to(dev) for k, v in batch.items()}
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        loss = lm_loss(logits, batch["input_ids"], batch["loss_mask"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        step += 1
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40, help="timed optimizer steps per trainer")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--gen-batch", type=int, default=16)
    ap.add_argument("--device", default=None, choices=[None, "cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=None,
                    help="torch intra-op threads (default: torch's); 1 is faster on a loaded machine")
    a = ap.parse_args(argv)
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    seed_everything(0)
    dev = pick_device(a.device)
    texts = default_grammar().sample(4000, seed=0)
    tok = build_tokenizer("byte")
    dm = TextDataModule(texts, tok, block_size=a.block, batch_size=a.batch, mode="pack")
    tokens = a.steps * a.batch * a.block
    accel = "gpu" if dev.type == "cuda" else "cpu"
    res: dict = {"device": str(dev), "threads": torch.get_num_threads(), "steps": a.steps,
                 "tokens_per_step": a.batch * a.block}

    # warm-up (allocator, kernels, imports), then Lightning, then the plain loop on a fresh model
    train_lm(tiny_model(tok, 2, 128, 4, a.block), tok, texts, steps=3, mode="pack", block_size=a.block,
             batch_size=a.batch, accelerator=accel)
    model = tiny_model(tok, 2, 128, 4, a.block, seed=0)
    t0 = time.perf_counter()
    train_lm(model, tok, texts, steps=a.steps, mode="pack", block_size=a.block, batch_size=a.batch,
             accelerator=accel)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    res["lightning_s"] = time.perf_counter() - t0
    res["plain_s"] = _plain_loop(tiny_model(tok, 2, 128, 4, a.block, seed=0), dm, a.steps, 3e-3, 20, dev)
    res["lightning_tok_s"] = tokens / res["lightning_s"]
    res["plain_tok_s"] = tokens / res["plain_s"]
    res["lightning_overhead"] = res["lightning_s"] / res["plain_s"] - 1

    model = model.to(dev).eval()
    prompts = [t[:20] for t in texts[: a.gen_batch]]
    n_new = a.gen_batch * a.new_tokens
    for name, kw in [("gen_cache", dict(use_cache=True)), ("gen_nocache", dict(use_cache=False))]:
        generate(model, tok, prompts, 4, **kw)  # warm-up
        t0 = time.perf_counter()
        generate(model, tok, prompts, a.new_tokens, temperature=1.0, top_k=50, stop_at_eos=False, **kw)
        res[name + "_tok_s"] = n_new / (time.perf_counter() - t0)
    from .generate import encode_batch

    ids, mask, _ = encode_batch(tok, prompts, side="left")
    ids, mask = ids.to(dev), mask.to(dev)
    with torch.no_grad():
        model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=4, do_sample=False, pad_token_id=0)
        t0 = time.perf_counter()
        model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=a.new_tokens, min_new_tokens=a.new_tokens,
                       do_sample=True, top_k=50, pad_token_id=0)
    res["hf_generate_tok_s"] = n_new / (time.perf_counter() - t0)

    print(f"neurips25.lm.bench — 2-layer width-128 GPT-2 ({sum(p.numel() for p in model.parameters()) / 1e6:.2f} M "
          f"params), device={res['device']}, torch threads={res['threads']}")
    print(f"training, {a.steps} steps x {a.batch} x {a.block} tokens:")
    print(f"  Lightning (train_lm)   {res['lightning_tok_s']:10,.0f} tok/s   ({res['lightning_s']:.2f} s)")
    print(f"  plain PyTorch loop     {res['plain_tok_s']:10,.0f} tok/s   ({res['plain_s']:.2f} s)")
    print(f"  Lightning overhead     {100 * res['lightning_overhead']:+.1f} %  (includes Trainer setup)")
    print(f"generation, batch {a.gen_batch} x {a.new_tokens} new tokens (top-k sampling):")
    print(f"  generate, KV cache     {res['gen_cache_tok_s']:10,.0f} tok/s")
    print(f"  generate, no cache     {res['gen_nocache_tok_s']:10,.0f} tok/s")
    print(f"  transformers .generate {res['hf_generate_tok_s']:10,.0f} tok/s")
    return res


if __name__ == "__main__":
    main()
