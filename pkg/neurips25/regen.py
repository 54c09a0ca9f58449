r"""REGen — retrieval-embedded generation: teasers that quote their source (text side only).

Xu et al., "REGen: Multimodal Retrieval-Embedded Generation for Long-to-Short Video Editing",
NeurIPS 2025 (arXiv 2505.18880). The paper edits documentary videos into teasers in two stages:

1. a fine-tuned LLM writes a teaser *script* of narration with ``<quote>`` placeholders;
2. a QuoteRetriever fills each placeholder with an interview clip of the source video, scoring a
   candidate $m$ by the clip fitness $\mathrm{CF}=\cos(h, e_m)$ of a query $h$ computed from the
   narration before and after the placeholder, trained with $L = L_{gen} + \alpha L_{ret}$ (Eq. 2):
   $L_{gen}$ the in-fill decoder's token cross-entropy on the quote, $L_{ret}$ InfoNCE (Eq. 1).

Video is out of reach offline, so this module works on the text side: synthetic documentaries
(transcripts of narration and interview quotes), a tiny script LM (``neurips25.lm``), frozen
all-MiniLM-L6-v2 sentence embeddings, and a small Lightning retriever head over them.
"""
from __future__ import annotations

import argparse
import math
import random
import re
import sys
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .lm.embed import SentenceEncoder, minilm_path  # noqa: F401 (re-exported)
from .runtime import check_int, lightning_module

__all__ = [
    "QUOTE", "ASPECTS", "ROLES", "POOLS", "Segment", "Documentary", "make_documentaries", "make_split",
    "split_overlap",
    "get_documentary", "quote_vocab", "teaser_examples", "script_prompt", "ScriptModel", "parse_placeholders",
    "fill_placeholders", "quote_coverage", "parse_lead", "narration_pool", "judge_teaser",
    "SentenceEncoder", "minilm_path", "DocTensors", "doc_tensors", "QuoteRetriever", "train_retriever",
    "rank_of_truth", "recall_at_k", "score_docs", "zero_shot_scores", "tfidf_scores", "random_recall",
    "evaluate", "fill_teaser", "RETRIEVAL", "DATA_SEEDS", "REPLICATION_DATA_SEEDS", "retrieval_metrics",
    "retrieval_run",
    "retrieval_sweep", "pooled_gain_ci", "r1_gains", "main",
]

QUOTE = "<quote>"

# Each aspect: (narration lead-ins, interview quotes, narration follow-ups). The quotes use their own
# vocabulary (first person, concrete) and name neither the speaker nor the aspect: only meaning links
# them to the narration around them. {at} is the speaker's workplace phrase, {place} the film's place.
# Every list holds two halves of templates: the first half writes the training films, the second the
# test films (see ``POOLS``), so no narration sentence or quote template of a test film is ever seen in
# training; only the speaker's workplace phrase and the meaning of an aspect carry over.
ASPECTS: dict[str, tuple[list[str], list[str], list[str]]] = {
    "hardship": (["the {role} remembers the hardest years .", "for the {role} the lean seasons were cruel .",
                  "the {role} recalls years of going without .", "the {role} talks about times of scarcity ."],
                 ["some winters {at} in {place} we had nothing to eat",
                  "there were weeks {at} in {place} when we could not buy bread",
                  "in {place} we worked {at} and still went hungry",
                  "for a whole winter {at} in {place} we ate only potatoes",
                  "my children went to bed hungry while i was {at} in {place}",
                  "{at} in {place} there was never enough food for everyone"],
                 ["those years left their mark .", "nobody there forgot that poverty .",
                  "the hunger is remembered still .", "it was a time of want ."]),
    "family": (["the {role} talks about home and children .", "the {role} speaks of a mother and father .",
                "the {role} speaks about the people waiting at home .", "the {role} thinks of loved ones ."],
               ["my daughter used to wait for me {at} in {place}",
                "my father taught me everything {at} in {place}",
                "my kids grew up {at} here in {place}",
                "my wife packs my lunch before i go {at} in {place}",
                "my son wants to work {at} in {place} just like me",
                "my sister and i shared one bed in {place} before i started {at}"],
               ["family is the reason to stay .", "old photographs line the walls .",
                "home is never far from their mind .", "the household depends on them ."]),
    "danger": (["the {role} describes the risks of the job .", "the {role} has had close calls .",
                "the {role} admits the work can kill .", "the {role} speaks of accidents ."],
               ["one night {at} in {place} i thought i would die",
                "a friend was badly hurt {at} in {place} last year",
                "you never feel safe {at} in {place}",
                "i broke my arm {at} in {place} two winters ago",
                "the ambulance came {at} in {place} more than once",
                "my hands still shake when i remember that fall {at} in {place}"],
               ["risk is part of that life .", "fear never stopped the work .",
                "safety is never certain .", "the scars are still visible ."]),
    "hope": (["the {role} looks toward the future .", "the {role} still has dreams .",
              "the {role} imagines what comes next .", "the {role} talks about plans for later ."],
             ["tomorrow will be better {at} in {place} i believe it",
              "one day my grandchildren will be proud of us {at} in {place}",
              "i want to open something new {at} in {place}",
              "next year i will save enough {at} in {place} to build a house",
              "someday {at} in {place} things will finally improve",
              "i pray my children study and come back to {place} to work {at}"],
             ["optimism carries them forward .", "the best may still be ahead .",
              "the future feels bright .", "there is still something to wait for ."]),
    "tradition": (["the {role} explains the old customs .", "the {role} keeps the ancient rituals alive .",
                   "the {role} describes what the elders handed down .",
                   "the {role} honours the ways of the past ."],
                  ["we still sing the songs of our grandparents {at} in {place}",
                   "every spring {at} in {place} we hold the festival our ancestors started",
                   "we do it {at} the way it was always done in {place}",
                   "my grandmother showed me this ritual {at} in {place}",
                   "on the holy day nobody works {at} in {place}",
                   "once a year {at} in {place} we wear the old costumes"],
                  ["heritage matters deeply here .", "the customs are passed on .",
                   "the past lives on in these acts .", "ritual ties the generations together ."]),
    "change": (["the {role} has watched the world transform .", "the {role} sees new machines arrive .",
                "the {role} notices how different everything has become .",
                "the {role} talks about modern times ."],
               ["now computers decide everything {at} in {place}",
                "the young people {at} leave {place} for the big cities",
                "nothing {at} in {place} looks like it did twenty years ago",
                "everybody {at} in {place} stares at a phone now",
                "they built a highway through {place} and {at} we feel it every day",
                "{at} in {place} robots do the work my father did by hand"],
               ["progress brings its worries .", "everyone adapts to the new times .",
                "the old world is fading .", "not everyone welcomes it ."]),
    "money": (["the {role} worries about wages and prices .", "the {role} counts every coin .",
               "the {role} explains how hard it is to pay the bills .",
               "the {role} talks about earning a living ."],
              ["the pay {at} in {place} is not enough for rent",
               "prices in {place} doubled but our salary {at} did not",
               "i owe the bank more than i earn {at} in {place}",
               "i work two jobs {at} in {place} and still cannot save",
               "a loaf of bread in {place} costs half of what i make {at} in a day",
               "last month {at} in {place} i could not pay for electricity"],
              ["debt follows them everywhere .", "every budget is careful .",
               "money is always short .", "the bills keep coming ."]),
    "joy": (["the {role} recalls the happiest moments .", "the {role} laughs about the good days .",
             "the {role} smiles when speaking of celebrations .", "the {role} remembers the fun ."],
            ["we danced all night {at} in {place} after the harvest",
             "the best day of my life was {at} in {place}",
             "when the sun comes up {at} in {place} i feel wonderful",
             "we laughed until we cried {at} in {place}",
             "the children sing when we finish {at} in {place}",
             "nothing is as sweet as a summer evening {at} in {place}"],
            ["happiness comes easily then .", "those memories are treasured .",
             "joy fills those moments .", "laughter is never far ."]),
}
ROLES = {"fisher": "out on the boat", "teacher": "in the classroom", "nurse": "on the ward", "farmer": "in the fields",
         "miner": "down in the pit", "baker": "at the ovens", "weaver": "at the loom", "driver": "behind the wheel"}
_ADJ = ["northern", "old", "quiet", "flooded", "windy", "green", "stone", "frozen", "golden", "lost"]
_NOUN = ["harbour", "valley", "delta", "mountain", "village", "island", "river", "desert", "forest", "bay"]
POOLS = ("train", "test")


def _pool(items: list, pool: str) -> list:
    """The half of a template list (or of the places) that ``pool`` may use."""
    h = len(items) // 2
    return items[:h] if pool == "train" else items[h:]


def _places(pool: str) -> list[str]:
    places = [f"the {a} {n}" for a in _ADJ for n in _NOUN]
    random.Random(12345).shuffle(places)  # a fixed partition of the places, whatever the data seed
    return _pool(places, pool)


@dataclass(frozen=True)
class Segment:
    """One interview beat: narration lead-in, the quote, narration follow-up (plus its hidden labels)."""
    role: str
    aspect: str
    lead: str
    quote: str
    follow: str


@dataclass
class Documentary:
    doc_id: int
    place: str
    cast: list[str]
    segments: list[Segment] = field(default_factory=list)
    pool: str = "train"

    @property
    def quotes(self) -> list[str]:
        return [s.quote for s in self.segments]


def make_documentaries(n_docs: int, n_segments: int = 24, n_cast: int = 3, seed: int = 0,
                       pool: str = "train") -> list[Documentary]:
    """Synthetic documentaries: ``n_cast`` people (distinct roles), ``n_segments`` unique quotes each.

    Each person speaks many times, so the same speaker's other quotes are the hard negatives the
    paper gets by grouping a batch by video. ``pool`` ("train" or "test") picks the half of the places
    and of every template list the films are written from: films of the two pools share no place, no
    narration sentence and no quote template (doc ids are offset by 10,000 in the test pool).
    """
    for name, v, lo in (("n_docs", n_docs, 1), ("n_segments", n_segments, 1), ("n_cast", n_cast, 1)):
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    if pool not in POOLS:
        raise ValueError(f"pool must be one of {POOLS}, got {pool!r}")
    places = _places(pool)
    if n_docs > len(places):
        raise ValueError(f"n_docs must be <= {len(places)} (one distinct place per documentary), got {n_docs}")
    if n_cast > len(ROLES):
        raise ValueError(f"n_cast must be <= {len(ROLES)}, got {n_cast}")
    n_q = sum(len(_pool(q, pool)) for _, q, _ in ASPECTS.values())
    if n_segments > n_cast * n_q:
        raise ValueError(f"n_segments must be <= n_cast * {n_q} (distinct quotes), got {n_segments}")
    rng = random.Random(seed * 2 + (pool == "test"))
    rng.shuffle(places)
    docs = []
    for d in range(n_docs):
        cast = rng.sample(sorted(ROLES), n_cast)
        beats = [(p, a, j) for p in range(n_cast) for a in ASPECTS for j in range(len(_pool(ASPECTS[a][1], pool)))]
        doc = Documentary(d + 10_000 * (pool == "test"), places[d], cast, pool=pool)
        for p, a, j in rng.sample(beats, n_segments):
            role = cast[p]
            leads, quotes, follows = (_pool(x, pool) for x in ASPECTS[a])
            fill = dict(role=role, at=ROLES[role], place=places[d])
            doc.segments.append(Segment(role, a, rng.choice(leads).format(**fill), quotes[j].format(**fill),
                                        rng.choice(follows).format(**fill)))
        docs.append(doc)
    return docs


def make_split(n_train: int, n_test: int, n_segments: int = 24, n_cast: int = 3, seed: int = 0):
    """(train films, test films) written from disjoint template pools and places: the held-out films
    share no narration sentence, no quote template and no place with the training films.
    ``NEURIPS25_SMOKE=1`` (``runtime.cap``): at most 8 training and 4 test films."""
    from .runtime import cap

    return (make_documentaries(cap(n_train, 8), n_segments, n_cast, seed, pool="train"),
            make_documentaries(cap(n_test, 4), n_segments, n_cast, seed, pool="test"))


def split_overlap(train: Sequence[Documentary], test: Sequence[Documentary]) -> dict[str, float]:
    """Leak audit: the share of test lead-ins, follow-ups and quotes that appear verbatim in training,
    and of test quotes that match a training quote once the film's place is removed (template reuse)."""
    if not train or not test:
        raise ValueError("train and test must both hold at least one documentary")

    def strip(d, q):
        return q.replace(d.place, "<place>")

    seen = {k: {getattr(s, k) for d in train for s in d.segments} for k in ("lead", "follow", "quote")}
    tmpl = {strip(d, s.quote) for d in train for s in d.segments}
    segs = [(d, s) for d in test for s in d.segments]
    out = {f"{k}_verbatim": float(np.mean([getattr(s, k) in seen[k] for _, s in segs]))
           for k in ("lead", "follow", "quote")}
    out["quote_template"] = float(np.mean([strip(d, s.quote) in tmpl for d, s in segs]))
    return out


def get_documentary(docs: Sequence[Documentary], doc_id: int) -> Documentary:
    """The documentary with ``doc_id`` (``ValueError`` naming the known ids if there is none)."""
    for d in docs:
        if d.doc_id == doc_id:
            return d
    raise ValueError(f"unknown documentary doc_id={doc_id!r}; known ids: {sorted(d.doc_id for d in docs)}")


def quote_vocab(docs: Sequence[Documentary]) -> dict[str, int]:
    """Word index of the training quotes (the in-fill decoder's output vocabulary)."""
    words = sorted({w for d in docs for q in d.quotes for w in q.split()})
    return {w: i for i, w in enumerate(words)}


# --------------------------------------------------------------------------- stage 1: scripts
def _prompt(doc: Documentary) -> str:
    return f"film : {doc.place} . cast : " + " , ".join(doc.cast) + " . teaser :"


def teaser_examples(doc: Documentary, n: int = 4, n_beats: int = 3, seed: int = 0,
                    quote_rate: float = 2 / 3) -> list[tuple[str, str]]:
    """(prompt, script) pairs: reference teasers of ``n_beats`` segments. A beat quotes its interviewee
    (the quote replaced by ``<quote>``) with probability ``quote_rate``, else it is narration only, so
    how much a teaser quotes is something the script model has to learn."""
    if not 0.0 <= quote_rate <= 1.0:
        raise ValueError(f"quote_rate must be in [0, 1], got {quote_rate!r}")
    rng = random.Random(seed * 100_003 + doc.doc_id)
    out = []
    for _ in range(n):
        segs = rng.sample(doc.segments, n_beats)
        beats = [f"{s.lead} {QUOTE} {s.follow}" if rng.random() < quote_rate else f"{s.lead} {s.follow}"
                 for s in segs]
        out.append((_prompt(doc), " " + " ".join(beats)))
    return out


def script_prompt(doc: Documentary) -> str:
    """The stage-1 prompt: the film's place and cast (the stand-in for the LLM reading the transcript)."""
    return _prompt(doc)


class ScriptModel:
    """Stage 1: a causal LM (``neurips25.lm``) that writes teaser scripts with ``<quote>`` placeholders.

    The paper fine-tunes an LLM on (transcript, teaser) pairs; here a 2-layer GPT-2 learns the
    (prompt, script) pairs of ``teaser_examples`` with the loss on the script only.

    ``generator``: ``None`` (the tiny word-level GPT-2 built here) or a ``(model, tokenizer)`` pair,
    e.g. ``neurips25.lm.pretrained("gpt2")`` — the one-line swap to a real checkpoint, fine-tuned the
    same way; ``<quote>`` is added to its tokenizer as a special token (and its embeddings resized)
    if missing. ``device``: where it trains and writes (``None``: ``runtime.device()``, CUDA when present).
    """

    def __init__(self, train_docs: Sequence[Documentary], *, n_examples: int = 8, n_beats: int = 3,
                 n_embd: int = 64, steps: int = 150, lr: float = 3e-3, batch_size: int = 32, seed: int = 0,
                 generator=None, device: str | torch.device | None = None):
        from neurips25.lm import build_tokenizer, tiny_model
        from neurips25.runtime import device as default_device

        if not train_docs:
            raise ValueError("train_docs must hold at least one documentary")
        self.examples = [e for d in train_docs for e in teaser_examples(d, n_examples, n_beats, seed)]
        if generator is None:
            corpus = [p + a for p, a in self.examples] + [f"film : {a} {n} . cast : " + " , ".join(ROLES)
                                                         for a in _ADJ for n in _NOUN]
            self.tok = build_tokenizer("word", corpus, special_tokens=[QUOTE])
            self.model = tiny_model(self.tok, n_layer=2, n_embd=n_embd, n_head=4, n_positions=96, seed=seed)
        else:
            if not (isinstance(generator, (tuple, list)) and len(generator) == 2):
                raise TypeError("generator must be a (model, tokenizer) pair, e.g. neurips25.lm.pretrained('gpt2')")
            self.model, self.tok = generator
            if QUOTE not in self.tok.get_vocab():
                self.tok.add_tokens([QUOTE], special_tokens=True)
            if self.model.get_input_embeddings().num_embeddings < len(self.tok):
                self.model.resize_token_embeddings(len(self.tok))
        self.quote_id = self.tok.convert_tokens_to_ids(QUOTE)
        self.device = torch.device(device) if device is not None else default_device()
        self.n_beats = n_beats
        self.hparams = dict(steps=steps, lr=lr, batch_size=batch_size, seed=seed)

    def fit(self) -> ScriptModel:
        from neurips25.lm import train_lm

        hp = self.hparams  # NEURIPS25_SMOKE=1: train_lm caps the steps (runtime.cap)
        self.run = train_lm(self.model, self.tok, self.examples, steps=hp["steps"], lr=hp["lr"],
                            batch_size=hp["batch_size"], mask="answer", seed=hp["seed"],
                            accelerator=self.device.type)
        self.model.to(self.device)
        return self

    def write(self, docs: Sequence[Documentary], max_new_tokens: int = 20, temperature: float = 0.7,
              seed: int = 0) -> list[str]:
        """Scripts of ``n_beats`` beats for ``docs``; each beat starts with "the <speaker>" (the cast in
        order) and the LM writes the lead-in, a ``<quote>`` placeholder or none, and the follow-up. The
        marker is a special token, so it is kept when decoding."""
        if not docs:
            raise ValueError("docs is empty")
        from neurips25.lm import generate

        scripts = [""] * len(docs)
        for b in range(self.n_beats):  # the speaker of each beat is given (cast order); the LM writes the rest
            heads = [f" the {d.cast[b % len(d.cast)]}" for d in docs]
            g = generate(self.model, self.tok, [_prompt(d) + s + h for d, s, h in zip(docs, scripts, heads)],
                         max_new_tokens=max_new_tokens, temperature=temperature, seed=seed + b)
            for i, ids in enumerate(g.tokens):
                ids = [t for t in ids if t == self.quote_id or t not in self.tok.all_special_ids]
                beat = heads[i] + " " + self.tok.decode(ids, skip_special_tokens=False)
                ends = [m.end() for m in re.finditer(r" \.", beat)]  # a beat is two sentences
                scripts[i] += beat[: ends[1]] if len(ends) >= 2 else beat
        return [s.strip() for s in scripts]


def _sentences(text: str) -> list[str]:
    return [s.strip() + " ." for s in text.split(" .") if s.strip()]


def parse_placeholders(script: str) -> list[tuple[str, str]]:
    """For each ``<quote>`` in ``script``: (s_prev, s_next), the narration sentences either side ("" if none)."""
    if not isinstance(script, str):
        raise TypeError(f"script must be a str, got {type(script).__name__}")
    parts = script.split(QUOTE)
    out = []
    for i in range(len(parts) - 1):
        before, after = _sentences(parts[i]), _sentences(parts[i + 1])
        out.append((before[-1] if before else "", after[0] if after else ""))
    return out


def fill_placeholders(script: str, quotes: Sequence[str]) -> str:
    """Insert ``quotes`` into the placeholders of ``script``, one to one, in order (as “…”)."""
    parts = script.split(QUOTE)
    if len(quotes) != len(parts) - 1:
        raise ValueError(f"quotes must have one entry per placeholder ({len(parts) - 1}), got {len(quotes)}")
    out = parts[0]
    for q, p in zip(quotes, parts[1:]):
        out += f"“{q}”" + p
    return out


def quote_coverage(script: str) -> float:
    """Share of the script's units (narration sentences + quotes) that are quotes."""
    n_q = script.count(QUOTE)
    n_s = sum(len(_sentences(p)) for p in script.split(QUOTE))
    return n_q / max(n_q + n_s, 1)


def _match_template(template: str, sentence: str) -> re.Match | None:
    """``sentence`` matched in full against a narration template, whose ``{role}`` is one word."""
    return re.fullmatch(re.escape(template).replace(r"\{role\}", r"(?P<role>\w+)"), sentence.strip())


def parse_lead(sentence: str) -> tuple[str, str] | None:
    """(speaker role, aspect) of a narration lead-in written from the templates, or ``None`` if it is not one."""
    for aspect, (leads, _, _) in ASPECTS.items():
        for t in leads:
            m = _match_template(t, sentence)
            if m:
                return m.group("role"), aspect
    return None


def narration_pool(sentence: str) -> str | None:
    """The template pool (``"train"`` or ``"test"``, see ``POOLS``) of a narration lead-in or
    follow-up written from the templates, or ``None`` if it is neither."""
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
    for leads, _, follows in ASPECTS.values():
        for items in (leads, follows):
            for pool in POOLS:
                if any(_match_template(t, sentence) for t in _pool(items, pool)):
                    return pool
    return None


# --------------------------------------------------------------------------- frozen text encoder
# SentenceEncoder (frozen, L2-normalised, cached MiniLM) comes from neurips25.lm.embed.


# --------------------------------------------------------------------------- stage 2: QuoteRetriever
@dataclass
class DocTensors:
    """One documentary as tensors: contexts (e_prev, e_next), candidate quotes e_m, quote bag of words."""
    prev: torch.Tensor
    next: torch.Tensor
    quote: torch.Tensor
    bow: torch.Tensor


def doc_tensors(docs: Sequence[Documentary], encoder, vocab: dict[str, int]) -> list[DocTensors]:
    """Embed every lead, follow-up and quote of ``docs`` (cached) and build the quote word counts."""
    out = []
    for d in docs:
        bow = torch.zeros(len(d.segments), len(vocab))
        for i, s in enumerate(d.segments):
            for w in s.quote.split():
                if w in vocab:
                    bow[i, vocab[w]] += 1
        out.append(DocTensors(encoder([s.lead for s in d.segments]), encoder([s.follow for s in d.segments]),
                              encoder(d.quotes), bow))
    return out


def _collate(batch: list[DocTensors]):
    doc = torch.cat([torch.full((len(b.prev),), i) for i, b in enumerate(batch)])
    return (torch.cat([b.prev for b in batch]), torch.cat([b.next for b in batch]),
            torch.cat([b.quote for b in batch]), torch.cat([b.bow for b in batch]), doc)


class QuoteRetriever(lightning_module()):
    r"""Query head over frozen MiniLM embeddings: $h = \mathrm{MLP}([e_{prev}, e_{next}, e_{prev}\odot e_{next}])$.

    The paper's query is the BART decoder state at ``<SUM>`` after in-filling the quote; here $h$ is
    a small MLP state, projected to the 384-d quote space (MiniLM's size, hence the projection).
    CF $=\cos(q, e_m)$. $L_{gen}$ stand-in: a linear in-fill decoder predicts the quote's words
    from $h$ (token cross-entropy, order ignored). $L = w_{gen} L_{gen} + \alpha L_{ret}$ (Eq. 2), with
    $L_{ret}$ the InfoNCE of Eq. 1 (cos / τ), negatives = the other quotes of the same documentary.
    """

    def __init__(self, vocab_size: int, dim: int = 384, hidden: int = 256, alpha: float = 1.0,
                 gen_weight: float = 1.0, tau: float = 0.1, lr: float = 2e-3, weight_decay: float = 1e-4):
        super().__init__()
        for name, v in (("alpha", alpha), ("gen_weight", gen_weight), ("tau", tau), ("lr", lr),
                        ("weight_decay", weight_decay)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        if alpha < 0 or gen_weight < 0 or alpha + gen_weight == 0:
            raise ValueError(f"alpha and gen_weight must be >= 0 and not both 0, got {alpha}, {gen_weight}")
        if tau <= 0 or lr <= 0 or weight_decay < 0:
            raise ValueError(f"tau and lr must be > 0 and weight_decay >= 0, got {tau}, {lr}, {weight_decay}")
        self.save_hyperparameters()
        self.body = torch.nn.Sequential(torch.nn.Linear(3 * dim, hidden), torch.nn.GELU(),
                                        torch.nn.Linear(hidden, hidden), torch.nn.GELU())
        self.proj = torch.nn.Linear(hidden, dim)
        self.infill = torch.nn.Linear(hidden, vocab_size)

    def hidden(self, e_prev, e_next):
        return self.body(torch.cat([e_prev, e_next, e_prev * e_next], -1))

    def forward(self, e_prev, e_next):
        """The unit query q (compare to unit quote embeddings: the dot product is CF)."""
        return F.normalize(self.proj(self.hidden(e_prev, e_next)), dim=-1)

    def losses(self, e_prev, e_next, e_quote, bow, doc):
        h = self.hidden(e_prev, e_next)
        q = F.normalize(self.proj(h), dim=-1)
        logits = q @ F.normalize(e_quote, dim=-1).T / self.hparams.tau
        logits = logits.masked_fill(doc[:, None] != doc[None, :], float("-inf"))  # negatives: same video
        l_ret = F.cross_entropy(logits, torch.arange(len(q), device=q.device))
        target = bow / bow.sum(-1, keepdim=True).clamp_min(1)
        l_gen = -(target * F.log_softmax(self.infill(h), -1)).sum(-1).mean()
        return l_gen, l_ret

    def training_step(self, batch, batch_idx):
        l_gen, l_ret = self.losses(*batch)
        loss = self.hparams.gen_weight * l_gen + self.hparams.alpha * l_ret
        self.log_dict({"l_gen": l_gen, "l_ret": l_ret}, batch_size=len(batch[0]))
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)

    @torch.no_grad()
    def scores(self, d: DocTensors) -> torch.Tensor:
        """(n_placeholders, n_candidates) clip fitness of every context against every quote of the doc."""
        self.eval()
        q = self(d.prev.to(self.device), d.next.to(self.device)).cpu()
        return q @ F.normalize(d.quote, dim=-1).T


def train_retriever(train: Sequence[DocTensors], vocab_size: int, *, epochs: int = 40, docs_per_batch: int = 6,
                    seed: int = 0, device: str | torch.device | None = None, **hparams) -> QuoteRetriever:
    """Train a ``QuoteRetriever`` with the quiet trainer; each batch holds whole documentaries.
    ``device``: where it trains (``None``: ``runtime.device()``, CUDA when present)."""
    import lightning as L

    from neurips25.runtime import cap, make_trainer
    from neurips25.runtime import device as default_device

    if not train:
        raise ValueError("train must hold at least one documentary")
    L.seed_everything(seed, verbose=False)
    model = QuoteRetriever(vocab_size, **hparams)
    loader = torch.utils.data.DataLoader(list(train), batch_size=docs_per_batch, shuffle=True,
                                         collate_fn=_collate, generator=torch.Generator().manual_seed(seed))
    dev = torch.device(device) if device is not None else default_device()
    make_trainer(cap(epochs), accelerator=dev.type).fit(model, loader)
    return model.to(dev)


# --------------------------------------------------------------------------- evaluation
def rank_of_truth(scores: torch.Tensor, truth: Sequence[int] | torch.Tensor | None = None) -> torch.Tensor:
    """1-based rank of the true candidate per row: 1 + #candidates scored strictly higher.

    ``truth`` defaults to the diagonal (placeholder i's quote is candidate i)."""
    scores = torch.as_tensor(scores)
    if scores.ndim != 2 or scores.shape[1] == 0:
        raise ValueError(f"scores must be (n_queries, n_candidates) with n_candidates >= 1, got {tuple(scores.shape)}")
    if torch.isnan(scores).any():  # NaN compares False: a NaN true score would silently rank first
        raise ValueError("scores contain NaN")
    truth = torch.arange(len(scores)) if truth is None else torch.as_tensor(truth).long()
    if truth.shape != (len(scores),) or (truth < 0).any() or (truth >= scores.shape[1]).any():
        raise ValueError("truth must hold one valid candidate index per row of scores")
    true = scores.gather(1, truth[:, None])
    return 1 + (scores > true).sum(1)


def recall_at_k(ranks: torch.Tensor, ks: Sequence[int] = (1, 5, 10)) -> dict[int, float]:
    """R@k = share of placeholders whose true quote is in the top k."""
    ranks = torch.as_tensor(ranks)
    if ranks.numel() == 0:
        raise ValueError("ranks is empty")
    if not (torch.isfinite(ranks) & (ranks >= 1)).all():  # 1-based ranks; NaN would count as a miss
        raise ValueError("ranks must be finite and >= 1 (1-based ranks, see rank_of_truth)")
    if any(not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"ks must be positive ints, got {ks}")
    return {k: float((ranks <= k).float().mean()) for k in ks}


def random_recall(docs: Sequence[DocTensors], ks: Sequence[int] = (1, 5, 10)) -> dict[int, float]:
    """Expected R@k of a uniformly random ranking: min(k, n)/n per placeholder."""
    n = torch.cat([torch.full((len(d.quote),), len(d.quote), dtype=torch.float) for d in docs])
    return {k: float((n.clamp(max=k) / n).mean()) for k in ks}


def zero_shot_scores(d: DocTensors) -> torch.Tensor:
    """'In-fill then nearest neighbour' analogue: cos(e_prev + e_next, e_m) with no training."""
    return F.normalize(d.prev + d.next, dim=-1) @ F.normalize(d.quote, dim=-1).T


def tfidf_scores(docs: Sequence[Documentary], fit_docs: Sequence[Documentary]) -> list[torch.Tensor]:
    """Lexical baseline: TF-IDF cosine between 'lead follow-up' and each quote (sklearn)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    corpus = [t for d in fit_docs for s in d.segments for t in (s.lead, s.quote, s.follow)]
    vec = TfidfVectorizer().fit(corpus)
    out = []
    for d in docs:
        q = vec.transform([f"{s.lead} {s.follow}" for s in d.segments])
        out.append(torch.tensor((q @ vec.transform(d.quotes).T).toarray(), dtype=torch.float))
    return out


def score_docs(method, docs: Sequence[DocTensors]) -> list[torch.Tensor]:
    if not docs:
        raise ValueError("docs is empty: no documentary to score")
    return [method(d) for d in docs]


def evaluate(scores: Sequence[torch.Tensor], ks: Sequence[int] = (1, 5, 10)) -> dict[int, float]:
    """Pooled R@k over all placeholders of all documentaries (candidates: that documentary's quotes)."""
    if not scores:
        raise ValueError("scores is empty")
    return recall_at_k(torch.cat([rank_of_truth(s) for s in scores]), ks)


# --------------------------------------------------------------------------- end to end
def fill_teaser(script: str, doc: Documentary, retriever: QuoteRetriever, encoder) -> tuple[str, list[int]]:
    """Stage 2 on a generated script: retrieve a distinct quote of ``doc`` for each placeholder."""
    if not doc.segments:
        raise ValueError("doc has no candidate quotes")
    ctx = parse_placeholders(script)
    if not ctx:
        return script, []
    e_q = encoder(doc.quotes)
    with torch.no_grad():
        retriever.eval()
        e_prev, e_next = encoder([p for p, _ in ctx]), encoder([n for _, n in ctx])
        q = retriever(e_prev.to(retriever.device), e_next.to(retriever.device))
        cf = (q.cpu() @ e_q.T).numpy()
    chosen: list[int] = []
    for row in cf:  # greedy, one clip used at most once per teaser
        row = row.copy()
        row[chosen] = -np.inf
        chosen.append(int(row.argmax()))
    return fill_placeholders(script, [doc.quotes[i] for i in chosen]), chosen


def judge_teaser(script: str, doc: Documentary, chosen: Sequence[int]) -> list[dict]:
    """Per placeholder: is the lead-in well formed, does ``doc`` hold a quote of that (speaker, aspect)
    ("answerable"), and did the retriever pick one ("hit")? Uses the generator's hidden labels."""
    ctx = parse_placeholders(script)
    if len(chosen) != len(ctx):
        raise ValueError(f"chosen must have one index per placeholder ({len(ctx)}), got {len(chosen)}")
    out = []
    for (prev, _), i in zip(ctx, chosen):
        label = parse_lead(prev)
        have = {(s.role, s.aspect) for s in doc.segments}
        pick = (doc.segments[i].role, doc.segments[i].aspect)
        out.append(dict(well_formed=label is not None, answerable=label in have, hit=label == pick,
                        same_speaker=label is not None and label[0] == pick[0]))
    return out


# --------------------------------------------------------------------------- stored sweep (CLI)
#: Sizes of the retrieval experiment per scale: films (training / test), candidate quotes per film,
#: retriever epochs and training seeds. The notebook's ``CFG`` takes them from here, so its live cells
#: and ``python -m neurips25.regen`` build the same split and train the same retrievers.
RETRIEVAL = {
    "small": dict(n_train=20, n_test=8, n_segments=36, epochs=25, seeds=[0, 1, 2]),
    "full": dict(n_train=50, n_test=30, n_segments=66, epochs=40, seeds=[0, 1, 2, 3, 4]),
}
#: The data seeds (``make_split(..., seed=s)``) of the stored sweep; the notebook runs seed 0 live.
DATA_SEEDS = (0, 1, 2)
#: Fresh data seeds for a replication of the R@1 gain with criteria fixed before it was run
#: (``--replication``, stored apart in ``notebooks/results/regen_replication.json``).
REPLICATION_DATA_SEEDS = (3, 4, 5, 6, 7, 8)


def retrieval_metrics(ranks) -> dict[str, float]:
    """R@1/5/10 and MRR of 1-based ranks pooled over placeholders (the notebook's ``metrics``)."""
    ranks = torch.as_tensor(ranks).float()
    r = recall_at_k(ranks)
    return {"R@1": r[1], "R@5": r[5], "R@10": r[10], "MRR": float((1 / ranks).mean())}


def retrieval_run(data_seed: int, *, n_train: int, n_test: int, n_segments: int, epochs: int,
                  seeds: Sequence[int], encoder=None, device: str | torch.device | None = None) -> dict:
    """One data seed of the retrieval experiment, built exactly as the notebook builds it.

    ``make_split(n_train, n_test, n_segments, seed=data_seed)``, a fresh MiniLM cache (``encoder``:
    ``None`` for a new ``SentenceEncoder``, or any callable texts -> unit rows), the training films
    then the test films embedded, the zero-shot baseline scored and one retriever trained per
    training seed in ``seeds``. Returns, per method, the 1-based rank of the true quote for every test
    placeholder (test films in order, their segments in order) and its R@1/5/10 and MRR."""
    data_seed = check_int(data_seed, "data_seed", 0)
    if not seeds:
        raise ValueError("seeds must hold at least one training seed")
    train_docs, test_docs = make_split(n_train, n_test, n_segments, seed=int(data_seed))
    encoder = SentenceEncoder(device="cpu") if encoder is None else encoder
    vocab = quote_vocab(train_docs)
    train_t, test_t = doc_tensors(train_docs, encoder, vocab), doc_tensors(test_docs, encoder, vocab)

    def entry(scores):
        ranks = torch.cat([rank_of_truth(s) for s in scores])
        return {"ranks": ranks.tolist(), "metrics": retrieval_metrics(ranks)}

    trained = {}
    for s in seeds:
        model = train_retriever(train_t, len(vocab), epochs=epochs, seed=int(s), device=device)
        trained[str(int(s))] = entry(score_docs(model.scores, test_t))
    return {"data_seed": int(data_seed), "test_films": [d.doc_id for d in test_docs],
            "n_placeholders": sum(len(d.segments) for d in test_docs),
            "zero_shot": entry(score_docs(zero_shot_scores, test_t)), "trained": trained}


def pooled_gain_ci(gains: Sequence, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """Mean over data seeds of the per-seed mean paired gain, with a percentile bootstrap CI.

    ``gains[d]`` holds one paired difference per test placeholder of data seed ``d`` (here: the
    trained retrievers' R@1 hit averaged over training seeds minus the zero-shot hit, the same
    placeholder on both sides). Each resample draws the placeholders of every data seed with
    replacement, within that seed (``numpy.random.default_rng(seed)``; per data seed in order, an
    ``(n_boot, n_d)`` index draw), and recomputes the statistic."""
    gains = [np.asarray(g, dtype=float) for g in gains]
    if not gains or any(g.ndim != 1 or g.size == 0 for g in gains):
        raise ValueError("gains must be a non-empty list of non-empty 1-d arrays (one per data seed)")
    if any(not np.isfinite(g).all() for g in gains):
        raise ValueError("gains must be finite")
    n_boot = check_int(n_boot, "n_boot")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    rng = np.random.default_rng(seed)
    boot = np.zeros(n_boot)
    for g in gains:
        boot += g[rng.integers(0, len(g), size=(n_boot, len(g)))].mean(1)
    boot /= len(gains)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return {"mean": float(np.mean([g.mean() for g in gains])), "per_seed": [float(g.mean()) for g in gains],
            "ci": [float(lo), float(hi)], "level": level, "n_boot": n_boot, "seed": seed}


def r1_gains(run: dict) -> np.ndarray:
    """Per test placeholder of one ``retrieval_run``: mean R@1 hit of the trained retrievers (over
    training seeds) minus the zero-shot hit."""
    trained = np.array([np.asarray(t["ranks"]) == 1 for t in run["trained"].values()], dtype=float)
    return trained.mean(0) - (np.asarray(run["zero_shot"]["ranks"]) == 1)


def retrieval_sweep(data_seeds: Sequence[int], *, n_train: int, n_test: int, n_segments: int, epochs: int,
                    seeds: Sequence[int], device: str | torch.device | None = None, log=None) -> dict:
    """``retrieval_run`` for every data seed (``NEURIPS25_SMOKE=1``: the first two data seeds and
    training seeds), plus the pooled R@1 gain and its bootstrap CI (``pooled_gain_ci``)."""
    from .runtime import cap

    if not data_seeds:
        raise ValueError("data_seeds must hold at least one seed")
    data_seeds, seeds = list(data_seeds)[:cap(len(data_seeds))], list(seeds)[:cap(len(seeds))]
    runs = {}
    for d in data_seeds:
        runs[str(d)] = retrieval_run(d, n_train=n_train, n_test=n_test, n_segments=n_segments, epochs=epochs,
                                     seeds=seeds, device=device)
        if log:
            m = runs[str(d)]
            log(f"data seed {d}: zero-shot R@1 {m['zero_shot']['metrics']['R@1']:.3f}, trained "
                + ", ".join(f"{t['metrics']['R@1']:.3f}" for t in m["trained"].values()))
    return {"config": dict(n_train=n_train, n_test=n_test, n_segments=n_segments, epochs=epochs,
                           seeds=[int(s) for s in seeds], data_seeds=[int(d) for d in data_seeds]),
            "runs": runs, "r1_gain": pooled_gain_ci([r1_gains(runs[str(d)]) for d in data_seeds])}


def main(argv: list[str] | None = None) -> None:
    """``python -m neurips25.regen [--scale small|full] [--data-seeds 0 1 2] [--seeds 0 1 2]``:
    regenerate the stored retrieval sweep ``notebooks/results/regen.json``: for each data seed the
    notebook's split and sizes (``RETRIEVAL[scale]``), the zero-shot MiniLM baseline and one trained
    retriever per training seed, with every test placeholder's rank of the true quote.
    ``--replication``: the same on ``REPLICATION_DATA_SEEDS`` (``regen_replication.json``);
    ``--full-sizes``: the same data seeds at ``RETRIEVAL["full"]``'s sizes, the paper's 66 candidates
    per film (``regen_full_sizes.json``)."""
    from .results import add_scale_arguments, save_results
    from .runtime import seed_everything

    p = argparse.ArgumentParser(prog="python -m neurips25.regen", description=main.__doc__)
    add_scale_arguments(p)
    p.add_argument("--data-seeds", type=int, nargs="+", default=list(DATA_SEEDS),
                   help="seeds of make_split (the notebook's live split is data seed 0)")
    p.add_argument("--seeds", type=int, nargs="+", default=None,
                   help="training seeds of the retriever (default: RETRIEVAL[scale]['seeds'])")
    p.add_argument("--replication", action="store_true",
                   help="the replication on fresh data seeds REPLICATION_DATA_SEEDS, written to "
                        "regen_replication.json (alias: python -m neurips25.regen_replication)")
    p.add_argument("--full-sizes", action="store_true",
                   help="the stored sweep's data seeds at the full scale's sizes (RETRIEVAL['full'], "
                        "also with --scale small), written to regen_full_sizes.json "
                        "(alias: python -m neurips25.regen_full_sizes)")
    a = p.parse_args(argv)
    if a.replication and a.data_seeds != list(DATA_SEEDS):
        p.error("--replication runs REPLICATION_DATA_SEEDS; do not pass --data-seeds with it")
    if a.replication and a.full_sizes:
        p.error("--replication and --full-sizes are separate studies; pass one of them")
    seed_everything(0)
    cmd = "python -m neurips25.regen " + " ".join(argv if argv is not None else sys.argv[1:])
    cfg = {**RETRIEVAL["full" if a.full_sizes else a.scale], **({"seeds": a.seeds} if a.seeds else {})}
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    data_seeds, slug = ((REPLICATION_DATA_SEEDS, "regen_replication") if a.replication
                        else (a.data_seeds, "regen_full_sizes" if a.full_sizes else "regen"))
    data = retrieval_sweep(data_seeds, **cfg, log=log)
    print(save_results(slug, data, cmd.strip(), seed=0, path=a.out, scale=a.scale))


if __name__ == "__main__":
    main()
