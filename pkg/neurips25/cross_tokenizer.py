r"""Cross-tokenizer distillation by Approximate Likelihood Matching (ALM).

Minixhofer, Vulić, Ponti, *Universal Cross-Tokenizer Distillation via Approximate Likelihood
Matching*, NeurIPS 2025 (arXiv:2503.20083).

A teacher with tokenizer $T$ and a student with tokenizer $S$ read the same text. Standard
knowledge distillation compares next-token distributions, which needs one vocabulary. ALM instead
compares probabilities of **aligned chunks**: token spans of the two tokenizations that cover
exactly the same bytes. Their boundaries are the byte offsets at which *both* tokenizations have a
token boundary. The chunk log-likelihood is the sum of the token log-probs inside the span,

$$\log p_M(c) = \sum_{t \in c} \log p_M(x_t \mid x_{<t}) \le 0, \qquad M \in \{T, S\},$$

and the loss is the *binarised* f-divergence between chunk probabilities, with temperature $\tau$
(eq. 3 of the paper, $f$ = KL here, which has the same gradient as the binary cross-entropy):

$$\mathcal L_{\mathrm{ALM}} = \sum_{c \in C}
  \mathrm{KL}\big(\mathrm{Bern}(p_T(c)^{1/\tau}) \,\big\|\, \mathrm{Bern}(p_S(c)^{1/\tau})\big),$$

summed over the chunks of a sequence as in the paper (and averaged over the sequences of a batch).
It vanishes, with its gradient, iff $p_S(c) = p_T(c)$ on every chunk. *Outcome-chunk debiasing*
(the paper's treatment of tokenization bias) multiplies each chunk's probability, for both models,
by the probability that the next token starts a new pretoken, so that both measure the event "this
whole word comes next". Baselines: SFT, ULD (universal logit distillation, sorted-probability
matching at equal token indices) and MinED (KL to the teacher's next-token distribution carried over to
the student's vocabulary by minimum edit distance, at one-to-one aligned tokens) and DSKD (dual-space
distillation: a learned cross-model attention carries each model's hidden states into the other's
vocabulary). Everything here is plain tensor code except the training loop, a ``LightningModule``
(:class:`CrossTokenizerDistiller`).
"""
from __future__ import annotations

import copy
import functools
import math
import random
from typing import Any, Sequence

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader

__all__ = [
    "markov_corpus", "token_byte_ends", "align_chunks", "chunk_logprobs", "log1mexp", "alm_loss",
    "token_logprobs", "text_logprobs", "bits_per_byte", "chunk_table", "chunk_gap", "fvt_embeddings",
    "pretoken_start_ids", "uld_loss", "mined_mapping", "mined_loss", "dskd_loss", "DSKDProjectors",
    "transfer_model", "truncated_student", "DistillData",
    "CrossTokenizerDistiller", "distill", "METHODS", "BALANCES", "gradmag_weights", "last_block",
    "ExpandedEmbedding", "expand_inputs",
]

METHODS = ("sft", "uld", "mined", "dskd", "alm", "alm_nodebias", "alm+sft")
MINED_TEMPERATURE = 2.0  # the official code's kd_temp for its baselines (MinED and DSKD)
DSKD_SKEW = 0.1  # the official code's default divergence for DSKD: skewed reverse KL, lambda = 0.1
BALANCES = ("sum", "gradmag")  # how a two-term objective (SFT + a distillation term) adds its terms


# ------------------------------------------------------------------------------------- corpus
def markov_corpus(n: int, *, n_words: int = 150, branching: int = 4, length: tuple[int, int] = (5, 9),
                  seed: int = 0, chain_seed: int = 0, noise: float = 0.0) -> list[str]:
    """``n`` sentences from a fixed word-level Markov chain over ``n_words`` pseudo-words.

    The chain (words and sparse transitions, each word has ``branching`` successors with random
    weights) is fixed by ``chain_seed``; ``seed`` only changes which sentences are drawn, so splits
    drawn with different ``seed`` come from the same distribution. With ``noise > 0`` each next word
    is, with that probability, drawn uniformly from all words instead of from the chain: "generic"
    text that holds less of the chain's knowledge than the teacher's pretraining text.
    """
    if not (isinstance(noise, (int, float)) and 0.0 <= noise <= 1.0):
        raise ValueError(f"noise must be a probability in [0, 1], got {noise!r}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not (1 <= branching <= n_words):
        raise ValueError(f"branching must be in [1, n_words={n_words}], got {branching!r}")
    if not (1 <= length[0] <= length[1]):
        raise ValueError(f"length must be (min, max) with 1 <= min <= max, got {length!r}")
    rc = random.Random(chain_seed)
    syl = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: list[str] = []
    while len(words) < n_words:
        w = "".join(rc.choice(syl) for _ in range(rc.choice((1, 2, 2, 3))))
        if w not in words:
            words.append(w)
    succ = [rc.sample(range(n_words), branching) for _ in range(n_words)]
    wts = [[rc.random() ** 2 + 0.05 for _ in range(branching)] for _ in range(n_words)]
    r = random.Random(seed)
    out = []
    for _ in range(n):
        i = r.randrange(n_words)
        seq = [words[i]]
        for _ in range(r.randint(*length) - 1):
            if noise and r.random() < noise:
                i = r.randrange(n_words)
            else:
                i = r.choices(succ[i], wts[i])[0]
            seq.append(words[i])
        out.append(" ".join(seq))
    return out


# ------------------------------------------------------------------------------------ alignment
def _check_texts(texts, name="texts") -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"{name} must be a list of strings, got {type(texts).__name__}")
    if len(texts) == 0 or not all(isinstance(t, str) and t for t in texts):
        raise ValueError(f"{name} must be a non-empty list of non-empty strings")
    return list(texts)


def token_byte_ends(tok, texts: Sequence[str]) -> tuple[list[list[int]], list[np.ndarray]]:
    """Token ids and the byte offset where each token ends, from the fast tokenizer's offset mapping.

    Offsets are in characters; they are mapped to UTF-8 byte offsets. A token holding part of a
    multi-byte character ends at that character's end, so boundaries only fall between characters.
    """
    texts = _check_texts(texts)
    enc = tok(texts, add_special_tokens=False, return_offsets_mapping=True)
    ends = []
    for text, offs in zip(texts, enc["offset_mapping"]):
        cum = np.concatenate([[0], np.cumsum([len(ch.encode()) for ch in text])])
        ends.append(cum[np.asarray([e for _, e in offs], dtype=np.int64)])
    return [list(x) for x in enc["input_ids"]], ends


def align_chunks(ends_t: np.ndarray, ends_s: np.ndarray, text: str | None = None, *,
                 debias: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Aligned chunks of two tokenizations of one text (vectorised with ``np.intersect1d``).

    Args:
        ends_t, ends_s: byte end offset of every token (non-decreasing; the last = the text's bytes).
        text: the text itself, needed for ``debias``.
        debias: keep only boundaries that are also pretoken (word) boundaries, i.e. followed by a
            space or the end of the text; chunks are then whole words. (The outcome-chunk term
            that completes the paper's debiasing is added by :class:`DistillData`.)
    Returns:
        ``(chunk_of_t, chunk_of_s, boundaries)``: the chunk index of every teacher and student
        token, and the byte offset at which each chunk ends.
    """
    ends_t, ends_s = np.asarray(ends_t), np.asarray(ends_s)
    if ends_t.ndim != 1 or ends_s.ndim != 1 or len(ends_t) == 0 or len(ends_s) == 0:
        raise ValueError("ends_t and ends_s must be non-empty 1-D arrays of token end offsets")
    if ends_t[-1] != ends_s[-1]:
        raise ValueError(f"the two tokenizations cover different texts: {ends_t[-1]} vs {ends_s[-1]} bytes")
    shared = np.intersect1d(ends_t, ends_s)  # sorted, unique; always contains the text's end
    if debias:
        if text is None:
            raise ValueError("debias=True needs text= to find the word boundaries")
        b = text.encode()
        if len(b) != ends_t[-1]:
            raise ValueError(f"text has {len(b)} bytes but the tokens cover {ends_t[-1]}")
        follow = np.frombuffer(b + b" ", dtype=np.uint8)[shared]
        shared = shared[follow == ord(" ")]  # b + b" " makes the end of the text count as a boundary
    # token k belongs to the first chunk whose boundary is >= its end
    return np.searchsorted(shared, ends_t), np.searchsorted(shared, ends_s), shared


def chunk_logprobs(token_lp: torch.Tensor, chunk_idx: torch.Tensor, n_chunks: int) -> torch.Tensor:
    r"""Chunk log-likelihoods $\log p(c) = \sum_{t\in c}\log p(x_t\mid x_{<t})$, clipped at 0.

    ``token_lp`` ``(B, N)``, ``chunk_idx`` ``(B, N)`` long with ``-1`` on padding → ``(B, n_chunks)``.
    """
    if token_lp.shape != chunk_idx.shape:
        raise ValueError(f"token_lp {tuple(token_lp.shape)} and chunk_idx {tuple(chunk_idx.shape)} differ in shape")
    idx = torch.where(chunk_idx < 0, torch.full_like(chunk_idx, n_chunks), chunk_idx)
    out = token_lp.new_zeros(token_lp.shape[0], n_chunks + 1)
    out = out.scatter_add(1, idx, torch.where(chunk_idx < 0, torch.zeros_like(token_lp), token_lp))
    return out[:, :n_chunks].clamp(max=0.0)


# ------------------------------------------------------------------------------------- the loss
def log1mexp(x: torch.Tensor) -> torch.Tensor:
    r"""Stable $\log(1 - e^{x})$ for $x \le 0$ (Mächler 2012: two branches split at $-\log 2$)."""
    return torch.where(x > -math.log(2), torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


def _check_logprobs(name: str, x) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor of log-probabilities")
    if bool((x > 1e-6).any()):
        raise ValueError(f"{name} must hold log-probabilities (<= 0), got a maximum of {float(x.max()):.3g}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must be finite")
    return x


def alm_loss(lp_t: torch.Tensor, lp_s: torch.Tensor, mask: torch.Tensor | None = None, *,
             tau: float = 1.0, eps: float = 1e-6, reduction: str = "sum") -> torch.Tensor:
    r"""Binarised KL between chunk probabilities with temperature $\tau$ (eq. 3).

    With $\ell = \log p / \tau$: $\; e^{\ell_T}(\ell_T - \ell_S) + (1-e^{\ell_T})(\mathrm{log1mexp}\,\ell_T -
    \mathrm{log1mexp}\,\ell_S)$. Minimised (value and gradient 0) iff $\ell_S = \ell_T$. ``reduction="sum"``
    (the paper's) sums over the chunks of each sequence (rows; a 1-D input is one sequence) and
    averages over sequences; ``"mean"`` averages over chunks. Inputs must be log-probabilities
    (<= 0; a positive value raises ``ValueError``); they are clipped to $\le -\varepsilon$ so that a
    chunk of probability 1 stays finite.
    """
    _check_logprobs("lp_t", lp_t)
    _check_logprobs("lp_s", lp_s)
    if lp_t.shape != lp_s.shape:
        raise ValueError(f"lp_t {tuple(lp_t.shape)} and lp_s {tuple(lp_s.shape)} must have the same shape")
    if isinstance(tau, bool) or not (isinstance(tau, (int, float)) and tau > 0):
        raise ValueError(f"tau must be a positive number, got {tau!r}")
    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction must be 'sum' or 'mean', got {reduction!r}")
    lt = lp_t.detach().clamp(max=-eps) / tau
    ls = lp_s.clamp(max=-eps) / tau
    pt = lt.exp()
    kl = pt * (lt - ls) + (1 - pt) * (log1mexp(lt) - log1mexp(ls))
    if mask is None:
        m = torch.ones_like(kl)
    elif mask.shape != kl.shape:
        raise ValueError(f"mask {tuple(mask.shape)} must match the chunk log-probs {tuple(kl.shape)}")
    else:
        m = mask.to(kl.dtype)
    if reduction == "mean":
        return (kl * m).sum() / m.sum().clamp(min=1.0)
    n_seq = 1 if kl.ndim <= 1 else kl.shape[0]
    return (kl * m).sum() / n_seq


def uld_loss(logp_t_sorted: torch.Tensor, logits_s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    r"""Universal logit distillation (Boizard et al. 2024), the cross-tokenizer baseline.

    At each token *index* $i$ (the $i$-th teacher token against the $i$-th student token, whatever
    text they cover) the two next-token distributions are sorted, zero-padded to one length, and
    compared by $\sum_k |p^{\downarrow}_{S,i,k} - p^{\downarrow}_{T,i,k}|$ (a Wasserstein-1 distance
    that ignores which token is which). ``logp_t_sorted`` ``(B, N, K)`` the teacher's sorted
    probabilities (0 on padding), ``logits_s`` ``(B, N, V_S)``, ``mask`` ``(B, N)``; mean over
    masked positions.
    """
    p_s = logits_s.float().softmax(-1).sort(-1, descending=True).values
    K = max(p_s.shape[-1], logp_t_sorted.shape[-1])
    p_s = torch.nn.functional.pad(p_s, (0, K - p_s.shape[-1]))
    p_t = torch.nn.functional.pad(logp_t_sorted, (0, K - logp_t_sorted.shape[-1]))
    d = (p_s - p_t).abs().sum(-1)
    m = mask.to(d.dtype)
    return (d * m).sum() / m.sum().clamp(min=1.0)


def mined_loss(logp_t: torch.Tensor, logits_s: torch.Tensor, targets: torch.Tensor, one_to_one: torch.Tensor,
               mask: torch.Tensor, temperature: float = MINED_TEMPERATURE) -> torch.Tensor:
    r"""The MinED baseline's term (Wan et al. 2024), after the paper's code (tokenkit).

    At a student position whose next token covers exactly the bytes of one teacher token
    (``one_to_one``), $\mathrm{KL}(q_T \,\|\, \mathrm{softmax}(z_S/T))$ with $q_T$ the teacher's
    next-token distribution carried to the student vocabulary by :func:`mined_mapping`
    (``logp_t``, log-probs already at temperature $T$); at every other position the one-hot target
    at the same temperature, $-\log \mathrm{softmax}(z_S/T)_y$ with $y$ = ``targets``. Mean over
    ``mask``. ``logp_t`` ``(B, N, V_S)``, ``logits_s`` ``(B, N, V_S)``, ``targets``, ``one_to_one``,
    ``mask`` ``(B, N)``. One difference from tokenkit: it applies the KL at the logits *of* a
    one-to-one token (which predict the token after it); we apply it where the one-to-one token is
    the one predicted, so both models predict the same string.
    """
    if logp_t.ndim != 3 or logp_t.shape != logits_s.shape:
        raise ValueError(f"logp_t and logits_s must both be (B, N, V_S), got {tuple(logp_t.shape)} and "
                         f"{tuple(logits_s.shape)}")
    for name, x in (("targets", targets), ("one_to_one", one_to_one), ("mask", mask)):
        if x.shape != logits_s.shape[:2]:
            raise ValueError(f"{name} must be (B, N) = {tuple(logits_s.shape[:2])}, got {tuple(x.shape)}")
    if isinstance(temperature, bool) or not (isinstance(temperature, (int, float)) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    lq_s = (logits_s.float() / temperature).log_softmax(-1)
    kl = (logp_t.exp() * (logp_t - lq_s)).sum(-1)
    ce = -lq_s.gather(-1, targets[..., None])[..., 0]
    d = torch.where(one_to_one.bool(), kl, ce)
    m = mask.to(d.dtype)
    return (d * m).sum() / m.sum().clamp(min=1.0)


class DSKDProjectors(torch.nn.Module):
    """DSKD's three learned maps between a student of width ``d_s`` and a teacher of width ``d_t``:
    ``query`` (the student's index embeddings to the teacher's, ``2 d_s -> 2 d_t``), ``t2s`` (teacher
    hidden states to the student's space) and ``s2t`` (the reverse)."""

    def __init__(self, d_s: int, d_t: int):
        super().__init__()
        for name, v in (("d_s", d_s), ("d_t", d_t)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.query = torch.nn.Linear(2 * d_s, 2 * d_t)
        self.t2s = torch.nn.Linear(d_t, d_s)
        self.s2t = torch.nn.Linear(d_s, d_t)


def _masked_std(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return x[mask.bool()].std()


def dskd_loss(proj: DSKDProjectors, student: dict[str, torch.Tensor], teacher: dict[str, torch.Tensor], *,
              temperature: float = MINED_TEMPERATURE, skew: float = DSKD_SKEW) -> torch.Tensor:
    r"""Dual-space knowledge distillation with cross-model attention (Zhang et al. 2024), the term the
    paper's code (tokenkit, after the DSKD authors' code) adds to SFT for its DSKD baseline.

    Each side is a dict of ``(B, N)`` ``input`` and ``target`` token ids, ``mask``, ``hidden`` (last hidden
    states, ``(B, N, d)``), ``logits`` (``(B, N, V)``, the next-token logits), ``embed`` (the input
    embedding matrix, ``(V, d)``) and ``head`` (the output embedding matrix). Index embeddings
    $[e(x_i); e(y_i)]$ of the two sequences are compared by attention,
    $A = \mathrm{softmax}(W_q[e_S(x_i); e_S(y_i)] \cdot \overline{[e_T(x_j); e_T(y_j)]} / \sqrt{2 d_T})$
    (the bar: the concatenation divided by its std). Where the official codes differ we follow the DSKD
    authors': the student's index embeddings are detached (tokenkit lets the query's gradient reach
    them), the std is the unbiased one and the projectors have PyTorch's default initialisation; unlike
    both, the std is taken over valid entries only, not over the padded tensor.

    * **teacher → student**: $A$ mixes the teacher's (normalised) hidden states plus target embeddings,
      mapped by ``t2s``; the student's (frozen) head turns them into logits $z_{T\to S}$, trained by
      cross-entropy on the student's targets; where $z_{T\to S}$ predicts the target correctly the
      student is pulled toward it by the skewed reverse KL
      $\mathrm{KL}(q_S \,\|\, (1-\lambda)\, q_{T\to S} + \lambda\, q_S)$ at temperature ``temperature``;
    * **student → teacher**: $A^\top$ mixes the student's hidden states mapped by ``s2t``; the teacher's
      head gives $z_{S\to T}$, pulled toward the teacher's own logits by forward KL at the same temperature.

    Returns the sum of the three terms, each a mean over its valid positions.
    """
    for side, d in (("student", student), ("teacher", teacher)):
        missing = {"input", "target", "mask", "hidden", "logits", "embed", "head"} - set(d)
        if missing:
            raise ValueError(f"{side} is missing {sorted(missing)}")
        if d["hidden"].shape[:2] != d["mask"].shape or d["logits"].shape[:2] != d["mask"].shape:
            raise ValueError(f"{side}: hidden {tuple(d['hidden'].shape)} and logits {tuple(d['logits'].shape)} "
                             f"must start with mask's shape {tuple(d['mask'].shape)}")
        if d["input"].shape != d["mask"].shape or d["target"].shape != d["mask"].shape:
            raise ValueError(f"{side}: input {tuple(d['input'].shape)} and target {tuple(d['target'].shape)} "
                             f"must have mask's shape {tuple(d['mask'].shape)}")
    if not 0 <= skew < 1:
        raise ValueError(f"skew must be in [0, 1), got {skew!r}")
    if isinstance(temperature, bool) or not (isinstance(temperature, (int, float)) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    S, T = student, teacher
    m_s, m_t = S["mask"].bool(), T["mask"].bool()
    idx_s = torch.cat([S["embed"][S["input"]], S["embed"][S["target"]]], -1).detach()
    idx_t = torch.cat([T["embed"][T["input"]], T["embed"][T["target"]]], -1)
    tgt_t = T["embed"][T["target"]]
    key = idx_t / _masked_std(idx_t, m_t)
    value_t = T["hidden"] / _masked_std(T["hidden"], m_t) + tgt_t / _masked_std(tgt_t, m_t)
    align = proj.query(idx_s) @ key.transpose(-1, -2) / math.sqrt(idx_t.shape[-1])
    valid = m_s[:, :, None] & m_t[:, None, :]
    neg = torch.finfo(align.dtype).min
    # teacher -> student
    t2s = (align.masked_fill(~valid, neg).softmax(-1) @ proj.t2s(value_t)) @ S["head"].detach().T
    t2s_ce = torch.nn.functional.cross_entropy(t2s[m_s], S["target"][m_s])
    right = m_s & (t2s.argmax(-1) == S["target"])
    lq_s = (S["logits"] / temperature).log_softmax(-1)
    q_t2s = (t2s.detach() / temperature).softmax(-1)
    mixed = (1 - skew) * q_t2s + skew * lq_s.exp()
    srkl = (lq_s.exp() * (lq_s - (mixed + 1e-9).log())).sum(-1)
    t2s_kd = (srkl * right).sum() / (right.sum() + 1e-8)
    # student -> teacher
    w = align.transpose(-1, -2).masked_fill(~valid.transpose(-1, -2), neg).softmax(-1)
    s2t = (w @ proj.s2t(S["hidden"])) @ T["head"].T
    lq_t = (T["logits"] / temperature).log_softmax(-1)
    fkl = (lq_t.exp() * (lq_t - (s2t / temperature).log_softmax(-1))).sum(-1)
    s2t_kd = fkl[m_t].mean()
    return t2s_ce + t2s_kd + s2t_kd


# ------------------------------------------------------------------------------ model log-probs
def last_block(model) -> torch.nn.Module:
    """The last transformer block of a GPT-2- or Llama-style ``*ForCausalLM`` (GradMag's probe layer)."""
    base = getattr(model, "base_model", None)
    blocks = getattr(base, "h", None) or getattr(base, "layers", None)
    if not isinstance(blocks, torch.nn.ModuleList) or len(blocks) == 0:
        raise TypeError(f"model must be a GPT-2- or Llama-style causal LM with transformer blocks, got "
                        f"{type(model).__name__}")
    return blocks[-1]


def gradmag_weights(losses: Sequence[torch.Tensor], params: Sequence[torch.Tensor],
                    eps: float = 1e-8) -> torch.Tensor:
    r"""GradMag loss weights (the paper's loss balancing; ``approx_gradmag_preserve_mag`` in its code):
    $w_i = \lVert\nabla_\theta L_i\rVert^{-1} / \sum_j \lVert\nabla_\theta L_j\rVert^{-1}$, with $\theta$
    the last transformer block, so that every term pushes that block equally hard and the weights sum to 1.
    Detached: the weights are constants of the step, as in the paper's code."""
    if len(losses) == 0:
        raise ValueError("losses must hold at least one loss term")
    params = [p for p in params if p.requires_grad]
    if not params:
        raise ValueError("params must hold at least one trainable tensor")
    inv = []
    for loss in losses:
        if loss.dim() != 0:
            raise ValueError(f"each loss must be a scalar, got shape {tuple(loss.shape)}")
        grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
        sq = [g.detach().pow(2).sum() for g in grads if g is not None]
        norm = torch.stack(sq).sum().sqrt() if sq else loss.detach().new_zeros(())
        inv.append(1.0 / (norm + eps))
    inv = torch.stack(inv)
    return inv / inv.sum()


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, *,
                   return_logits: bool = False, return_hidden: bool = False):
    """``log p(x_t | x_<t)`` of tokens 1..N-1 of ``input_ids`` (position 0 is BOS) → ``(B, N-1)``, 0 on
    padding; with ``return_logits`` also the logits ``(B, N, V)`` at every position, with
    ``return_hidden`` also the last hidden states ``(B, N, d)`` (after the final norm)."""
    out = model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=return_hidden)
    logits = out.logits.float()
    lp = logits[:, :-1].log_softmax(-1).gather(-1, input_ids[:, 1:, None])[..., 0]
    lp = lp * attention_mask[:, 1:]
    extra = ((logits,) if return_logits else ()) + ((out.hidden_states[-1].float(),) if return_hidden else ())
    return (lp, *extra) if extra else lp


def pretoken_start_ids(tok) -> torch.Tensor:
    """Ids of the tokens that begin a new pretoken (a word): those starting with a space (``Ġ`` in
    the byte-level map) — the outcome event of the paper's debiasing."""
    vocab = tok.get_vocab()
    ids = sorted(i for t, i in vocab.items() if t.startswith("Ġ"))
    if not ids:
        raise ValueError("the tokenizer has no token that starts with a space ('Ġ')")
    return torch.tensor(ids)


def _space_logprob(logits: torch.Tensor, space_ids: torch.Tensor) -> torch.Tensor:
    """log P(next token starts a new pretoken) at every position, ``(B, N)``."""
    return logits.log_softmax(-1)[..., space_ids].logsumexp(-1)


def _batch(ids: list[list[int]], tok, dev) -> tuple[torch.Tensor, torch.Tensor]:
    T = max(len(x) for x in ids) + 1
    x = torch.full((len(ids), T), tok.pad_token_id, dtype=torch.long)
    m = torch.zeros((len(ids), T), dtype=torch.long)
    for i, s in enumerate(ids):
        x[i, 0] = tok.bos_token_id
        x[i, 1:len(s) + 1] = torch.tensor(s)
        m[i, : len(s) + 1] = 1
    return x.to(dev), m.to(dev)


@torch.no_grad()
def text_logprobs(model, tok, texts: Sequence[str], batch_size: int = 128) -> list[torch.Tensor]:
    """Per-token log-probs of each text under ``model`` (BOS-conditioned, no EOS), as CPU tensors."""
    texts = _check_texts(texts)
    was, dev = model.training, next(model.parameters()).device
    model.eval()
    ids = tok(texts, add_special_tokens=False)["input_ids"]
    out = []
    for i in range(0, len(ids), batch_size):
        chunk = ids[i:i + batch_size]
        lp = token_logprobs(model, *_batch(chunk, tok, dev)).cpu()
        out += [lp[j, : len(s)] for j, s in enumerate(chunk)]
    model.train(was)
    return out


def bits_per_byte(model, tok, texts: Sequence[str]) -> float:
    r"""Held-out bits per byte $-\sum_x \log_2 p(x) / \sum_x |x|_{\text{bytes}}$ — comparable across tokenizers."""
    texts = _check_texts(texts)
    total = sum(float(lp.sum()) for lp in text_logprobs(model, tok, texts))
    return -total / math.log(2) / sum(len(t.encode()) for t in texts)


def chunk_table(teacher, tok_t, student, tok_s, text: str, *, debias: bool = False) -> list[dict]:
    """The aligned chunks of one text: its bytes, both token lists and both chunk log-likelihoods."""
    (ids_t,), (e_t,) = token_byte_ends(tok_t, [text])
    (ids_s,), (e_s,) = token_byte_ends(tok_s, [text])
    ct, cs, bounds = align_chunks(e_t, e_s, text, debias=debias)
    lt, ls = text_logprobs(teacher, tok_t, [text])[0], text_logprobs(student, tok_s, [text])[0]
    b, starts = text.encode(), np.concatenate([[0], bounds[:-1]])
    rows = []
    for c, (a, z) in enumerate(zip(starts, bounds)):
        rows.append(dict(text=b[a:z].decode(errors="replace"),
                         teacher=tok_t.convert_ids_to_tokens([ids_t[k] for k in np.flatnonzero(ct == c)]),
                         student=tok_s.convert_ids_to_tokens([ids_s[k] for k in np.flatnonzero(cs == c)]),
                         lp_t=float(lt[ct == c].sum()), lp_s=float(ls[cs == c].sum())))
    return rows


def chunk_gap(teacher, tok_t, student, tok_s, texts: Sequence[str], *, debias: bool = True) -> float:
    """Mean ``|log p_T(c) − log p_S(c)|`` (nats) over the aligned chunks of ``texts`` (words by default)."""
    texts = _check_texts(texts)
    lts, lss = text_logprobs(teacher, tok_t, texts), text_logprobs(student, tok_s, texts)
    _, et = token_byte_ends(tok_t, texts)
    _, es = token_byte_ends(tok_s, texts)
    gaps = []
    for text, lt, ls, a, b in zip(texts, lts, lss, et, es):
        ct, cs, bounds = align_chunks(a, b, text, debias=debias)
        n = len(bounds)
        gaps.append((torch.zeros(n).index_add(0, torch.as_tensor(ct), lt)
                     - torch.zeros(n).index_add(0, torch.as_tensor(cs), ls)).abs())
    return float(torch.cat(gaps).mean())


# --------------------------------------------------------------------- tokenizer transfer (FVT)
def _special_map(tok_t, tok_s) -> dict[int, int | None]:
    """Each student special token -> the teacher's token of the same name, else the teacher's special
    token with the same role (bos, eos, pad, unk), else ``None``."""
    vocab_t = tok_t.get_vocab()
    role_t = {}
    for role in ("unk_token_id", "pad_token_id", "eos_token_id", "bos_token_id"):  # later roles win
        if getattr(tok_s, role, None) is not None and getattr(tok_t, role, None) is not None:
            role_t[getattr(tok_s, role)] = getattr(tok_t, role)
    return {i: vocab_t.get(tok_s.convert_ids_to_tokens(i), role_t.get(i)) for i in tok_s.all_special_ids}


def mined_mapping(tok_t, tok_s) -> torch.Tensor:
    """MinED's vocabulary map: for every student token id, the teacher token whose string is nearest
    in Levenshtein distance (an exact match when the teacher has the same string; special tokens by
    name or role, else like any other token). Returns a ``(len(tok_s),)`` long tensor of teacher ids."""
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    vocab_t = tok_t.get_vocab()
    special_t = set(tok_t.all_special_ids)
    names_t = [t for t, i in sorted(vocab_t.items(), key=lambda x: x[1]) if i not in special_t]
    specials = _special_map(tok_t, tok_s)
    out = torch.zeros(len(tok_s), dtype=torch.long)
    for i, name in enumerate(tok_s.convert_ids_to_tokens(list(range(len(tok_s))))):
        j = specials.get(i, vocab_t.get(name))
        if j is None:  # ties go to the lowest teacher id: deterministic
            j = vocab_t[process.extractOne(name, names_t, scorer=Levenshtein.distance)[0]]
        out[i] = j
    return out


@torch.no_grad()
def fvt_embeddings(teacher_emb: torch.Tensor, tok_t, tok_s) -> torch.Tensor:
    """Fast Vocabulary Transfer: each new token's embedding = mean teacher embedding of its pieces.

    The new token's string is re-tokenized by the teacher tokenizer. A special token copies the
    teacher's row of the same token, or (when the teacher's vocabulary lacks it, e.g. a real
    checkpoint's tokenizer) of the teacher's special token with the same role (bos, eos, pad, unk),
    else the mean embedding.
    """
    if teacher_emb.ndim != 2 or teacher_emb.shape[0] < len(tok_t):
        raise ValueError(f"teacher_emb must be (>= {len(tok_t)}, d), got {tuple(teacher_emb.shape)}")
    out = teacher_emb.new_zeros(len(tok_s), teacher_emb.shape[1])
    specials = _special_map(tok_t, tok_s)
    for i in range(len(tok_s)):
        if i in specials:
            j = specials[i]
            out[i] = teacher_emb[j] if j is not None else teacher_emb.mean(0)
            continue
        pieces = tok_t(tok_s.decode([i]), add_special_tokens=False)["input_ids"]
        out[i] = teacher_emb[pieces].mean(0) if pieces else teacher_emb.mean(0)
    return out


def transfer_model(teacher, tok_t, tok_s):
    """A student for tokenizer ``tok_s``: a copy of the teacher's body, embeddings re-initialised by FVT."""
    student = copy.deepcopy(teacher)
    new = fvt_embeddings(teacher.get_input_embeddings().weight, tok_t, tok_s)
    student.resize_token_embeddings(len(tok_s))
    student.get_input_embeddings().weight.data.copy_(new)  # tied LM head follows
    return student


def truncated_student(teacher, tok_t, tok_s, n_layer: int = 1):
    """A smaller student for ``tok_s``: the teacher's first ``n_layer`` blocks and final norm, FVT embeddings
    (the large → small experiment's stand-in for a smaller pretrained model with another tokenizer)."""
    n_total = len(teacher.transformer.h)
    if isinstance(n_layer, bool) or not isinstance(n_layer, int) or not 1 <= n_layer <= n_total:
        raise ValueError(f"n_layer must be an int in [1, {n_total}], got {n_layer!r}")
    student = transfer_model(teacher, tok_t, tok_s)
    student.transformer.h = student.transformer.h[:n_layer]
    student.config.n_layer = n_layer
    return student


def _suffix_keys(ids: torch.Tensor, k: int, prev: torch.Tensor | None = None) -> torch.Tensor:
    """A key for the ``k`` ids ending at each position (polynomial in base 257, wrapping int64;
    ``prev``: the keys for ``k - 1``), the same for a sequence and for a teacher token's own ids."""
    digit = torch.nn.functional.pad(ids[..., : ids.shape[-1] - (k - 1)] + 1, (k - 1, 0))
    return (prev if prev is not None else torch.zeros_like(ids)) + digit * 257 ** (k - 1)


class ExpandedEmbedding(torch.nn.Module):
    """Input embeddings of a byte-level student, *expanded* as in the paper's code for transfer to
    bytes (tokenkit's ``expand_input_ids``): at each byte, the byte's own embedding plus the teacher's
    embedding of the longest teacher token whose bytes end at that byte (zero where none does).

    ``pieces`` maps each teacher token id to its student ids; ``sub_embed`` holds the teacher's input
    embeddings (trained with the student). The output head stays tied to the byte embeddings."""

    def __init__(self, embed: torch.nn.Embedding, sub_embed: torch.Tensor, pieces: dict[int, list[int]],
                 special_ids: Sequence[int] = ()):
        super().__init__()
        if not isinstance(embed, torch.nn.Embedding):
            raise TypeError(f"embed must be a torch.nn.Embedding, got {type(embed).__name__}")
        if sub_embed.dim() != 2 or sub_embed.shape[1] != embed.embedding_dim:
            raise ValueError(f"sub_embed must be (n_tokens, {embed.embedding_dim}), got {tuple(sub_embed.shape)}")
        pieces = {t: p for t, p in pieces.items() if 0 < len(p) <= 16 and 0 <= t < len(sub_embed)}
        if not pieces:
            raise ValueError("pieces must map at least one teacher token to 1-16 student ids")
        self.embed = embed
        self.sub = torch.nn.Embedding(len(sub_embed) + 1, embed.embedding_dim)  # last row: no match
        with torch.no_grad():
            self.sub.weight.copy_(torch.cat([sub_embed, sub_embed.new_zeros(1, embed.embedding_dim)]))
        self.max_len = max(map(len, pieces.values()))
        keys = {}
        for t, p in pieces.items():  # a token's key is its last position's key for its own length
            row, key = torch.tensor([p]), None
            for k in range(1, len(p) + 1):
                key = _suffix_keys(row, k, key)
            keys.setdefault(int(key[0, -1]), t)  # two tokens with one byte string: keep the first
        order = sorted(keys)
        self.register_buffer("keys", torch.tensor(order, dtype=torch.long), persistent=False)
        self.register_buffer("values", torch.tensor([keys[k] for k in order], dtype=torch.long), persistent=False)
        self.register_buffer("special", torch.tensor(sorted(special_ids), dtype=torch.long), persistent=False)

    @property
    def weight(self) -> torch.Tensor:
        """The byte embeddings (what ``get_input_embeddings().weight`` means elsewhere, e.g. the tied head)."""
        return self.embed.weight

    def expansion(self, ids: torch.Tensor) -> torch.Tensor:
        """Per position, the teacher token that ends there (longest match), or ``len(sub_embed)``."""
        out = torch.full_like(ids, self.sub.num_embeddings - 1)
        clean = ~torch.isin(ids, self.special)
        ok, key = torch.ones_like(clean), None
        for k in range(1, self.max_len + 1):
            key = _suffix_keys(ids, k, key)
            ok = ok & torch.nn.functional.pad(clean[..., : ids.shape[-1] - (k - 1)], (k - 1, 0), value=False)
            pos = torch.searchsorted(self.keys, key).clamp(max=len(self.keys) - 1)
            hit = ok & (self.keys[pos] == key)
            out = torch.where(hit, self.values[pos], out)  # longer matches overwrite shorter ones
        return out

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embed(ids) + self.sub(self.expansion(ids))


def expand_inputs(student, teacher, tok_t, tok_s):
    """Give ``student`` (in place) :class:`ExpandedEmbedding` inputs built from the teacher's tokens and
    input embeddings; returns it. Meant for a byte-level ``tok_s``, whose tokens are single bytes."""
    emb = student.get_input_embeddings()
    if isinstance(emb, ExpandedEmbedding):
        raise ValueError("student's inputs are already expanded")
    special = set(tok_t.all_special_ids)
    pieces = {}
    for t, piece in enumerate(tok_t.convert_ids_to_tokens(list(range(len(tok_t))))):
        ids = tok_s.convert_tokens_to_ids(list(piece))
        if t not in special and tok_s.unk_token_id not in ids:
            pieces[t] = ids
    student.set_input_embeddings(ExpandedEmbedding(emb, teacher.get_input_embeddings().weight.detach().clone(),
                                                   pieces, tok_s.all_special_ids))
    return student


# -------------------------------------------------------------------------------- distillation
class DistillData:
    """Transfer texts, pre-tokenized for the student, with everything the frozen teacher contributes.

    The teacher is fixed, so its outputs are computed once here, not at every step: the chunk
    log-likelihoods on all shared boundaries (``fine``) and on whole-word chunks with the outcome
    term $\\log P_T(\\text{next token starts a word})$ added to every chunk but the last (``word``,
    the paper's debiased chunks), its sorted next-token probabilities (for the ULD baseline), its
    next-token log-probs carried to the student vocabulary at the one-to-one aligned tokens (MinED), and
    its token ids, last hidden states, next-token logits and embedding matrices (DSKD).
    """

    def __init__(self, texts: Sequence[str], teacher, tok_t, tok_s, batch_size: int = 128):
        texts = _check_texts(texts)
        self.tok_s = tok_s
        self.space_s = pretoken_start_ids(tok_s)
        space_t = pretoken_start_ids(tok_t)
        was, dev = teacher.training, next(teacher.parameters()).device
        teacher.eval()
        ids_t = tok_t(texts, add_special_tokens=False)["input_ids"]
        to_s = mined_mapping(tok_t, tok_s).to(dev)
        self.teacher_embed = teacher.get_input_embeddings().weight.detach().float().cpu().clone()
        self.teacher_head = teacher.get_output_embeddings().weight.detach().float().cpu().clone()
        self.bos_t = tok_t.bos_token_id
        lts, sps, sorted_p, mapped, dskd = [], [], [], [], []
        with torch.no_grad():
            for i in range(0, len(ids_t), batch_size):
                chunk = ids_t[i:i + batch_size]
                lp, logits, hid = token_logprobs(teacher, *_batch(chunk, tok_t, dev), return_logits=True,
                                                 return_hidden=True)
                sp = _space_logprob(logits, space_t.to(dev))
                ps = logits.softmax(-1).sort(-1, descending=True).values
                # position k predicts teacher token k (position 0 is BOS)
                mp = (logits[..., to_s] / MINED_TEMPERATURE).log_softmax(-1)
                lp, sp, ps, mp = lp.cpu(), sp.cpu(), ps.cpu(), mp.cpu()  # one read-back per batch
                logits, hid = logits.cpu(), hid.cpu()
                for j, s_ in enumerate(chunk):
                    n = len(s_)
                    lts.append(lp[j, :n])
                    sps.append(sp[j, : n + 1])
                    sorted_p.append(ps[j, :n])
                    mapped.append(mp[j, :n])
                    dskd.append((torch.tensor(s_), hid[j, :n], logits[j, :n]))  # positions predicting s_
        teacher.train(was)
        _, et = token_byte_ends(tok_t, texts)
        self.ids, es = token_byte_ends(tok_s, texts)
        self.items: list[dict[str, Any]] = []
        for text, ids, lt, sp, ps, mp, a, b, dk in zip(texts, self.ids, lts, sps, sorted_p, mapped, et, es, dskd):
            item: dict[str, Any] = {"ids": ids, "uld": ps, "dskd": dk}
            ct, cs, bounds = align_chunks(a, b, text)
            item["fine"] = (torch.as_tensor(cs), torch.zeros(len(bounds)).index_add(0, torch.as_tensor(ct), lt))
            # one-to-one tokens: a chunk of exactly one teacher and one student token
            n_t, n_s = np.bincount(ct, minlength=len(bounds)), np.bincount(cs, minlength=len(bounds))
            token_t = np.zeros(len(bounds), dtype=np.int64)
            token_t[ct] = np.arange(len(ct))
            k = np.flatnonzero((n_s[cs] == 1) & (n_t[cs] == 1))
            item["mined"] = (torch.as_tensor(k), mp[torch.as_tensor(token_t[cs[k]])])
            ct, cs, bounds = align_chunks(a, b, text, debias=True)
            ct, cs = torch.as_tensor(ct), torch.as_tensor(cs)
            n = len(bounds)
            lp_word = torch.zeros(n).index_add(0, ct, lt)
            # last token of each chunk; the next-token distribution after token k sits at position k + 1
            last_t = torch.zeros(n, dtype=torch.long).scatter_reduce(0, ct, torch.arange(len(ct)), "amax")
            last_s = torch.zeros(n, dtype=torch.long).scatter_reduce(0, cs, torch.arange(len(cs)), "amax")
            outcome = sp[last_t + 1]
            outcome[-1] = 0.0  # the text's end: no next word to predict
            end_s = last_s + 1
            end_s[-1] = -1
            item["word"] = (cs, lp_word + outcome)
            item["word_end"] = end_s
            self.items.append(item)

    def __len__(self) -> int:
        return len(self.items)

    def collate(self, batch: list[dict], method: str | None = None) -> dict[str, torch.Tensor]:
        """Pads a batch of items into tensors. With ``method`` only what that method reads is built (the
        teacher's dense distributions for ULD, MinED and DSKD are the costly part); ``None`` builds all."""
        x, m = _batch([b["ids"] for b in batch], self.tok_s, "cpu")
        out = {"input_ids": x, "attention_mask": m}
        N = x.shape[1] - 1
        for key in ("fine", "word"):
            C = max(len(b[key][1]) for b in batch)
            idx = torch.full((len(batch), N), -1, dtype=torch.long)
            lpt, cm = torch.zeros(len(batch), C), torch.zeros(len(batch), C)
            for i, b in enumerate(batch):
                cs, lt = b[key]
                idx[i, : len(cs)], lpt[i, : len(lt)], cm[i, : len(lt)] = cs, lt, 1
            out.update({f"{key}_idx": idx, f"{key}_lp_t": lpt, f"{key}_mask": cm})
        end = torch.full((len(batch), out["word_lp_t"].shape[1]), -1, dtype=torch.long)
        for i, b in enumerate(batch):
            end[i, : len(b["word_end"])] = b["word_end"]
        out["word_end"] = end
        if method in (None, "uld"):
            V = batch[0]["uld"].shape[-1]
            p_t, um = torch.zeros(len(batch), N, V), torch.zeros(len(batch), N)
            for i, b in enumerate(batch):
                k = min(len(b["ids"]), len(b["uld"]))
                p_t[i, :k], um[i, :k] = b["uld"][:k], 1
            out.update({"uld_p_t": p_t, "uld_mask": um})
        if method in (None, "mined"):
            lq, one = torch.zeros(len(batch), N, batch[0]["mined"][1].shape[-1]), torch.zeros(len(batch), N)
            for i, b in enumerate(batch):
                k, lp_k = b["mined"]
                lq[i, k], one[i, k] = lp_k, 1
            out.update({"mined_lp_t": lq, "mined_one_to_one": one})
        if method in (None, "dskd"):
            # the teacher's own sequence; position k reads token k - 1 (BOS at 0) and predicts token k
            Nt = max(len(b["dskd"][0]) for b in batch)
            d, V = batch[0]["dskd"][1].shape[-1], batch[0]["dskd"][2].shape[-1]
            t_in = torch.zeros(len(batch), Nt, dtype=torch.long)
            t_tgt = torch.zeros(len(batch), Nt, dtype=torch.long)
            t_mask, t_h, t_z = (torch.zeros(len(batch), Nt), torch.zeros(len(batch), Nt, d),
                                torch.zeros(len(batch), Nt, V))
            for i, b in enumerate(batch):
                ids_t, h, z = b["dskd"]
                n = len(ids_t)
                t_in[i, 0], t_in[i, 1:n], t_tgt[i, :n] = self.bos_t, ids_t[:-1], ids_t
                t_mask[i, :n], t_h[i, :n], t_z[i, :n] = 1, h, z
            out.update({"t_input": t_in, "t_target": t_tgt, "t_mask": t_mask, "t_hidden": t_h, "t_logits": t_z})
        return out

    def loader(self, batch_size: int, seed: int = 0, method: str | None = None) -> DataLoader:
        """Shuffled batches (order fixed by ``seed``), collated for ``method`` (``None``: every method)."""
        if method is not None and method not in METHODS:
            raise ValueError(f"method must be one of {METHODS} or None, got {method!r}")
        g = torch.Generator().manual_seed(seed)
        return DataLoader(self.items, batch_size=batch_size, shuffle=True, generator=g,
                          collate_fn=functools.partial(self.collate, method=method))


class CrossTokenizerDistiller(L.LightningModule):
    """Trains a student with its own tokenizer by one of ``METHODS``:

    * ``"sft"`` — next-token cross-entropy on the student's tokenization of the transfer text;
    * ``"uld"`` — SFT + universal logit distillation (sorted distributions at equal token index);
    * ``"mined"`` — SFT + MinED (the teacher's distribution through the edit-distance vocabulary map);
    * ``"dskd"`` — SFT + DSKD (cross-model attention between the two sequences; needs ``teacher_dim``);
    * ``"alm"`` — ALM on whole-word chunks with outcome-chunk debiasing (the paper's method);
    * ``"alm_nodebias"`` — ALM on all shared boundaries, no debiasing;
    * ``"alm+sft"`` — ``"alm"`` and ``"sft"`` together.

    ``balance`` sets how the two terms of a two-term objective (SFT + a distillation term) combine:
    ``"sum"`` adds them; ``"gradmag"`` weights them by :func:`gradmag_weights`, as the paper's code does
    for its multi-objective runs. One-term objectives are the same under both.
    """

    def __init__(self, model, method: str = "alm", *, tau: float = 1.0, lr: float = 1e-3, warmup: int = 10,
                 total_steps: int = 100, teacher_dim: int | None = None, balance: str = "sum"):
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if balance not in BALANCES:
            raise ValueError(f"balance must be one of {BALANCES}, got {balance!r}")
        if isinstance(tau, bool) or not (isinstance(tau, (int, float)) and tau > 0):
            raise ValueError(f"tau must be a positive number, got {tau!r}")
        if method == "dskd" and teacher_dim is None:
            raise ValueError("method 'dskd' needs teacher_dim (the teacher's hidden width)")
        self.save_hyperparameters(ignore=["model"])
        self.model = model
        # DSKD's projectors train with the student (for other methods there are none: same parameters)
        self.projectors = (DSKDProjectors(model.get_input_embeddings().weight.shape[1], teacher_dim)
                           if method == "dskd" else None)
        self.teacher_embed: torch.Tensor | None = None  # DSKD: the teacher's embedding matrices, set by
        self.teacher_head: torch.Tensor | None = None  # `distill` from the DistillData
        self._losses: list[torch.Tensor] = []  # kept on the device; read back once by `history`
        self.space_ids: torch.Tensor | None = None  # set by `distill` from the student tokenizer

    @property
    def history(self) -> list[float]:
        """The training loss at every step."""
        return torch.stack(self._losses).tolist() if self._losses else []

    def on_fit_start(self):
        if self.space_ids is not None:
            self.space_ids = self.space_ids.to(self.device)  # once, not at every step
        if self.hparams.method == "dskd":
            if self.teacher_embed is None or self.teacher_head is None:
                raise ValueError("method 'dskd' needs teacher_embed and teacher_head (the teacher's embedding "
                                 "matrices): train it with distill(), which sets them from the DistillData")
            self.teacher_embed, self.teacher_head = self.teacher_embed.to(self.device), self.teacher_head.to(self.device)

    def training_step(self, batch, batch_idx):
        x, m = batch["input_ids"], batch["attention_mask"]
        method = self.hparams.method
        lp, logits, *hidden = token_logprobs(self.model, x, m, return_logits=True, return_hidden=method == "dskd")
        terms = []  # the objective's terms: SFT's cross-entropy first, then the distillation term
        if method in ("sft", "alm+sft", "uld", "mined", "dskd"):
            terms.append(-lp.sum() / m[:, 1:].sum())
        if method == "uld":
            terms.append(uld_loss(batch["uld_p_t"], logits[:, :-1], batch["uld_mask"]))
        if method == "mined":
            terms.append(mined_loss(batch["mined_lp_t"], logits[:, :-1], x[:, 1:], batch["mined_one_to_one"],
                                    m[:, 1:]))
        if method == "dskd":
            emb = self.model.get_input_embeddings().weight
            student = {"input": x[:, :-1], "target": x[:, 1:], "mask": m[:, 1:], "hidden": hidden[0][:, :-1],
                       "logits": logits[:, :-1], "embed": emb, "head": self.model.get_output_embeddings().weight}
            teacher = {"input": batch["t_input"], "target": batch["t_target"], "mask": batch["t_mask"],
                       "hidden": batch["t_hidden"], "logits": batch["t_logits"], "embed": self.teacher_embed,
                       "head": self.teacher_head}
            terms.append(dskd_loss(self.projectors, student, teacher))
        if method in ("alm", "alm_nodebias", "alm+sft"):
            key = "fine" if method == "alm_nodebias" else "word"
            lp_s = chunk_logprobs(lp, batch[f"{key}_idx"], batch[f"{key}_lp_t"].shape[1])
            if key == "word":  # outcome-chunk debiasing: + log P_S(next token starts a word)
                end = batch["word_end"]
                sp = _space_logprob(logits, self.space_ids.to(logits.device))
                lp_s = lp_s + torch.where(end >= 0, sp.gather(1, end.clamp(min=0)), torch.zeros_like(lp_s))
            terms.append(alm_loss(batch[f"{key}_lp_t"], lp_s, batch[f"{key}_mask"], tau=self.hparams.tau))
        if self.hparams.balance == "gradmag" and len(terms) > 1:
            w = gradmag_weights(terms, list(last_block(self.model).parameters()))
            loss = sum(wi * t for wi, t in zip(w, terms))
        else:
            loss = sum(terms)
        self._losses.append(loss.detach())
        return loss

    def configure_optimizers(self):
        from neurips25.lm import warmup_cosine

        hp = self.hparams
        opt = torch.optim.AdamW(self.parameters(), lr=hp.lr, betas=(0.9, 0.98), weight_decay=0.0)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: warmup_cosine(s, warmup=hp.warmup, total=hp.total_steps))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def distill(student, data: DistillData, method: str, *, steps: int = 100, batch_size: int = 32,
            tau: float = 1.0, lr: float = 1e-3, warmup: int = 10, seed: int = 0, balance: str = "sum",
            **trainer_kwargs: Any) -> CrossTokenizerDistiller:
    """Train ``student`` (in place) for ``steps`` optimizer steps of ``method`` on ``data`` (capped by
    ``NEURIPS25_SMOKE=1``), two-term objectives combined by ``balance`` (``"sum"`` or ``"gradmag"``).
    Extra keyword arguments go to ``make_trainer`` (e.g. ``accelerator="cpu"``; by default a GPU is used
    when present)."""
    from neurips25.runtime import cap, make_trainer

    if not isinstance(data, DistillData):
        raise TypeError(f"data must be a DistillData, got {type(data).__name__}")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    steps = cap(steps)
    L.seed_everything(seed, verbose=False)
    module = CrossTokenizerDistiller(student, method, tau=tau, lr=lr, warmup=min(warmup, steps - 1) if steps > 1
                                     else 0, total_steps=steps, teacher_dim=data.teacher_embed.shape[1],
                                     balance=balance)
    module.space_ids = data.space_s
    if method == "dskd":
        module.teacher_embed, module.teacher_head = data.teacher_embed, data.teacher_head
    trainer = make_trainer(max_epochs=None, max_steps=steps, limit_val_batches=0, num_sanity_val_steps=0,
                           **trainer_kwargs)
    student.train()
    trainer.fit(module, train_dataloaders=data.loader(batch_size, seed, method))
    student.eval()
    return module
