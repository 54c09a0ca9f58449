"""Seeded synthetic text: a templated grammar, disjoint splits, and a small arithmetic task.

A ``Grammar`` is a lexicon (slot → words) and templates with ``{slot}`` holes; ``{noun_2}`` is a
second, independent draw from the ``noun`` slot (the suffix only names it in the returned slots).
Chapters build their own tasks from it, e.g. facts "the {noun} is {color}" with a fixed answer per noun,
and read the fillers back with ``with_slots=True`` to build targets.
"""
from __future__ import annotations

import math
import random
import re
import string
from dataclasses import dataclass, field

from ..runtime import check_int

__all__ = ["Grammar", "default_grammar", "arithmetic_pairs"]

_SLOT = re.compile(r"\{([A-Za-z]+)(?:_\d+)?\}")


@dataclass
class Grammar:
    """A templated grammar: ``Grammar({"noun": [...], "verb": [...]}, ["the {noun} {verb} ."])``."""

    lexicon: dict[str, list[str]]
    templates: list[str]
    weights: list[float] | None = None
    _fields: list[list[str]] = field(init=False, repr=False, default_factory=list)

    def __post_init__(self):
        if not isinstance(self.lexicon, dict) or not self.lexicon:
            raise ValueError("lexicon must be a non-empty dict slot -> list of words")
        for k, words in self.lexicon.items():
            if isinstance(words, str) or not words or not all(isinstance(w, str) and w for w in words):
                raise ValueError(f"lexicon[{k!r}] must be a non-empty list of non-empty strings")
        if isinstance(self.templates, str) or not self.templates:
            raise ValueError("templates must be a non-empty list of strings")
        if self.weights is not None and (len(self.weights) != len(self.templates) or min(self.weights) < 0
                                         or sum(self.weights) <= 0):
            raise ValueError("weights must be non-negative, one per template, not all zero")
        self._fields = []
        for t in self.templates:
            names = [f for _, f, _, _ in string.Formatter().parse(t) if f is not None]
            unknown = [f for f in names if _SLOT.fullmatch("{" + f + "}") is None
                       or _SLOT.fullmatch("{" + f + "}").group(1) not in self.lexicon]
            if unknown:
                raise ValueError(f"template {t!r} uses slots {unknown} not in the lexicon {sorted(self.lexicon)}")
            self._fields.append(names)

    @property
    def vocabulary(self) -> list[str]:
        """Every word the grammar can emit (lexicon words and template words), sorted."""
        words = {w for ws in self.lexicon.values() for w in ws}
        for t in self.templates:
            words.update(_SLOT.sub(" ", t).split())
        return sorted(words)

    def n_sentences(self) -> int:
        """Number of distinct (template, fillers) combinations (an upper bound on distinct texts)."""
        total = 0
        for names in self._fields:
            k = 1
            for f in names:
                k *= len(self._slot(f))
            total += k
        return total

    def _slot(self, f: str) -> list[str]:
        return self.lexicon[_SLOT.fullmatch("{" + f + "}").group(1)]

    def _template_p(self) -> list[float]:
        w = self.weights or [1.0] * len(self.templates)
        return [x / sum(w) for x in w]

    def entropy(self) -> float:
        """Entropy of a sampled sentence in nats, ``H(template) + E[Σ_slots log |slot|]``.

        Exact when different (template, fillers) never give the same text (true for
        ``default_grammar``); otherwise an upper bound.
        """
        h = 0.0
        for p, names in zip(self._template_p(), self._fields):
            if p > 0:
                h += p * (-math.log(p) + sum(math.log(len(self._slot(f))) for f in names))
        return h

    def mean_words(self) -> float:
        """Expected number of whitespace-separated words per sentence."""
        return sum(p * len(self.templates[i].split()) for i, p in enumerate(self._template_p()))

    def is_grammatical(self, text: str) -> bool:
        """Whether ``text`` is one of the grammar's sentences (up to surrounding whitespace)."""
        if not hasattr(self, "_regex"):
            pats = []
            for t in self.templates:
                pat, last = "", 0
                for m in _SLOT.finditer(t):
                    alts = "|".join(re.escape(w) for w in sorted(self._slot(m.group(0)[1:-1]), key=len, reverse=True))
                    pat += re.escape(t[last:m.start()]) + f"(?:{alts})"
                    last = m.end()
                pats.append(pat + re.escape(t[last:]))
            self._regex = re.compile("|".join(f"(?:{p})" for p in pats))
        return self._regex.fullmatch(text.strip()) is not None

    def _one(self, rng: random.Random):
        i = rng.choices(range(len(self.templates)), weights=self.weights)[0] if self.weights else \
            rng.randrange(len(self.templates))
        slots = {f: rng.choice(self._slot(f)) for f in self._fields[i]}
        return self.templates[i].format(**slots), dict(slots, template=i)

    def sample(self, n: int, *, seed: int = 0, with_slots: bool = False):
        """``n`` sentences (with repeats); ``with_slots=True`` gives ``(text, slots)`` pairs."""
        n = check_int(n, "n", 0)
        rng = random.Random(seed)
        out = [self._one(rng) for _ in range(n)]
        return out if with_slots else [t for t, _ in out]

    def split(self, n_train: int, n_val: int = 0, n_test: int = 0, *, seed: int = 0,
              with_slots: bool = False) -> dict[str, list]:
        """Disjoint splits of distinct sentences: ``{"train": [...], "val": [...], "test": [...]}``."""
        need = n_train + n_val + n_test
        if min(n_train, n_val, n_test) < 0:
            raise ValueError("split sizes must be >= 0")
        if need > self.n_sentences():
            raise ValueError(f"asked for {need} distinct sentences but the grammar has at most {self.n_sentences()}")
        rng = random.Random(seed)
        seen, items, tries = set(), [], 0
        while len(items) < need:
            text, slots = self._one(rng)
            tries += 1
            if tries > 100 * need + 1000:
                raise ValueError(f"could not draw {need} distinct sentences (the grammar has too few)")
            if text not in seen:
                seen.add(text)
                items.append((text, slots))
        keep = items if with_slots else [t for t, _ in items]
        return {"train": keep[:n_train], "val": keep[n_train:n_train + n_val], "test": keep[n_train + n_val:]}


def default_grammar() -> Grammar:
    """A small English-like grammar (33 words, 4 templates, 46 720 sentences) for demos and tests."""
    lex = {
        "det": ["the", "a"],
        "adj": ["small", "red", "quick", "old", "happy", "green"],
        "noun": ["cat", "dog", "bird", "fox", "robot", "child", "king", "tree"],
        "verb": ["sees", "likes", "chases", "finds", "helps", "follows"],
        "ivb": ["sleeps", "runs", "sings", "waits"],
        "place": ["garden", "house", "forest", "river"],
    }
    templates = [
        "{det} {adj} {noun} {verb} {det_2} {noun_2} .",
        "{det} {noun} {ivb} in the {place} .",
        "{det} {adj} {noun} {ivb} .",
        "{det} {noun} {verb} {det_2} {adj} {noun_2} near the {place} .",
    ]
    return Grammar(lex, templates)


def arithmetic_pairs(n: int, *, max_value: int = 20, op: str = "+", seed: int = 0) -> list[tuple[str, str]]:
    """``n`` ``(prompt, answer)`` pairs such as ``("7+5=", "12")`` with operands in ``[0, max_value)``."""
    ops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
    if op not in ops:
        raise ValueError(f"op must be one of {list(ops)}, got {op!r}")
    max_value = check_int(max_value, "max_value")
    n = check_int(n, "n", 0)
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        a, b = rng.randrange(max_value), rng.randrange(max_value)
        pairs.append((f"{a}{op}{b}=", str(ops[op](a, b))))
    return pairs
