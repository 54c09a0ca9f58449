r"""LoRA adapters through ``peft``, with the adapter tensors exposed.

LoRA (Hu et al., 2022) freezes a weight $W_0 \in \mathbb R^{d_\text{out}\times d_\text{in}}$ and learns
$W = W_0 + \frac{\alpha}{r} B A$ with $A \in \mathbb R^{r\times d_\text{in}}$, $B \in \mathbb R^{d_\text{out}\times r}$,
$B = 0$ at the start, so each adapted matrix adds $r(d_\text{in} + d_\text{out})$ parameters.

``add_lora`` wraps the attention projections (GPT-2: ``attn.c_attn``, ``attn.c_proj``; Llama:
``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``); ``lora_parameters`` returns the ``A``/``B`` tensors by
name, and ``mask_lora_gradients`` trains only a random subset of their entries (for chapters that
study how few parameters suffice).
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..runtime import check_int
from ._hf import hf_quiet

__all__ = ["DEFAULT_TARGETS", "add_lora", "lora_parameters", "lora_counts", "mask_lora_gradients"]

DEFAULT_TARGETS = {"gpt2": ["attn.c_attn", "attn.c_proj"], "llama": ["q_proj", "k_proj", "v_proj", "o_proj"]}


def _model_type(model) -> str:
    return getattr(getattr(model, "config", None), "model_type", "")


def add_lora(model, r: int = 4, target_modules: Sequence[str] | None = None, *, alpha: float | None = None,
             dropout: float = 0.0, seed: int | None = 0):
    """Wrap ``model`` with LoRA adapters of rank ``r``; the base weights are frozen (not copied).

    Args:
        model: a ``transformers`` causal LM (``tiny_model`` or ``pretrained``).
        r: adapter rank.
        target_modules: module-name suffixes to adapt; default: the attention projections of the
            architecture (``DEFAULT_TARGETS``). Unknown architectures must name them.
        alpha: LoRA scaling numerator (default ``r``, i.e. scale 1).
        seed: seeds the ``A`` initialisation (``B`` starts at zero, so the output is unchanged).

    Returns:
        a ``peft.PeftModel`` usable everywhere a model is (``generate``, ``train_lm``, ...).
    """
    r = check_int(r, "r")
    mtype = _model_type(model)
    if target_modules is None:
        if mtype not in DEFAULT_TARGETS:
            raise ValueError(f"no default LoRA targets for model_type {mtype!r}; pass target_modules=[...]")
        target_modules = DEFAULT_TARGETS[mtype]
    if isinstance(target_modules, str) or not target_modules:
        raise ValueError(f"target_modules must be a non-empty list of module-name suffixes, got {target_modules!r}")
    names = [n for n, _ in model.named_modules()]
    missing = [t for t in target_modules if not any(n == t or n.endswith("." + t) for n in names)]
    if missing:
        raise ValueError(f"target_modules {missing} match no module of the model")
    with hf_quiet():
        from peft import LoraConfig, get_peft_model

        cfg = LoraConfig(r=r, lora_alpha=float(r if alpha is None else alpha), lora_dropout=dropout,
                         target_modules=list(target_modules), bias="none",
                         fan_in_fan_out=(mtype == "gpt2"))  # GPT-2 stores Conv1D weights transposed
        if seed is not None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                peft_model = get_peft_model(model, cfg)
        else:
            peft_model = get_peft_model(model, cfg)
    return peft_model


def lora_parameters(model) -> dict[str, torch.nn.Parameter]:
    """The LoRA ``A`` and ``B`` matrices by parameter name (``...lora_A.default.weight`` etc.)."""
    params = {n: p for n, p in model.named_parameters() if "lora_A" in n or "lora_B" in n}
    if not params:
        raise ValueError("model has no LoRA parameters; wrap it with add_lora first")
    return params


def lora_counts(model) -> dict[str, int]:
    """``{"lora", "trainable", "total", "expected"}`` where ``expected = Σ r (d_in + d_out)``."""
    lp = lora_parameters(model)
    expected = 0
    for n, p in lp.items():
        if "lora_A" in n:  # A: (r, d_in); its partner B: (d_out, r)
            b = lp[n.replace("lora_A", "lora_B")]
            expected += p.shape[0] * (p.shape[1] + b.shape[0])
    params = list(model.parameters())
    return {"lora": sum(p.numel() for p in lp.values()),
            "trainable": sum(p.numel() for p in params if p.requires_grad),
            "total": sum(p.numel() for p in params), "expected": expected}


def mask_lora_gradients(model, n_trainable: int, *, seed: int = 0) -> dict[str, torch.Tensor]:
    """Train exactly ``n_trainable`` LoRA entries, chosen uniformly at random over all A/B tensors.

    Registers gradient hooks that zero every other entry's gradient and returns the 0/1 masks by
    parameter name. With ``weight_decay=0`` (pass it to ``train_lm``) Adam leaves the masked
    entries exactly where they started. Remove with ``p._lora_mask_hook.remove()``.
    """
    lp = lora_parameters(model)
    total = sum(p.numel() for p in lp.values())
    if not isinstance(n_trainable, int) or not 0 <= n_trainable <= total:
        raise ValueError(f"n_trainable must be an int in [0, {total}], got {n_trainable!r}")
    g = torch.Generator().manual_seed(seed)
    chosen = torch.zeros(total)
    chosen[torch.randperm(total, generator=g)[:n_trainable]] = 1
    masks, offset = {}, 0
    for n, p in lp.items():
        m = chosen[offset:offset + p.numel()].view_as(p).to(p.device, p.dtype)
        offset += p.numel()
        masks[n] = m
        if hasattr(p, "_lora_mask_hook"):
            p._lora_mask_hook.remove()
        p._lora_mask_hook = p.register_hook(lambda grad, m=m: grad * m)
    return masks
