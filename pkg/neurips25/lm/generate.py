"""Inference helpers: sampling, continuation log-probabilities, multiple-choice scoring.

A transparent decoding loop (nanoGPT style) rather than ``model.generate``: each step is one forward
pass on the new token with the KV cache (or on the whole prefix without it), so chapters can read
the logits and the last hidden state at every generated position (R2R's router needs them) and the
seeded sampler is the same on every transformers version.

Batches of prompts of different lengths are **left-padded** with explicit ``position_ids``
(positions count real tokens only), so a prompt gives the same continuation alone or in a batch.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Sequence

import torch
import torch.nn.functional as F

from ..runtime import check_int
from .models import context_length

__all__ = ["Generation", "encode_batch", "generate", "continuation_logprobs", "score_choices", "next_token_logits",
           "cache_kwarg", "output_cache"]


def _base(model):
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def cache_kwarg(model) -> str:
    """The name of the KV-cache argument of ``model.forward``: transformers >= 5.2x renamed
    ``past_key_values`` to ``cache``; hand-written decoding loops use this to work with either."""
    params = inspect.signature(_base(model).forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def output_cache(out):
    """The KV cache a forward pass returned (under either name, see :func:`cache_kwarg`)."""
    return out["cache"] if "cache" in out else out["past_key_values"]


def _model_device(model) -> torch.device:
    return next(model.parameters()).device


def _as_list(x, name: str) -> list[str]:
    if isinstance(x, str):
        return [x]
    if not isinstance(x, (list, tuple)) or not x:
        raise ValueError(f"{name} must be a string or a non-empty list of strings, got {x!r}")
    if not all(isinstance(s, str) for s in x):
        raise TypeError(f"{name} must contain only strings")
    return list(x)


def _encode(tokenizer, text: str, add_bos: bool) -> list[int]:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return ([tokenizer.bos_token_id] if add_bos and tokenizer.bos_token_id is not None else []) + list(ids)


def encode_batch(tokenizer, texts: Sequence[str], *, add_bos: bool = True, side: str = "left",
                 max_length: int | None = None):
    """Tokenise and pad ``texts`` → ``(input_ids, attention_mask, position_ids)``, each ``(B, T)``.

    ``side="left"`` for generation (new tokens are appended on the right), ``"right"`` for scoring.
    Raises ``ValueError`` if a sequence is longer than ``max_length`` (the model's context).
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    seqs = [_encode(tokenizer, t, add_bos) for t in _as_list(texts, "texts")]
    if any(len(s) == 0 for s in seqs):
        raise ValueError("an empty prompt with add_bos=False has no token to condition on")
    T = max(len(s) for s in seqs)
    if max_length is not None and T > max_length:
        i = max(range(len(seqs)), key=lambda j: len(seqs[j]))
        raise ValueError(f"sequence {i} has {T} tokens, longer than the model's context of {max_length}")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = torch.full((len(seqs), T), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), T), dtype=torch.long)
    for i, s in enumerate(seqs):
        sl = slice(T - len(s), T) if side == "left" else slice(0, len(s))
        ids[i, sl] = torch.tensor(s)
        mask[i, sl] = 1
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids, mask, pos


@dataclass
class Generation:
    """What ``generate`` returns. ``B`` prompts, ``N`` decoding steps actually run.

    Attributes:
        texts: the decoded continuations (special tokens removed, stopped at EOS).
        tokens: the generated ids per prompt, up to and including EOS when it was produced.
        sequences: ``(B, T_prompt + N)`` prompt (left-padded) followed by the generated ids.
        logits: ``(B, N, V)`` the next-token logits that produced each generated token
            (before temperature/top-k), or ``None`` unless ``return_logits=True``.
        hidden: ``(B, N, d)`` the last hidden state (the LM head's input) at those positions, or
            ``None`` unless ``return_hidden=True``.
        lengths: number of generated tokens per prompt (positions beyond are padding).
    """

    texts: list[str]
    tokens: list[list[int]]
    sequences: torch.Tensor
    lengths: torch.Tensor
    logits: torch.Tensor | None = None
    hidden: torch.Tensor | None = field(default=None, repr=False)


def _sample(logits: torch.Tensor, temperature: float, top_k: int | None, gen: torch.Generator | None) -> torch.Tensor:
    if temperature == 0.0:
        return logits.argmax(-1)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits.float(), dim=-1)
    return torch.multinomial(probs, 1, generator=gen).squeeze(-1)


@torch.no_grad()
def generate(model, tokenizer, prompts: str | Sequence[str], max_new_tokens: int = 32, *,
             temperature: float = 0.0, top_k: int | None = None, seed: int | None = 0, add_bos: bool = True,
             stop_at_eos: bool = True, use_cache: bool = True, return_logits: bool = False,
             return_hidden: bool = False) -> Generation:
    """Batched decoding: greedy (``temperature=0``) or sampling with temperature and top-k.

    Sampling uses its own ``torch.Generator`` seeded with ``seed``, so the same call gives the same
    text regardless of the global RNG. ``use_cache=False`` recomputes the whole prefix each step (the
    reference the KV-cache path is tested against). Prompts longer than the context, or a prompt plus
    ``max_new_tokens`` beyond it, raise ``ValueError``.
    """
    prompts = _as_list(prompts, "prompts")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens")
    if not isinstance(temperature, (int, float)) or temperature < 0:
        raise ValueError(f"temperature must be a float >= 0 (0 = greedy), got {temperature!r}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be None or a positive int, got {top_k!r}")
    n_ctx = context_length(model)
    ids, mask, pos = encode_batch(tokenizer, prompts, add_bos=add_bos, side="left", max_length=n_ctx)
    if ids.shape[1] + max_new_tokens > n_ctx:
        raise ValueError(f"prompt length {ids.shape[1]} + max_new_tokens {max_new_tokens} exceeds the model's "
                         f"context of {n_ctx}; shorten the prompt or lower max_new_tokens")
    dev = _model_device(model)
    ids, mask, pos = ids.to(dev), mask.to(dev), pos.to(dev)
    gen = None
    if temperature > 0:
        gen = torch.Generator(device=dev)
        gen.manual_seed(0 if seed is None else int(seed))
    was_training = model.training
    model.eval()
    ckw = cache_kwarg(model)
    B = ids.shape[0]
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    done = torch.zeros(B, dtype=torch.bool, device=dev)
    lengths = torch.zeros(B, dtype=torch.long, device=dev)
    all_logits, all_hidden, new_tokens = [], [], []
    cache = None
    step_ids, step_pos = ids, pos
    try:
        for _ in range(max_new_tokens):
            kw = dict(input_ids=step_ids, attention_mask=mask, position_ids=step_pos,
                      output_hidden_states=return_hidden, use_cache=use_cache)
            if use_cache and cache is not None:
                kw[ckw] = cache
            out = model(**kw)
            if use_cache:
                cache = output_cache(out)
            logits = out.logits[:, -1, :]
            nxt = _sample(logits, float(temperature), top_k, gen)
            nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
            lengths += (~done).long()
            if return_logits:
                all_logits.append(logits.float())
            if return_hidden:
                all_hidden.append(out.hidden_states[-1][:, -1, :].float())
            new_tokens.append(nxt)
            if stop_at_eos and eos is not None:
                done = done | (nxt == eos)
            ids = torch.cat([ids, nxt[:, None]], 1)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            pos = torch.cat([pos, pos[:, -1:] + 1], 1)
            step_ids, step_pos = (nxt[:, None], pos[:, -1:]) if use_cache else (ids, pos)
            if bool(done.all()):
                break
    finally:
        model.train(was_training)
    gen_ids = torch.stack(new_tokens, 1)
    tokens = [gen_ids[i, : int(lengths[i])].tolist() for i in range(B)]
    texts = [tokenizer.decode(t, skip_special_tokens=True) for t in tokens]
    return Generation(texts=texts, tokens=tokens, sequences=ids, lengths=lengths.cpu(),
                      logits=torch.stack(all_logits, 1) if return_logits else None,
                      hidden=torch.stack(all_hidden, 1) if return_hidden else None)


@torch.no_grad()
def continuation_logprobs(model, tokenizer, prompts: str | Sequence[str], continuations: str | Sequence[str], *,
                          add_bos: bool = True) -> list[torch.Tensor]:
    r"""Per-token log-probabilities $\log p(c_t \mid \text{prompt}, c_{<t})$ of each continuation.

    Prompt and continuation are tokenised separately and concatenated, so the continuation's tokens
    are exactly ``tokenizer(continuation)``. Returns one 1-D tensor per pair (sum it for the
    sequence log-likelihood, average it for a length-normalised score). One batched forward pass.
    """
    prompts = _as_list(prompts, "prompts")
    conts = _as_list(continuations, "continuations")
    if len(prompts) != len(conts):
        raise ValueError(f"prompts and continuations must have the same length, got {len(prompts)} and {len(conts)}")
    p_ids = [_encode(tokenizer, p, add_bos) for p in prompts]
    c_ids = [_encode(tokenizer, c, False) for c in conts]
    if any(len(p) == 0 for p in p_ids):
        raise ValueError("an empty prompt with add_bos=False has no token to condition the continuation on")
    if any(len(c) == 0 for c in c_ids):
        raise ValueError("continuations must be non-empty strings (an empty one has no tokens to score)")
    n_ctx = context_length(model)
    seqs = [p + c for p, c in zip(p_ids, c_ids)]
    T = max(len(s) for s in seqs)
    if T > n_ctx:
        raise ValueError(f"prompt + continuation has {T} tokens, longer than the model's context of {n_ctx}")
    dev = _model_device(model)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = torch.full((len(seqs), T), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    was_training = model.training
    model.eval()
    try:
        logits = model(input_ids=ids.to(dev), attention_mask=mask.to(dev)).logits.float()
    finally:
        model.train(was_training)
    logp = torch.log_softmax(logits, -1).cpu()
    res = []
    for i, (p, c) in enumerate(zip(p_ids, c_ids)):
        # token at position t is predicted by the logits at t - 1
        positions = torch.arange(len(p) - 1, len(p) + len(c) - 1)
        res.append(logp[i, positions, torch.tensor(c)])
    return res


@torch.no_grad()
def next_token_logits(model, tokenizer, prompts: str | Sequence[str], *, add_bos: bool = True) -> torch.Tensor:
    """``(B, V)`` logits of the token that follows each prompt (right-padded batch, exact)."""
    ids, mask, _ = encode_batch(tokenizer, prompts, add_bos=add_bos, side="right", max_length=context_length(model))
    dev = _model_device(model)
    was_training = model.training
    model.eval()
    try:
        logits = model(input_ids=ids.to(dev), attention_mask=mask.to(dev)).logits.float().cpu()
    finally:
        model.train(was_training)
    last = mask.sum(1) - 1
    return logits[torch.arange(len(last)), last]


def score_choices(model, tokenizer, prompts: str | Sequence[str], choices: Sequence[str] | Sequence[Sequence[str]], *,
                  add_bos: bool = True) -> torch.Tensor:
    """Multiple-choice scoring by restricted logits: ``(B, C)`` log-probabilities over the choices.

    The next-token logits after each prompt are restricted to the tokens of the ``C`` choices and
    renormalised (``log_softmax``); ``.argmax(-1)`` is the predicted choice. ``choices`` is one list
    shared by all prompts (e.g. ``["A", "B", "C", "D"]``) or one list per prompt (same ``C``). Each
    choice must be a single token; score multi-token answers with ``continuation_logprobs``.
    """
    prompts = _as_list(prompts, "prompts")
    if isinstance(choices, str) or not choices:
        raise ValueError(f"choices must be a non-empty list of strings (or of lists), got {choices!r}")
    per_prompt = [list(c) for c in choices] if not isinstance(choices[0], str) else [list(choices)] * len(prompts)
    if len(per_prompt) != len(prompts):
        raise ValueError(f"need one choice list per prompt: {len(per_prompt)} lists for {len(prompts)} prompts")
    C = len(per_prompt[0])
    if C < 2 or any(len(c) != C for c in per_prompt):
        raise ValueError("every prompt needs the same number (>= 2) of choices")
    tok_ids = []
    for cs in per_prompt:
        row = []
        for c in cs:
            t = tokenizer(c, add_special_tokens=False)["input_ids"] if isinstance(c, str) else None
            if t is None or len(t) != 1:
                raise ValueError(f"choice {c!r} is not a single token ({t}); use continuation_logprobs for "
                                 "multi-token answers")
            row.append(t[0])
        tok_ids.append(row)
    logits = next_token_logits(model, tokenizer, prompts, add_bos=add_bos)
    restricted = logits.gather(1, torch.tensor(tok_ids))
    return F.log_softmax(restricted, -1)
