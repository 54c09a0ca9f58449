"""``neurips25.lm`` — tiny language models for Part V, on Hugging Face ``transformers`` + Lightning.

Small decoder-only transformers trained from scratch on a CPU in seconds stand in for LLMs; the same
calls run a real checkpoint (``pretrained("gpt2")``) in Colab. A task model in a few lines::

    from neurips25.lm import build_tokenizer, tiny_model, train_lm, generate, default_grammar
    texts = default_grammar().sample(2000, seed=0)
    tok = build_tokenizer("word", texts, special_tokens=["<sep>"])
    model = tiny_model(tok, n_layer=2, n_embd=128, n_head=4, n_positions=64)
    run = train_lm(model, tok, texts, steps=300, lr=3e-3, batch_size=32)   # run.history: losses
    generate(model, tok, ["the red"], max_new_tokens=10).texts

API (every function validates its inputs and raises ``ValueError``/``TypeError`` naming the argument):

Tokenizers (``tokenization``): fixed special ids ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3, extras 4, ...
    ``build_tokenizer(kind, corpus=None, *, vocab_size=512, special_tokens=(), min_frequency=1)``
        → ``PreTrainedTokenizerFast``; kind ∈ "byte" | "char" | "word" | "bpe".
Models (``models``):
    ``tiny_model(tokenizer, n_layer=2, n_embd=128, n_head=4, n_positions=128, *, arch="gpt2"|"llama", dropout=0, seed=0)``
    ``pretrained(name, *, dtype=None, device=None)`` → ``(model, tokenizer)`` from the Hub (never offline).
    ``count_parameters(model)``, ``context_length(model)``.
Training (``train``): masked next-token cross-entropy, AdamW, warmup + cosine.
    ``train_lm(model, tokenizer, data, *, steps=None | epochs=None, lr=3e-3, warmup=20, batch_size=32,
    block_size=None, mask=None, mode="pad"|"pack", val_data=None, seed=0, **trainer_kwargs)`` → ``CausalLM``.
    ``TextDataModule(data, tokenizer, block_size, batch_size, *, mask=None, mode="pad", val_data=None)``;
    data = strings | ``(prompt, answer)`` pairs (``mask="answer"``: loss on the answer only) | token-id lists.
    ``CausalLM(model, lr, warmup, *, weight_decay, betas, min_lr_ratio, total_steps)`` (LightningModule),
    ``lm_loss(logits, input_ids, loss_mask)``, ``warmup_cosine(step, warmup=, total=)``.
Inference (``generate``):
    ``generate(model, tok, prompts, max_new_tokens=32, *, temperature=0.0, top_k=None, seed=0,
    use_cache=True, return_logits=False, return_hidden=False)`` → ``Generation`` (texts, tokens,
    sequences, lengths, logits ``(B,N,V)``, hidden ``(B,N,d)``).
    ``continuation_logprobs(model, tok, prompts, continuations)`` → per-token log-probs (list of 1-D tensors).
    ``score_choices(model, tok, prompts, choices)`` → ``(B, C)`` log-probs over single-token choices.
    ``next_token_logits(model, tok, prompts)`` → ``(B, V)``; ``encode_batch(tok, texts, side=)``.
    Hand-written decoding loops: ``model(**{cache_kwarg(model): cache}, ...)``, ``output_cache(out)``.
Adapters (``lora``):
    ``add_lora(model, r=4, target_modules=None, *, alpha=None, dropout=0, seed=0)`` → ``PeftModel``
    (attention projections by default); ``lora_parameters(model)`` → ``{name: A or B}``;
    ``lora_counts(model)``; ``mask_lora_gradients(model, n_trainable, seed=0)``.
Synthetic text (``synthetic``):
    ``Grammar(lexicon, templates)`` with ``.sample(n, seed=, with_slots=)``, ``.split(n_train, n_val, n_test)``,
    ``.vocabulary``; ``default_grammar()``; ``arithmetic_pairs(n, max_value=20, op="+")``.
Benchmark: ``python -m neurips25.lm.bench`` (training and generation tokens/s, Lightning vs plain PyTorch).
"""
from ._hf import silence_hf

silence_hf()

from .generate import (  # noqa: E402
    Generation,
    cache_kwarg,
    continuation_logprobs,
    encode_batch,
    generate,
    next_token_logits,
    output_cache,
    score_choices,
)
from .lora import DEFAULT_TARGETS, add_lora, lora_counts, lora_parameters, mask_lora_gradients  # noqa: E402
from .models import ARCHS, context_length, count_parameters, pretrained, tiny_model  # noqa: E402
from .synthetic import Grammar, arithmetic_pairs, default_grammar  # noqa: E402
from .tokenization import BASE_SPECIALS, KINDS, build_tokenizer  # noqa: E402
from .train import CausalLM, TextDataModule, lm_loss, train_lm, warmup_cosine  # noqa: E402

__all__ = [
    "KINDS", "BASE_SPECIALS", "build_tokenizer",
    "ARCHS", "tiny_model", "pretrained", "count_parameters", "context_length",
    "CausalLM", "TextDataModule", "train_lm", "lm_loss", "warmup_cosine",
    "Generation", "generate", "continuation_logprobs", "score_choices", "next_token_logits", "encode_batch",
    "cache_kwarg", "output_cache",
    "DEFAULT_TARGETS", "add_lora", "lora_parameters", "lora_counts", "mask_lora_gradients",
    "Grammar", "default_grammar", "arithmetic_pairs",
]
