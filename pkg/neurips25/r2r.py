"""R2R — "Roads to Rome": token-level routing between a small (SLM) and a large (LLM) model.

Fu et al., *R2R: Efficiently Navigating Divergent Reasoning Paths with Small-Large Model Token
Routing*, NeurIPS 2025 (arXiv 2505.21600). At CPU scale:

* ``modchain`` — the synthetic reasoning task: chains of modular arithmetic written step by step,
  with interchangeable step separators (``;``, ``,``, ``.``) and both operand orders for ``+``, so
  that *neutral* disagreements (different token, same reasoning) are common.
* ``label_tokens`` / ``collect_router_data`` — the path-following labelling of Algorithm 1 with a
  programmatic ``verify`` (it replaces the paper's 72B judge model); y_l is the LLM's argmax token at
  every prefix of an LLM answer, greedy or sampled.
* ``Router`` — the MLP over [SLM last hidden state; embedding of the SLM token; top-k logits] (or a
  subset of these groups, ``feature_columns``), trained with BCE and ``pos_weight = n_neg / n_pos``
  (a ``LightningModule``).
* ``recall_threshold`` — the smallest LLM rate subject to recall(divergent) >= 0.95 on validation;
  ``fit_router`` (one validation split) and ``crossfit_router`` (out-of-fold scores by question).
* ``routed_generate`` — the inference loop: the SLM proposes each token; when the routing score is
  >= tau the LLM produces that token instead (no rollback). Both models keep a KV cache; the LLM
  catches up on the tokens it has not read in one parallel (prefill) call when it is needed.
* ``activated_params`` — the cost model (average activated parameters per token).
* ``CONFIG``, ``heldout_run`` and ``main`` — the chapter's experiment: its sizes per scale, the 5-fold
  held-out protocol by question (routers trained on the other folds, every method's threshold grid),
  and ``python -m neurips25.r2r [--scale small|full] [--out PATH]``, which trains the chapter's models,
  runs the protocol on both pairs (split seed 0 on the first; the three split seeds of the ablation on
  the pair with two styles) and writes ``notebooks/results/r2r.json``; the notebook runs a part of it
  live and checks it against that file.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Sequence

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips25.lm import cache_kwarg, encode_batch, generate, output_cache
from neurips25.runtime import check_int

__all__ = ["OPS", "SEPARATORS", "FEATURES", "feature_columns", "modchain", "restyle", "answer_of", "is_correct", "step_values",
           "verify", "label_tokens", "collect_router_data", "router_features", "Router", "train_router",
           "recall_threshold", "fit_router", "crossfit_router",
           "routed_generate", "RoutedGeneration", "router_score", "entropy_score", "random_score",
           "oracle_score", "activated_params", "CONFIG", "DIFF", "GRIDS", "routers_for", "task", "fine_tune",
           "accuracy", "route_counts", "heldout_run", "encode_run", "decode_run", "run_difference",
           "run_experiment", "main"]

OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
SEPARATORS = (";", ",", ".")
IDENTICAL, NEUTRAL, DIVERGENT = 0, 1, 2


# ----------------------------------------------------------------------------------------- task
def modchain(n: int, *, n_steps: int = 2, modulus: int = 5, ops: str = "+-", swap: bool = True,
             seed: int = 0) -> list[tuple[str, str]]:
    """``n`` (prompt, answer) pairs, e.g. ``("Q 3 + 4 - 2", "4 + 3 = 2 ; 2 - 2 = 0 . A 0")``.

    Each step ``a op b = c`` is followed by a separator drawn uniformly from ``SEPARATORS``, and with
    ``swap`` a ``+`` step is written ``a + b`` or ``b + a`` at random. Both choices are
    interchangeable, so a model that picks the other one is *different* but not *divergent*.
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not isinstance(n_steps, int) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive int, got {n_steps!r}")
    if not isinstance(modulus, int) or not 2 <= modulus <= 10:
        raise ValueError(f"modulus must be an int in [2, 10] (one token per digit), got {modulus!r}")
    if not ops or any(o not in OPS for o in ops):
        raise ValueError(f"ops must be a non-empty string over {''.join(OPS)!r}, got {ops!r}")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a = rng.randrange(modulus)
        q, steps = ["Q", str(a)], []
        for _ in range(n_steps):
            op, b = rng.choice(ops), rng.randrange(modulus)
            c = OPS[op](a, b) % modulus
            q += [op, str(b)]
            x, y = (b, a) if swap and op == "+" and rng.random() < 0.5 else (a, b)
            steps += [str(x), op, str(y), "=", str(c), rng.choice(SEPARATORS)]
            a = c
        out.append((" ".join(q), " ".join(steps + ["A", str(a)])))
    return out


def restyle(pairs: Sequence[tuple[str, str]], weights: Sequence[float], *, seed: int = 0) -> list[tuple[str, str]]:
    """A model's *house style*: the same (prompt, answer) pairs with every step separator redrawn with
    probabilities ``weights`` over ``SEPARATORS`` (questions, operand orders and values unchanged).

    A model trained on restyled answers prefers its own separator where another model trained on
    ``modchain``'s uniform draw prefers its own: the two disagree on tokens that change nothing (the
    paper's *neutral* differences, e.g. R1-1.5B and R1-32B phrasing a step differently).
    """
    w = [float(x) for x in weights]
    if len(w) != len(SEPARATORS) or any(not x >= 0 for x in w) or sum(w) <= 0:
        raise ValueError(f"weights must be {len(SEPARATORS)} non-negative numbers (one per separator "
                         f"{SEPARATORS}) with a positive sum, got {weights!r}")
    rng = random.Random(seed)

    def redraw(answer: str) -> str:
        return " ".join(rng.choices(SEPARATORS, weights=w)[0] if t in SEPARATORS else t for t in answer.split())
    return [(p, redraw(a)) for p, a in pairs]


def answer_of(prompt: str, modulus: int = 5) -> int:
    """The true final value of a ``modchain`` prompt."""
    w = prompt.split()
    a = int(w[1])
    for op, b in zip(w[2::2], w[3::2]):
        a = OPS[op](a, int(b)) % modulus
    return a


def is_correct(prompt: str, response: str, modulus: int = 5) -> bool:
    """Final-answer accuracy: the token after ``A`` equals the true value."""
    w = response.split()
    return "A" in w and w.index("A") + 1 < len(w) and w[w.index("A") + 1] == str(answer_of(prompt, modulus))


# ------------------------------------------------------------------------- Algorithm 1: labelling
def step_values(words: Sequence[str]) -> list[str]:
    """The conclusions a text commits to: every token after ``=`` or ``A`` (separators ignored)."""
    return [words[i + 1] if i + 1 < len(words) else "" for i, w in enumerate(words) if w in ("=", "A")]


def verify(s_small: Sequence[str], s_large: Sequence[str]) -> bool:
    """Programmatic verifier: do two continuations reach the same conclusions? (``True`` = neutral).

    The paper asks a 72B LLM whether the divergence changes meaning, reasoning or conclusion; on
    ModChain that question has an exact answer — the step values and the final answer.
    """
    return step_values(s_small) == step_values(s_large)


def _sentence(tok, ids: list[int], max_tokens: int) -> list[int]:
    """Cut a continuation (token ids) at the end of the current sentence: after the first token that
    reads as a separator (kept), or at ``max_tokens``."""
    out = []
    for i in ids[:max_tokens]:
        out.append(i)
        if tok.decode([i], clean_up_tokenization_spaces=False).strip() in SEPARATORS:
            break
    return out


def _words(tok, ids: list[int]) -> list[str]:
    """The words of a token sequence, special tokens dropped: the decoded text split at whitespace.
    Tokenizer-independent (for ModChain's word tokenizer these are exactly its tokens; for a real
    checkpoint's subword tokenizer, the words of the text it writes)."""
    return tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False).split()


@torch.no_grad()
def label_tokens(llm, tok, prefixes: Sequence[list[int]], y_s: Sequence[int], y_l: Sequence[int], *,
                 max_new_tokens: int = 8) -> list[int]:
    """Algorithm 1 at the positions given: 0 identical, 1 neutral, 2 divergent.

    ``prefixes`` are token ids after BOS (prompt + response so far). Where ``y_s == y_l`` the label is
    *identical*; otherwise the LLM continues greedily from ``prefix + y_s`` and from ``prefix + y_l``
    to the end of the sentence and ``verify`` compares the two continuations' words (decoded text, so
    any tokenizer works).
    """
    if not (len(prefixes) == len(y_s) == len(y_l)):
        raise ValueError(f"prefixes, y_s and y_l must have the same length, got {len(prefixes)}, {len(y_s)}, {len(y_l)}")
    labels = [IDENTICAL] * len(prefixes)
    diff = [i for i in range(len(prefixes)) if int(y_s[i]) != int(y_l[i])]
    if not diff:
        return labels
    eos = tok.eos_token_id
    seqs, ends = [], []
    for i in diff:
        for y in (int(y_s[i]), int(y_l[i])):
            seqs.append(list(prefixes[i]) + [y])
            ends.append(y == eos)  # EOS ends the sentence (and the answer) at once
    conts = _greedy_ids(llm, tok, seqs, max_new_tokens)
    for k, i in enumerate(diff):
        texts = []
        for j in (2 * k, 2 * k + 1):
            cont = [] if ends[j] else _sentence(tok, list(conts[j]), max_new_tokens)
            texts.append(_words(tok, seqs[j] + cont))
        labels[i] = NEUTRAL if verify(*texts) else DIVERGENT
    return labels


def _greedy_ids(model, tok, seqs: list[list[int]], max_new_tokens: int) -> list[list[int]]:
    """Greedy continuation of BOS-less id sequences with the toolkit's ``generate`` (left padding
    with the tokenizer's pad id, position ids, KV cache, the model's device). The ids go through
    the text (``decode`` → ``encode``), exact for the word tokenizer of ModChain and for byte-level
    BPE up to re-merging."""
    texts = [tok.decode(s_, clean_up_tokenization_spaces=False) for s_ in seqs]
    return generate(model, tok, texts, max_new_tokens=max_new_tokens).tokens


def _right_padded(seqs: list[list[int]], tok, device) -> tuple[torch.Tensor, torch.Tensor]:
    """BOS + each sequence, right-padded with the tokenizer's pad id, on ``device``."""
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    T = max(len(s_) for s_ in seqs) + 1
    ids = torch.full((len(seqs), T), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r, s_ in enumerate(seqs):
        ids[r, : len(s_) + 1] = torch.tensor([tok.bos_token_id] + list(s_))
        mask[r, : len(s_) + 1] = 1
    return ids.to(device), mask.to(device)


@torch.no_grad()
def collect_router_data(llm, slm, tok, prompts: Sequence[str], *, max_new_tokens: int = 32, top_k: int = 8,
                        n_samples: int = 0, temperature: float = 1.0, seed: int = 0) -> dict:
    """The data pipeline (Sec. 3 / Alg. 1): LLM responses → SLM prefill → continuation labels.

    The responses are the LLM's greedy answer to every prompt plus ``n_samples`` answers sampled at
    ``temperature`` (more labelled paths per question). Returns a dict of per-token rows:
    ``features`` (for ``Router``), ``label`` (0/1/2 = identical/neutral/divergent), ``divergent``
    and ``different`` (0/1 targets) and ``query`` (the index of the prompt).
    """
    prompts = list(prompts)
    n_samples = check_int(n_samples, "n_samples", 0)
    gen = generate(llm, tok, prompts, max_new_tokens=max_new_tokens).tokens
    qid = list(range(len(prompts)))
    for k in range(n_samples):
        gen += generate(llm, tok, prompts, max_new_tokens=max_new_tokens, temperature=temperature,
                        seed=seed + k).tokens
        qid += list(range(len(prompts)))
    p_ids = [list(tok(prompts[q], add_special_tokens=False)["input_ids"]) for q in qid]
    # right-padded teacher forcing of the LLM's path through the SLM
    ids, mask = _right_padded([p + r for p, r in zip(p_ids, gen)], tok, _device(slm))
    out = slm(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    greedy = out.logits.argmax(-1).tolist()  # one read-back, not one per token
    # y_l = argmax P_LLM(. | S_<i) (Alg. 1, line 2): the LLM's greedy token at every prefix of the path.
    # On a sampled path that is not always the sampled token: labelling the sampled token would mark
    # the LLM's own sampling slips as "divergent" tokens that no SLM-side router can predict.
    dev_l = _device(llm)
    greedy_l = llm(input_ids=ids.to(dev_l), attention_mask=mask.to(dev_l)).logits.argmax(-1).tolist()
    prefixes, ys, yl, rows, query = [], [], [], [], []
    for r, (p, g) in enumerate(zip(p_ids, gen)):
        for j in range(len(g)):
            at = len(p) + j  # position whose output predicts response token j (BOS shifts by one)
            prefixes.append(p + g[:j])
            ys.append(greedy[r][at])
            yl.append(greedy_l[r][at])
            rows.append((r, at))
            query.append(qid[r])
    labels = label_tokens(llm, tok, prefixes, ys, yl)
    r_idx = torch.tensor([a for a, _ in rows], device=ids.device)
    t_idx = torch.tensor([b for _, b in rows], device=ids.device)
    feats = router_features(slm, out.hidden_states[-1][r_idx, t_idx], out.logits[r_idx, t_idx], top_k).cpu()
    lab = torch.tensor(labels)
    return dict(features=feats, label=lab, divergent=(lab == DIVERGENT).float(), different=(lab != IDENTICAL).float(),
                query=torch.tensor(query), responses=[tok.decode(g, skip_special_tokens=True) for g in gen])


# -------------------------------------------------------------------------------------- router
FEATURES = ("hidden", "token", "logits")


def _check_inputs(inputs: Sequence[str]) -> tuple[str, ...]:
    inputs = tuple(inputs)
    if not inputs or any(g not in FEATURES for g in inputs):
        raise ValueError(f"inputs must be a non-empty subset of {FEATURES}, got {inputs!r}")
    return inputs


def router_features(slm, hidden: torch.Tensor, logits: torch.Tensor, top_k: int = 8,
                    inputs: Sequence[str] = FEATURES) -> torch.Tensor:
    """[h_SLM ; E_SLM(y_s) ; top-k logits sorted] — the router's inputs (Sec. 4.1), shape (N, 2d + k).
    ``inputs`` computes only some of these groups (in that order; no embedding lookup without
    ``"token"``); without ``"hidden"``, ``hidden`` may be ``None``."""
    inputs = _check_inputs(inputs)
    if hidden is None and "hidden" not in inputs:
        hidden = logits[:, :0]  # not read: an empty (N, 0) stand-in for the shape check
    if hidden is None:
        raise ValueError("hidden must be the SLM's hidden states (N, d) when inputs include 'hidden', got None")
    if hidden.ndim != 2 or logits.ndim != 2 or hidden.shape[0] != logits.shape[0]:
        raise ValueError(f"hidden (N, d) and logits (N, V) must be 2-D with equal N, got {tuple(hidden.shape)}, "
                         f"{tuple(logits.shape)}")
    if not isinstance(top_k, int) or not 1 <= top_k <= logits.shape[1]:
        raise ValueError(f"top_k must be an int in [1, vocab size {logits.shape[1]}], got {top_k!r}")
    parts = {"hidden": lambda: hidden, "token": lambda: slm.get_input_embeddings()(logits.argmax(-1)),
             "logits": lambda: logits.topk(top_k, -1).values}
    return torch.cat([parts[g]() for g in FEATURES if g in inputs], -1).float()


def feature_columns(d: int, top_k: int, inputs: Sequence[str] = FEATURES) -> list[int]:
    """Columns of ``router_features`` that hold the feature groups ``inputs`` (any of ``FEATURES``:
    the SLM's last hidden state, the embedding of its token, its top-k logits), in that order."""
    inputs = _check_inputs(inputs)
    spans = {"hidden": range(0, d), "token": range(d, 2 * d), "logits": range(2 * d, 2 * d + top_k)}
    return [i for g in FEATURES if g in inputs for i in spans[g]]


def _device(model) -> torch.device:
    return next(model.parameters()).device


class _Residual(nn.Module):
    def __init__(self, h: int, dropout: float = 0.0):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(h), nn.Linear(h, h), nn.GELU(), nn.Dropout(dropout), nn.Linear(h, h))

    def forward(self, x):
        return x + self.net(x)


class Router(L.LightningModule):
    """MLP with residual blocks → one logit; BCE with ``pos_weight = n_neg / n_pos`` (Sec. 4.1).

    ``columns`` (optional) picks the input columns the router reads (see ``feature_columns``); it is
    always called on the full feature vector."""

    def __init__(self, in_dim: int, hidden: int = 64, n_blocks: int = 2, lr: float = 3e-3, pos_weight: float = 1.0,
                 dropout: float = 0.0, weight_decay: float = 1e-4, columns: Sequence[int] | None = None):
        super().__init__()
        self.save_hyperparameters()
        cols = list(range(in_dim)) if columns is None else [int(c) for c in columns]
        if not cols or min(cols) < 0 or max(cols) >= in_dim:
            raise ValueError(f"columns must be indices in [0, {in_dim}), got {columns!r}")
        self.register_buffer("cols", torch.tensor(cols))
        self.net = nn.Sequential(nn.Linear(len(cols), hidden), *[_Residual(hidden, dropout) for _ in range(n_blocks)],
                                 nn.LayerNorm(hidden), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x[..., self.cols]).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.binary_cross_entropy_with_logits(self(x), y, pos_weight=torch.tensor(self.hparams.pos_weight))
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)


def train_router(features: torch.Tensor, target: torch.Tensor, *, epochs: int = 30, hidden: int = 64,
                 n_blocks: int = 2, batch_size: int = 256, lr: float = 3e-3, dropout: float = 0.0, weight_decay: float = 1e-4,
                 columns: Sequence[int] | None = None, seed: int = 0) -> Router:
    """Fit a ``Router`` on (features, 0/1 target) with the class-balancing ``pos_weight``; ``columns``
    restricts its inputs to some feature groups (``feature_columns``)."""
    from torch.utils.data import DataLoader, TensorDataset

    from neurips25.runtime import cap, make_trainer

    if features.ndim != 2 or target.shape != (features.shape[0],):
        raise ValueError(f"features must be (N, D) and target (N,), got {tuple(features.shape)}, {tuple(target.shape)}")
    n_pos = float(target.sum())
    if n_pos == 0 or n_pos == len(target):
        raise ValueError("target must contain both classes (0 and 1)")
    L.seed_everything(seed, verbose=False)
    # standardise inputs once; the statistics become part of the model (a frozen first layer shift)
    mu, sd = features.mean(0), features.std(0) + 1e-6
    router = Router(features.shape[1], hidden=hidden, n_blocks=n_blocks, lr=lr, pos_weight=(len(target) - n_pos) / n_pos,
                    dropout=dropout, weight_decay=weight_decay, columns=columns)
    router.register_buffer("mu", mu)
    router.register_buffer("sd", sd)
    dl = DataLoader(TensorDataset((features - mu) / sd, target.float()), batch_size=batch_size, shuffle=True,
                    generator=torch.Generator().manual_seed(seed))
    # a small MLP on a few thousand rows: the CPU is fastest (the features are CPU tensors)
    make_trainer(cap(epochs), accelerator="cpu").fit(router, dl)
    return router.eval()


def _functional_mlp(net: nn.Sequential) -> Callable:
    """``net`` (a ``Router``'s MLP) as a closure over its weights that calls the same tensor ops
    (``F.linear``, ``F.layer_norm``, ``F.gelu``; dropout is off at inference) without the
    ``nn.Module`` call machinery: bitwise the same output, about half the per-token time at
    batch 1, where the router's few ops are dwarfed by Python overhead."""
    first, *blocks, norm, last = net

    def ln(x, m):
        return F.layer_norm(x, m.normalized_shape, m.weight, m.bias, m.eps)

    def f(x):
        x = F.linear(x, first.weight, first.bias)
        for b in blocks:
            norm_b, lin1, _, _, lin2 = b.net
            x = x + F.linear(F.gelu(F.linear(ln(x, norm_b), lin1.weight, lin1.bias)), lin2.weight, lin2.bias)
        return F.linear(ln(x, norm), last.weight, last.bias)
    return f


def router_score(router: Router, slm, top_k: int = 8) -> Callable:
    """Score function for ``routed_generate``: the router's probability that the SLM token is divergent.

    Runs in the same step as the SLM, on its outputs (one small MLP call per decoding step), on the
    SLM's device: a copy of the router is moved there once, so nothing crosses devices per token.
    Only the feature groups the router reads are computed (e.g. no embedding lookup for a router
    on the logits alone), and the score's ``needs_hidden`` tells ``routed_generate`` whether the
    SLM must return its hidden states. The MLP runs as ``_functional_mlp``."""
    import copy

    net = copy.deepcopy(router).to(_device(slm)).eval()
    d = slm.get_input_embeddings().embedding_dim
    cols = net.cols.tolist()
    groups = [g for g in FEATURES if set(feature_columns(d, top_k, [g])) & set(cols)]
    present = feature_columns(d, top_k, groups)  # full-vector columns of the groups computed below
    where = [present.index(c) for c in cols]
    where = None if where == list(range(len(present))) else torch.tensor(where, device=net.cols.device)
    mu, sd = net.mu[net.cols], net.sd[net.cols]
    mlp = _functional_mlp(net.net)

    def score(hidden, logits, ids, mask):
        x = router_features(slm, hidden, logits, top_k, groups)
        x = x if where is None else x[:, where]
        return torch.sigmoid(mlp((x - mu) / sd).squeeze(-1).double())
    score.needs_hidden = "hidden" in groups
    return score


def entropy_score(hidden, logits, ids=None, mask=None):
    """Baseline: normalised entropy of the SLM's next-token distribution, H / log V ∈ [0, 1]."""
    logp = torch.log_softmax(logits.double(), -1)
    return -(logp.exp() * logp).sum(-1) / torch.log(torch.tensor(float(logits.shape[-1]), dtype=torch.float64))


entropy_score.needs_hidden = False


def random_score(seed: int = 0) -> Callable:
    """Baseline: uniform random scores, so threshold tau sends a fraction ≈ 1 - tau to the LLM."""
    gen = torch.Generator().manual_seed(seed)

    def score(hidden, logits, ids, mask):
        return torch.rand(logits.shape[0], generator=gen, dtype=torch.float64).to(logits.device)
    score.needs_hidden = False
    return score


def oracle_score(llm, tok) -> Callable:
    """Upper bound: Algorithm 1 run online — 1 where the SLM token is divergent, else 0 (needs the LLM)."""
    def score(hidden, logits, ids, mask):
        y_s = logits.argmax(-1)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        y_l = llm(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -1].argmax(-1)
        prefixes = [row[m.bool()].tolist()[1:] for row, m in zip(ids, mask)]  # drop pads and BOS
        lab = label_tokens(llm, tok, prefixes, y_s.tolist(), y_l.tolist())
        return (torch.tensor(lab) == DIVERGENT).double().to(logits.device)
    score.needs_hidden = False
    return score


def _check_target(target: str) -> None:
    if target not in ("divergent", "different"):
        raise ValueError(f"target must be 'divergent' or 'different', got {target!r}")


@torch.no_grad()
def _router_prob(router: Router, features: torch.Tensor) -> torch.Tensor:
    """P(divergent) of a ``train_router`` router on raw (unstandardised) ``router_features`` rows."""
    return torch.sigmoid(router((features - router.mu) / router.sd))


def fit_router(rows: dict, train: torch.Tensor, val: torch.Tensor, *, target: str = "divergent",
               recall: float = 0.95, epochs: int = 30, seed: int = 0, **router_kw) -> tuple[Router, float]:
    """Train a ``Router`` on the ``train`` rows of ``collect_router_data`` output and pick its
    threshold on the ``val`` rows: recall(divergent) >= ``recall`` (Sec. 4.1: the threshold is chosen
    on validation data). ``target`` is what the router learns: ``"divergent"`` (R2R) or
    ``"different"`` (the ablation); the threshold always targets the divergent tokens. ``router_kw``
    (``hidden``, ``dropout``, ``weight_decay``, ``columns``, ...) go to ``train_router``."""
    _check_target(target)
    train, val = torch.as_tensor(train, dtype=torch.bool), torch.as_tensor(val, dtype=torch.bool)
    n = len(rows["label"])
    if train.shape != (n,) or val.shape != (n,):
        raise ValueError(f"train and val must be boolean masks of length {n}")
    if bool((train & val).any()):
        raise ValueError("train and val rows must not overlap")
    router = train_router(rows["features"][train], rows[target][train], epochs=epochs, seed=seed, **router_kw)
    p = _router_prob(router, rows["features"][val])
    return router, recall_threshold(p, rows["divergent"][val], recall)


def crossfit_router(rows: dict, train: torch.Tensor, *, k: int = 4, target: str = "divergent",
                    recall: float = 0.95, epochs: int = 30, seed: int = 0, **router_kw) -> tuple[Router, float]:
    """A ``Router`` trained on all ``train`` rows, with its threshold chosen by ``k``-fold cross-fitting
    *by question* inside ``train``: k routers, each trained on k - 1 parts, score the rows of the part
    they did not see, and ``recall_threshold`` is applied to these out-of-fold scores.

    Every training question thus also serves as validation data (the paper tunes the threshold on a
    large held-out set; with a few dozen questions, a single validation split holds so few divergent
    tokens that recall 0.95 means "catch every one of them", and one hard token sets the threshold)."""
    _check_target(target)
    train = torch.as_tensor(train, dtype=torch.bool)
    n = len(rows["label"])
    if train.shape != (n,):
        raise ValueError(f"train must be a boolean mask of length {n}")
    qs = rows["query"][train].unique()
    if not isinstance(k, int) or not 2 <= k <= len(qs):
        raise ValueError(f"k must be an int in [2, number of training questions {len(qs)}], got {k!r}")
    perm = qs[torch.randperm(len(qs), generator=torch.Generator().manual_seed(seed))]
    oof = torch.full((n,), float("nan"))
    for part in perm.tensor_split(k):
        held = train & torch.isin(rows["query"], part)
        r = train_router(rows["features"][train & ~held], rows[target][train & ~held], epochs=epochs, seed=seed,
                         **router_kw)
        oof[held] = _router_prob(r, rows["features"][held])
    router = train_router(rows["features"][train], rows[target][train], epochs=epochs, seed=seed, **router_kw)
    return router, recall_threshold(oof[train], rows["divergent"][train], recall)


def recall_threshold(scores: torch.Tensor, labels: torch.Tensor, recall: float = 0.95) -> float:
    """The largest threshold tau with recall(score >= tau | label = 1) >= ``recall``.

    The largest such tau sends the fewest tokens to the LLM — the paper's selection rule.
    """
    scores, labels = torch.as_tensor(scores, dtype=torch.float64), torch.as_tensor(labels)
    if scores.shape != labels.shape or scores.ndim != 1:
        raise ValueError(f"scores and labels must be 1-D of equal length, got {tuple(scores.shape)}, {tuple(labels.shape)}")
    if not torch.isfinite(scores).all():
        raise ValueError("scores must be finite (a NaN score would silently drop out of the sort)")
    if isinstance(recall, bool) or not isinstance(recall, (int, float)) or not 0.0 < recall <= 1.0:
        raise ValueError(f"recall must be a float in (0, 1], got {recall!r}")
    pos = scores[labels.bool()].sort(descending=True).values
    if len(pos) == 0:
        raise ValueError("labels contain no positive (divergent) example")
    k = int(torch.ceil(torch.tensor(recall * len(pos) - 1e-9)))  # positives that must score >= tau
    return float(pos[max(k, 1) - 1])


# ----------------------------------------------------------------------------------- inference
@dataclass
class RoutedGeneration:
    """``texts``/``tokens`` per prompt; ``from_llm`` per generated token; ``llm_rate`` overall."""

    texts: list[str]
    tokens: list[list[int]]
    from_llm: list[list[bool]]
    llm_rate: float


@torch.no_grad()
def routed_generate(slm, llm, tok, prompts: Sequence[str], score: Callable, tau: float, *,
                    max_new_tokens: int = 32) -> RoutedGeneration:
    """R2R inference (Sec. 4.2): greedy SLM decoding; a token whose score is >= ``tau`` is replaced by
    the LLM's greedy token at the same prefix. ``tau = 0`` is LLM-only, ``tau = 1`` SLM-only.

    ``score(hidden, logits, ids, mask)`` gets the SLM's last hidden state and logits, and the
    left-padded prefix with its attention mask; a score with ``needs_hidden = False`` (e.g. a
    router on the logits alone, the entropy) gets ``hidden=None`` and the SLM skips returning
    its hidden states. Both models keep a KV cache. The SLM reads every
    token as it is written; the LLM runs only at steps where some row is routed, and then reads all
    the tokens written since its last call in one parallel (prefill) pass before producing the next
    token — the paper's scheme, which replaces most sequential LLM decode steps by SLM steps.
    Padding uses the tokenizer's pad id and all tensors live on the SLM's device.
    """
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must be a float in [0, 1] (0 = LLM only, 1 = SLM only), got {tau!r}")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
    dev = _device(slm)
    need_hidden = 0.0 < tau < 1.0 and getattr(score, "needs_hidden", True)
    ids, mask, pos = (t.to(dev) for t in encode_batch(tok, list(prompts), add_bos=True, side="left"))
    ckw_s, ckw_l, cache_s, cache_l, seen_l = cache_kwarg(slm), cache_kwarg(llm), None, None, 0
    B, eos = ids.shape[0], tok.eos_token_id
    pad = tok.pad_token_id if tok.pad_token_id is not None else eos
    done = torch.zeros(B, dtype=torch.bool, device=dev)
    lengths = torch.zeros(B, dtype=torch.long, device=dev)
    new, routed = [], []
    step_ids, step_pos = ids, pos
    for _ in range(max_new_tokens):
        kw = dict(input_ids=step_ids, attention_mask=mask, position_ids=step_pos, use_cache=True,
                  output_hidden_states=need_hidden)
        if cache_s is not None:
            kw[ckw_s] = cache_s
        out = slm(**kw)
        cache_s = output_cache(out)
        logits = out.logits[:, -1]
        nxt = logits.argmax(-1)
        if tau >= 1.0:
            go = torch.zeros(B, dtype=torch.bool, device=dev)
        elif tau <= 0.0:
            go = ~done
        else:  # p is clamped below 1 so that tau = 1 can never route
            hidden = out.hidden_states[-1][:, -1] if need_hidden else None
            p = score(hidden, logits, ids, mask).clamp(0.0, 1 - 1e-12)
            go = (p >= tau) & ~done
        if bool(go.any()):  # the LLM catches up on the unread tokens (one prefill), then decodes one
            kw = dict(input_ids=ids[:, seen_l:], attention_mask=mask, position_ids=pos[:, seen_l:],
                      use_cache=True)
            if cache_l is not None:
                kw[ckw_l] = cache_l
            out_l = llm(**kw)
            cache_l, seen_l = output_cache(out_l), ids.shape[1]
            nxt = torch.where(go, out_l.logits[:, -1].argmax(-1), nxt)
        nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
        lengths += (~done).long()
        new.append(nxt)
        routed.append(go)
        done = done | (nxt == eos)
        ids = torch.cat([ids, nxt[:, None]], 1)
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
        pos = torch.cat([pos, pos[:, -1:] + 1], 1)
        step_ids, step_pos = nxt[:, None], pos[:, -1:]
        if bool(done.all()):
            break
    new, routed = torch.stack(new, 1).cpu(), torch.stack(routed, 1).cpu()
    tokens = [new[i, : int(n)].tolist() for i, n in enumerate(lengths)]
    from_llm = [routed[i, : int(n)].tolist() for i, n in enumerate(lengths)]
    n_tok = int(lengths.sum())
    return RoutedGeneration(texts=[tok.decode(t, skip_special_tokens=True) for t in tokens], tokens=tokens,
                            from_llm=from_llm, llm_rate=sum(map(sum, from_llm)) / max(n_tok, 1))


def activated_params(n_slm: int, n_llm: int, llm_rate: float, n_router: int = 0) -> float:
    """Cost model: average parameters activated per generated token, N_S + N_R + r * N_L."""
    if not 0.0 <= llm_rate <= 1.0:
        raise ValueError(f"llm_rate must be in [0, 1], got {llm_rate!r}")
    return n_slm + n_router + llm_rate * n_llm


# ---------------------------------------------------------------------------- the experiment
_SMALL = dict(
    n_train=4000,
    modulus=5,
    ops="+-",
    n_steps=1,
    lr=5e-3,
    llm=dict(n_layer=4, n_embd=64, n_head=4),
    llm_steps=400,
    slm=dict(n_layer=1, n_embd=32, n_head=2),
    slm_steps=400,
    top_k=8,
    # the SLM's top-k logits only, a small MLP with the paper's dropout: with 40 training
    # questions the hidden state is a lookup key for them (see the chapter)
    router=dict(inputs=("logits",), hidden=16, n_blocks=1, dropout=0.1, weight_decay=1e-2, epochs=10),
    recall=0.95,
    inner_folds=4,  # threshold by cross-fitting inside the training questions
    max_new_tokens=12,
    n_samples=3,
    folds=5,
    split_seed=0,
    # the second pair's SLM writes "," after 80% of its steps (its house style)
    slm_style=(0.1, 0.8, 0.1),
    bench_questions=20,
    n_questions=None,  # all distinct questions (50)
)
CONFIG = {
    "small": _SMALL,
    # the paper: R1-1.5B SLM and R1-32B LLM (21x), on AIME/GPQA/LiveCodeBench; full: two-step chains
    # mod 10 with * (9,000 distinct questions, 500 of them routed), LLM/SLM ~ 21x; the protocol
    # (top-k, recall, folds, samples, split seed, styles) as in small
    "full": dict(
        _SMALL,
        n_train=40000,
        modulus=10,
        ops="+-*",
        n_steps=2,
        lr=3e-3,
        llm=dict(n_layer=6, n_embd=256, n_head=8),
        llm_steps=4000,
        slm=dict(n_layer=2, n_embd=96, n_head=4),
        slm_steps=1500,
        # the paper's inputs (hidden state, token embedding, top-k logits) and router shape
        # (residual MLP, dropout 0.1); 400 training questions per fold
        router=dict(inputs=("hidden", "token", "logits"), hidden=64, n_blocks=2, dropout=0.1, weight_decay=1e-2,
                    epochs=20),
        max_new_tokens=24,
        bench_questions=50,
        n_questions=500,
    ),
}
DIFF = "router on 'different'"
# the thresholds each method is run at on the held-out folds (its accuracy-vs-LLM-rate curve)
GRIDS = {
    "R2R": (0.001, 0.005, 0.02, 0.1, 0.3, 0.6, 0.9, 0.99),
    DIFF: (0.001, 0.005, 0.02, 0.1, 0.3, 0.6, 0.9, 0.99),
    "SLM entropy": (0.1, 0.2, 0.3, 0.4, 0.5, 0.6),
    "random": (0.5, 0.7, 0.8, 0.9, 0.95, 0.98),
}


def routers_for(inputs: Sequence[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The trained routers, name: (training target, router inputs): R2R's, the ablation on
    'different' tokens (same inputs) and R2R's on the paper's inputs (``FEATURES``)."""
    inputs = _check_inputs(inputs)
    return {"R2R": ("divergent", inputs), DIFF: ("different", inputs), "R2R, paper's inputs": ("divergent", FEATURES)}


def task(cfg: dict) -> tuple[list[tuple[str, str]], list[str]]:
    """The training answers (``modchain``, seed 0) and the sorted distinct questions, a fixed random
    subset of ``cfg["n_questions"]`` of them when set (10 under ``NEURIPS25_SMOKE=1``)."""
    from neurips25.runtime import cap

    train = modchain(cfg["n_train"], n_steps=cfg["n_steps"], modulus=cfg["modulus"], ops=cfg["ops"], seed=0)
    questions = sorted({p for p, _ in train})
    if cfg["n_questions"]:
        questions = sorted(random.Random(0).sample(questions, cfg["n_questions"]))
    return train, questions[: cap(len(questions), 10)]


def fine_tune(model, tok, pairs: Sequence[tuple[str, str]], cfg: dict, steps: int):
    """``neurips25.lm.train_lm`` with the chapter's settings: loss on the answer only, learning rate
    ``cfg["lr"]``, 10 warm-up steps, batches of 32; ``steps`` (20 under ``NEURIPS25_SMOKE=1``)."""
    from neurips25.lm import train_lm
    from neurips25.runtime import cap

    return train_lm(model, tok, list(pairs), steps=cap(steps, 20), lr=cfg["lr"], warmup=10, batch_size=32,
                    mask="answer")


def accuracy(prompts: Sequence[str], texts: Sequence[str], modulus: int = 5) -> float:
    """Share of ``texts`` whose final value answers its prompt (``is_correct``)."""
    if len(prompts) != len(texts) or len(prompts) == 0:
        raise ValueError(f"prompts and texts must be non-empty and of equal length, got {len(prompts)} "
                         f"prompts and {len(texts)} texts")
    return float(np.mean([is_correct(p, t, modulus) for p, t in zip(prompts, texts)]))


def route_counts(slm, llm, tok, prompts: Sequence[str], score: Callable, tau: float, *, max_new_tokens: int,
                 modulus: int) -> np.ndarray:
    """``routed_generate`` summed over ``prompts``: [tokens from the LLM, tokens, correct answers]."""
    g = routed_generate(slm, llm, tok, prompts, score, tau, max_new_tokens=max_new_tokens)
    return np.array([sum(map(sum, g.from_llm)), sum(map(len, g.from_llm)),
                     accuracy(prompts, g.texts, modulus) * len(prompts)])


def heldout_run(llm, slm, tok, questions: Sequence[str], rows: dict, split_seed: int, cfg: dict, *,
                max_new_tokens: int, names: Sequence[str] | None = None):
    """The 5-fold held-out protocol for one split seed: the questions are split into ``cfg["folds"]``
    folds; for each fold every router of ``routers_for`` is trained on the labelled ``rows`` of the
    other folds' questions with its threshold cross-fitted inside them (``crossfit_router``), and the
    fold's questions are routed at that threshold and at every threshold of ``GRIDS`` (the untrained
    SLM entropy and random scores too). ``names``: the methods to run (default all; each method's
    numbers do not depend on which others run: every router training reseeds).

    Returns the folds (arrays of question indices), ``sums`` (method -> threshold -> [LLM tokens,
    tokens, correct] summed over the folds), ``at_tau`` (router -> the same at its threshold) and
    fold -> (R2R router, its score function, its threshold)."""
    routers = routers_for(cfg["router"]["inputs"])
    router_kw = {k: v for k, v in cfg["router"].items() if k != "inputs"}
    d_slm = slm.get_input_embeddings().embedding_dim
    keep = lambda m: names is None or m in names  # noqa: E731

    def route(prompts, score, t):
        return route_counts(slm, llm, tok, prompts, score, t, max_new_tokens=max_new_tokens,
                            modulus=cfg["modulus"])

    q_of_row = rows["query"].numpy()
    perm = np.random.default_rng(split_seed).permutation(len(questions))
    folds = np.array_split(perm, cfg["folds"])
    sums = {m: {t: np.zeros(3) for t in g} for m, g in GRIDS.items() if keep(m)}
    at_tau = {m: np.zeros(3) for m in routers if keep(m)}
    fold_router = {}
    for k, test_q in enumerate(folds):
        rest = torch.tensor(~np.isin(q_of_row, test_q))  # the other folds' rows
        prompts = [questions[i] for i in test_q]
        scores = {"SLM entropy": entropy_score, "random": random_score(split_seed * 10 + k)}
        for name, (target, inputs) in routers.items():
            if name not in at_tau:
                continue
            router, tau = crossfit_router(rows, rest, k=cfg["inner_folds"], target=target, recall=cfg["recall"],
                                          seed=split_seed, columns=feature_columns(d_slm, cfg["top_k"], inputs),
                                          **router_kw)
            scores[name] = router_score(router, slm, cfg["top_k"])
            at_tau[name] += route(prompts, scores[name], tau)
            if name == "R2R":
                fold_router[k] = (router, scores[name], tau)
        for name in sums:
            for t in GRIDS[name]:
                sums[name][t] += route(prompts, scores[name], t)
    return folds, sums, at_tau, fold_router


def encode_run(sums: dict, at_tau: dict) -> dict:
    """``heldout_run``'s sums as JSON: {"sums": {method: [[tau, LLM tokens, tokens, correct], ...]},
    "at_tau": {router: [LLM tokens, tokens, correct]}}."""
    return {"sums": {m: [[t, *map(float, v)] for t, v in s.items()] for m, s in sums.items()},
            "at_tau": {m: [float(x) for x in v] for m, v in at_tau.items()}}


def decode_run(data: dict) -> tuple[dict, dict]:
    """The inverse of ``encode_run``: (sums, at_tau) as ``heldout_run`` returns them."""
    sums = {m: {t: np.array(v) for t, *v in s} for m, s in data["sums"].items()}
    return sums, {m: np.array(v) for m, v in data["at_tau"].items()}


def run_difference(a: dict, b: dict, n_questions: int) -> float:
    """Largest difference in LLM rate or accuracy between two ``encode_run`` results, over the methods
    and thresholds of ``a`` (all of which ``b`` must hold): 0 when a live run repeats a stored one."""
    def points(run, m):
        return [(x[0], x[1] / x[2], x[3] / n_questions) for x in run["sums"][m]]

    diffs = [max(abs(p - q) for p, q in zip(pa[1:], pb[1:])) for m in a["sums"]
             for pa, pb in zip(points(a, m), points(b, m), strict=True) if pa[0] == pb[0]]
    if len(diffs) != sum(len(v) for v in a["sums"].values()):
        raise ValueError("b must hold every method and threshold of a")
    diffs += [abs(x[0] / x[1] - y[0] / y[1]) for m, x in a["at_tau"].items() for y in [b["at_tau"][m]]]
    diffs += [abs(x[2] - y[2]) / n_questions for m, x in a["at_tau"].items() for y in [b["at_tau"][m]]]
    return max(diffs)


def run_experiment(cfg: dict) -> dict:
    """The chapter's experiment as the notebook runs it (models trained from scratch, seed 0): label
    shares and accuracies of both pairs, the held-out protocol with every method on the first pair
    (split seed ``cfg["split_seed"]``) and R2R's and the 'different' router on the pair with two
    styles (three split seeds, one under ``NEURIPS25_SMOKE=1``)."""
    from neurips25.lm import build_tokenizer, generate, tiny_model
    from neurips25.runtime import cap, seed_everything

    seed_everything(0)
    train, questions = task(cfg)
    maxn = cap(cfg["max_new_tokens"], 12)
    tok = build_tokenizer("word", [p + " " + a for p, a in train])
    llm = tiny_model(tok, n_positions=48, arch="llama", seed=0, **cfg["llm"])
    slm = tiny_model(tok, n_positions=48, arch="llama", seed=0, **cfg["slm"])
    fine_tune(llm, tok, train, cfg, cfg["llm_steps"])
    fine_tune(slm, tok, train, cfg, cfg["slm_steps"])
    slm_st = tiny_model(tok, n_positions=48, arch="llama", seed=0, **cfg["slm"])
    fine_tune(slm_st, tok, restyle(train, cfg["slm_style"], seed=1), cfg, cfg["slm_steps"])
    out = {"n_questions": len(questions)}
    for key, small in (("plain", slm), ("styled", slm_st)):
        rows = collect_router_data(llm, small, tok, questions, max_new_tokens=maxn, top_k=cfg["top_k"],
                                   n_samples=cfg["n_samples"])
        acc = accuracy(questions, generate(small, tok, questions, max_new_tokens=maxn).texts, cfg["modulus"])
        seeds = [cfg["split_seed"]] if key == "plain" else [cfg["split_seed"] + i for i in range(cap(3, 1))]
        names = None if key == "plain" else ("R2R", DIFF)
        runs = {}
        for s in seeds:
            _, sums, at_tau, _ = heldout_run(llm, small, tok, questions, rows, s, cfg, max_new_tokens=maxn,
                                             names=names)
            runs[str(s)] = encode_run(sums, at_tau)
            print(key, "split seed", s, runs[str(s)]["at_tau"], flush=True)
        out[key] = {"slm_accuracy": acc, "label_counts": torch.bincount(rows["label"], minlength=3).tolist(),
                    "runs": runs}
    out["llm_accuracy"] = accuracy(questions, generate(llm, tok, questions, max_new_tokens=maxn).texts,
                                   cfg["modulus"])
    return out


def main(argv=None) -> None:
    """``python -m neurips25.r2r [--scale small|full] [--out PATH]``: regenerate
    ``notebooks/results/r2r.json`` (or ``r2r.full.json``): ``run_experiment(CONFIG[scale])``, the
    held-out runs the notebook's budget (150 s on 2 CPU cores) cannot repeat live."""
    import argparse

    from .results import add_scale_arguments, save_results

    ap = argparse.ArgumentParser(prog="python -m neurips25.r2r", description=main.__doc__)
    add_scale_arguments(ap)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    cfg = CONFIG[args.scale]
    flag = "" if args.scale == "small" else f" --scale {args.scale}"
    path = save_results("r2r", {"settings": cfg, **run_experiment(cfg)}, command="python -m neurips25.r2r" + flag,
                        seed=0, path=args.out, scale=args.scale)
    print("wrote", path)


if __name__ == "__main__":
    main()
