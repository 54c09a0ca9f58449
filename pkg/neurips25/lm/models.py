"""Tiny decoder-only transformers from Hugging Face configs, and the one-line swap to a real checkpoint.

``tiny_model(tok)`` builds a GPT-2- or Llama-style ``*ForCausalLM`` from scratch, sized for a CPU
(2 layers, width 128: ~0.5 M parameters plus embeddings). ``pretrained("gpt2")`` loads a real
checkpoint and its tokenizer through the same ``transformers`` classes, so every helper of
``neurips25.lm`` (training, generation, scoring, LoRA) works on both unchanged.
"""
from __future__ import annotations

import torch

from ..runtime import check_int
from ._hf import hf_quiet

__all__ = ["ARCHS", "tiny_model", "pretrained", "count_parameters", "context_length"]

ARCHS = ("gpt2", "llama")


def tiny_model(tokenizer, n_layer: int = 2, n_embd: int = 128, n_head: int = 4, n_positions: int = 128, *,
               arch: str = "gpt2", dropout: float = 0.0, seed: int | None = 0):
    """A freshly initialised decoder-only LM whose vocabulary matches ``tokenizer``.

    Args:
        tokenizer: from ``build_tokenizer`` (or any HF tokenizer); sets ``vocab_size`` and the
            pad/bos/eos ids of the config.
        n_layer, n_embd, n_head: depth, width and heads (``n_embd`` divisible by ``n_head``).
        n_positions: the context length; longer inputs raise ``ValueError`` in the helpers.
        arch: "gpt2" (learned positions, LayerNorm, GELU MLP) or "llama" (RoPE, RMSNorm, SwiGLU,
            tied embeddings here to keep it small).
        dropout: residual/attention/embedding dropout (0 for the deterministic tiny runs).
        seed: seeds the initialisation (``None``: use the global RNG state as is).

    Returns:
        ``GPT2LMHeadModel`` or ``LlamaForCausalLM`` in eval mode on the CPU.
    """
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
    n_layer, n_embd = check_int(n_layer, "n_layer"), check_int(n_embd, "n_embd")
    n_head, n_positions = check_int(n_head, "n_head"), check_int(n_positions, "n_positions")
    if n_embd % n_head:
        raise ValueError(f"n_embd ({n_embd}) must be divisible by n_head ({n_head})")
    if arch == "llama" and (n_embd // n_head) % 2:
        raise ValueError(f"arch='llama' needs an even head size for RoPE; n_embd/n_head = {n_embd // n_head}")
    if not 0.0 <= float(dropout) < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
    if not hasattr(tokenizer, "pad_token_id") or not hasattr(tokenizer, "__len__"):
        raise TypeError(f"tokenizer must be a transformers tokenizer (e.g. from build_tokenizer), got {type(tokenizer).__name__}")
    with hf_quiet():
        from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

        ids = dict(pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                   eos_token_id=tokenizer.eos_token_id)
        if arch == "gpt2":
            cfg = GPT2Config(vocab_size=len(tokenizer), n_positions=n_positions, n_embd=n_embd, n_layer=n_layer,
                             n_head=n_head, resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout, **ids)
            cls = GPT2LMHeadModel
        else:
            cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=n_embd, intermediate_size=4 * n_embd,
                              num_hidden_layers=n_layer, num_attention_heads=n_head, num_key_value_heads=n_head,
                              max_position_embeddings=n_positions, attention_dropout=dropout,
                              tie_word_embeddings=True, **ids)
            cls = LlamaForCausalLM
        # sdpa and eager agree to float precision; sdpa is the faster on CPU and GPU.
        cfg._attn_implementation = "sdpa"
        if seed is not None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                model = cls(cfg)
        else:
            model = cls(cfg)
    return model.eval()


def _dtype_kwarg() -> str:
    """``from_pretrained``'s dtype argument: ``dtype`` since transformers 4.56, ``torch_dtype`` before
    (the package allows transformers >= 4.40)."""
    import transformers
    from packaging.version import Version

    return "dtype" if Version(transformers.__version__) >= Version("4.56") else "torch_dtype"


def pretrained(name: str, *, dtype: torch.dtype | str | None = None, device: str | torch.device | None = None):
    """Load a real checkpoint and its tokenizer: ``model, tok = pretrained("gpt2")``.

    ``name`` is anything ``from_pretrained`` takes: a Hub id, or a local folder written by
    ``save_pretrained`` (which is how the tests exercise this path offline).

    The one-line swap for Colab users with internet (and ideally a GPU): every ``neurips25.lm``
    helper takes the returned pair in place of ``tiny_model(...)`` / ``build_tokenizer(...)``.
    A Hub id downloads, so the stored notebooks never pass one (offline builds set
    ``HF_HUB_OFFLINE=1``); the tests load a tiny GPT-2-style folder written by ``save_pretrained``. Small causal LMs that fit a free Colab GPU:
    ``"gpt2"``, ``"HuggingFaceTB/SmolLM2-135M"``, ``"Qwen/Qwen2.5-0.5B"``.

    A missing pad token is set to EOS (common for decoder-only checkpoints).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a Hugging Face model id such as 'gpt2', got {name!r}")
    with hf_quiet():
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(name)
        kw = {} if dtype is None else {_dtype_kwarg(): dtype}
        model = AutoModelForCausalLM.from_pretrained(name, **kw)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if model.config.pad_token_id is None:
        model.config.pad_token_id = tok.pad_token_id
    if device is not None:
        model = model.to(device)
    return model.eval(), tok


def count_parameters(model: torch.nn.Module) -> dict[str, int]:
    """``{"total", "trainable", "embedding"}`` parameter counts (tied weights counted once)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    params = list(model.parameters())  # .parameters() already skips tied duplicates
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    return {
        "total": sum(p.numel() for p in params),
        "trainable": sum(p.numel() for p in params if p.requires_grad),
        "embedding": 0 if emb is None else emb.weight.numel(),
    }


def context_length(model) -> int:
    """The model's maximum sequence length (``n_positions`` / ``max_position_embeddings``)."""
    cfg = getattr(model, "config", None)
    for key in ("n_positions", "max_position_embeddings"):
        if cfg is not None and getattr(cfg, key, None):
            return int(getattr(cfg, key))
    raise TypeError(f"model must be a transformers causal LM with a config, got {type(model).__name__}")
