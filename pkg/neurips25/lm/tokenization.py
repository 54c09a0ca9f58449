"""Tokenizers for tiny language models, built on Hugging Face ``tokenizers``.

``build_tokenizer(kind, corpus, ...)`` returns a ``transformers.PreTrainedTokenizerFast`` so that
the tiny models of Part V and a real checkpoint's tokenizer are used through the same interface
(``tok(texts)``, ``tok.decode(ids)``, ``tok.pad_token_id``, ...).

Every kind puts the special tokens first, in a fixed order, so their ids do not depend on the corpus:
``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3, then the chapter's own markers
(``special_tokens=["<sep>", "<ans>"]`` → 4, 5). Plain ``tok(text)`` adds no BOS/EOS; the helpers in
``neurips25.lm`` add them where they document it.

========  ====================================================  =================================
kind      vocabulary                                            exact ``decode(encode(s)) == s``
========  ====================================================  =================================
byte      the 256 bytes (GPT-2's byte-to-unicode map)            every string
char      the characters of ``corpus``                           strings over those characters
word      whitespace-separated words of ``corpus``               in-vocabulary words, single spaces
bpe       byte-level BPE trained on ``corpus`` (GPT-2 style)     every string
========  ====================================================  =================================
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from ..runtime import check_int

__all__ = ["KINDS", "BASE_SPECIALS", "build_tokenizer"]

KINDS = ("byte", "char", "word", "bpe")
# Fixed ids: pad 0, bos 1, eos 2, unk 3 (the byte and bpe kinds never emit <unk>, but keep its id).
BASE_SPECIALS = {"pad_token": "<pad>", "bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>"}


def _check_corpus(corpus, kind: str) -> list[str]:
    if corpus is None:
        raise ValueError(f"kind={kind!r} learns its vocabulary from corpus; pass corpus=[...] (a list of strings)")
    if isinstance(corpus, str):
        raise TypeError("corpus must be a list of strings, not one string (wrap it: corpus=[text])")
    corpus = list(corpus)
    if not all(isinstance(t, str) for t in corpus):
        raise TypeError("corpus must contain only strings")
    if not any(t for t in corpus):
        raise ValueError("corpus is empty (no non-empty strings); a tokenizer cannot learn a vocabulary from it")
    return corpus


def build_tokenizer(kind: str = "byte", corpus: Iterable[str] | None = None, *, vocab_size: int = 512,
                    special_tokens: Sequence[str] = (), min_frequency: int = 1):
    """Build a ``PreTrainedTokenizerFast`` of the given ``kind`` ("byte", "char", "word" or "bpe").

    Args:
        kind: the scheme (see the module table). "byte" needs no corpus; the others learn from it.
        corpus: list of training strings (for "char", "word", "bpe").
        vocab_size: size cap for "word" (most frequent words kept) and the target size for "bpe"
            (including the 256 bytes and the special tokens). Ignored by "byte" and "char".
        special_tokens: extra markers the chapter needs, e.g. ``["<sep>", "<ans>"]``; never split, ids
            4, 5, ... in the given order, and removed by ``decode(..., skip_special_tokens=True)``.
        min_frequency: words/merges seen fewer times are dropped ("word", "bpe").

    Returns:
        a ``transformers.PreTrainedTokenizerFast`` with ``pad/bos/eos/unk`` tokens set and
        ``clean_up_tokenization_spaces=False`` (so round trips stay exact).
    """
    from transformers import PreTrainedTokenizerFast

    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a list of strings, e.g. ['<sep>'], not one string")
    extras = list(special_tokens)
    if not all(isinstance(t, str) and t for t in extras):
        raise TypeError(f"special_tokens must be non-empty strings, got {extras!r}")
    specials = list(BASE_SPECIALS.values())
    dup = [t for t in extras if t in specials or extras.count(t) > 1]
    if dup:
        raise ValueError(f"special_tokens repeats or shadows a built-in special token: {sorted(set(dup))}")
    specials += extras
    vocab_size = check_int(vocab_size, "vocab_size")
    min_frequency = check_int(min_frequency, "min_frequency")

    if kind == "byte":
        if corpus is not None:
            _check_corpus(corpus, kind)  # validated for consistency, but the vocabulary is fixed
        alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
        vocab = {t: i for i, t in enumerate(specials + alphabet)}
        tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
        # use_regex=False: no GPT-2 word splitting; every byte is one token.
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        tok.decoder = decoders.ByteLevel()
    elif kind == "char":
        corpus = _check_corpus(corpus, kind)
        chars = sorted(set("".join(corpus)) - set(specials))
        vocab = {t: i for i, t in enumerate(specials + chars)}
        # BPE without merges = a character model; no pre-tokenizer, so spaces are characters too.
        tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>", fuse_unk=False))
        tok.decoder = decoders.Fuse()
    elif kind == "word":
        corpus = _check_corpus(corpus, kind)
        counts = Counter(w for t in corpus for w in t.split())
        words = [w for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
                 if c >= min_frequency and w not in specials]
        words = words[: max(vocab_size - len(specials), 0)]
        vocab = {t: i for i, t in enumerate(specials + words)}
        tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        # No decoder: tokenizers joins word tokens with single spaces.
    else:  # bpe
        corpus = _check_corpus(corpus, kind)
        min_size = len(specials) + 256
        if vocab_size < min_size:
            raise ValueError(f"vocab_size for kind='bpe' must be >= {min_size} (256 bytes + {len(specials)} "
                             f"special tokens), got {vocab_size}")
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, show_progress=False,
                                      special_tokens=specials,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(corpus, trainer=trainer)

    hf = PreTrainedTokenizerFast(tokenizer_object=tok, clean_up_tokenization_spaces=False,
                                 extra_special_tokens=extras, model_max_length=10**9, **BASE_SPECIALS)
    for i, t in enumerate(specials):  # the fixed-id contract the chapters rely on
        assert hf.convert_tokens_to_ids(t) == i, (t, i)
    hf.scheme = kind  # remembered for reprs and notebooks
    return hf
