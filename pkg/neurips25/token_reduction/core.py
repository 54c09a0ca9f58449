"""Frequency tools, token bookkeeping and the five reducers (each returns a source matrix ``C``)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from ..vision import TokenState

METHODS = ("ours", "keep_lf", "evit", "tome", "random")


# --- frequency tools ------------------------------------------------------------------------------

def high_pass(X: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
    """``H_f[X] = (I - (1/n) 1 1^T) X`` over the token axis (-2); with ``weight`` (..., n) a weighted
    mean is removed instead and zero-weight (empty) tokens are zeroed."""
    if X.ndim < 2:
        raise ValueError(f"X must have shape (..., n, d), got {tuple(X.shape)}")
    if weight is None:
        return X - X.mean(-2, keepdim=True)
    w = weight.unsqueeze(-1).to(X.dtype)
    mu = (w * X).sum(-2, keepdim=True) / w.sum(-2, keepdim=True).clamp_min(1e-12)
    return (X - mu) * (w > 0)


def hf_energy(X: torch.Tensor, valid: torch.Tensor | None = None, relative: bool = True,
              weight: torch.Tensor | None = None) -> torch.Tensor:
    """``||H_f[X]||_F`` per sample (or ``/ ||X||_F`` when ``relative``) over the ``valid`` tokens.

    ``weight`` (..., n): count token ``i`` ``weight_i`` times (mean and norms weighted). With the
    token sizes it is the energy of the *unmerged* token map, in which a token that stands for ``s``
    patches appears as ``s`` copies of itself -- so averaging tokens shows up as lost HF energy."""
    w = torch.ones(X.shape[:-1], dtype=X.dtype, device=X.device) if weight is None else weight.to(X.dtype)
    if valid is not None:
        w = w * valid.to(X.dtype)
    r = w.clamp_min(0.0).sqrt().unsqueeze(-1)
    hf = (high_pass(X, w) * r).flatten(-2).norm(dim=-1)
    return hf / (X * r).flatten(-2).norm(dim=-1).clamp_min(1e-12) if relative else hf


# --- token bookkeeping ----------------------------------------------------------------------------

def window_ids(state: TokenState, grid: int, window: int) -> torch.Tensor:
    """Spatial window (0..window²-1, raster order) of each token's patch centroid; -1 for CLS/empty."""
    if grid % window:
        raise ValueError(f"window must divide the patch grid side {grid}, got {window}")
    idx = torch.arange(grid * grid, device=state.src.device)
    cell = (idx // grid) * window // grid * window + (idx % grid) * window // grid  # window of each patch
    patch = state.src[..., 1:]
    cen = (patch * cell.to(patch.dtype)).sum(-1) / patch.sum(-1).clamp_min(1e-12)
    wid = cen.round().long()
    return torch.where(patch.sum(-1) > 0, wid, torch.full_like(wid, -1))


@dataclass(frozen=True)
class ReductionPlan:
    """Which reducer runs after the attention of which blocks. ``keep_ratio`` is the fraction of the
    non-CLS tokens (DC and fused tokens included) kept at each reduction layer, so all methods run on
    equal token budgets. ``score``: ``"signed"`` sums ``A^HP`` as the paper's formula is written (the
    default); ``"abs"`` sums ``|A^HP|``, which gives a token every query ignores 1 per head, as much as
    one every query attends at twice the uniform rate ``2/n``, so blank patches score positive (an
    ablation). ``proportional``: add ``log(size)`` to the attention logits (ToMe's default).
    ``reweight``: apply the learnable per-head ``omega1, omega2`` of Eq. (attention re-weighting).
    ``dc``: for ``ours``/``keep_lf``, aggregate the tokens not kept into DC tokens (default); ``False``
    drops them and spends the whole budget on kept tokens (the paper's "HF only" / "LF only" ablations)."""

    method: str = "ours"
    keep_ratio: float = 0.7
    layers: tuple[int, ...] = (1, 2, 3)
    window: int = 1
    score: str = "signed"
    proportional: bool | None = None
    reweight: bool = False
    seed: int = 0
    dc: bool = True

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if isinstance(self.keep_ratio, bool) or not isinstance(self.keep_ratio, (int, float)) \
                or not 0.0 < self.keep_ratio <= 1.0:
            raise ValueError(f"keep_ratio must be a float in (0, 1], got {self.keep_ratio!r}")
        if not isinstance(self.window, int) or self.window < 1:
            raise ValueError(f"window must be a positive int, got {self.window!r}")
        if self.score not in ("abs", "signed"):
            raise ValueError(f"score must be 'abs' or 'signed', got {self.score!r}")
        if not isinstance(self.dc, bool):
            raise ValueError(f"dc must be a bool, got {self.dc!r}")
        layers = tuple(self.layers)
        if any(not isinstance(i, int) or i < 0 for i in layers) or len(set(layers)) != len(layers):
            raise ValueError(f"layers must be distinct non-negative ints, got {self.layers!r}")
        object.__setattr__(self, "layers", layers)
        if self.proportional is None:
            object.__setattr__(self, "proportional", self.method == "tome")

    def n_keep(self, n_tokens: int) -> int:
        """Tokens kept (besides CLS) out of ``n_tokens`` non-CLS tokens."""
        return max(1, min(n_tokens, round(self.keep_ratio * n_tokens)))

    def to_dict(self) -> dict:
        return asdict(self)

    # the hooks TinyViT.forward calls (neurips25.vision.ReducerPlan)
    def make_generator(self) -> torch.Generator | None:
        """One generator per forward pass for random pruning, seeded by ``seed``."""
        return torch.Generator().manual_seed(self.seed) if self.method == "random" else None

    def reduce(self, model, x, state, attn, keys, generator=None):
        """Reduce the tokens ``x`` of ``model`` after a block's attention ``attn`` (and ``keys``)."""
        n_keep = self.n_keep(x.shape[1] - 1)
        if self.method in ("ours", "keep_lf"):
            C, is_dc = reduce_ours(attn, state, n_keep, model.grid, self.window, self.score,
                                   keep_high=self.method == "ours", dc=self.dc)
            return apply_reduction(x, state, C, is_dc)
        if self.method == "evit":
            C, W = reduce_evit(attn, state, n_keep)
            return apply_reduction(x, state, C, W=W)
        if self.method == "tome":
            return apply_reduction(x, state, reduce_tome(keys, state, n_keep))
        if generator is None:
            generator = self.make_generator()
        return apply_reduction(x, state, reduce_random(state, n_keep, generator))


# --- the reducers: each returns the source matrix C (B, n', n) of the new tokens ---------------------

def hf_scores(attn: torch.Tensor, state: TokenState, score: str = "signed") -> torch.Tensor:
    """Per-token HF score ``sum_h sum_q f(A^HP_{q,k})`` with ``A^HP = A - A^LP``, ``A^LP = (1/n) 1 1^T``
    over the ``n`` valid keys (Sec. 3.2); ``f`` = identity (``"signed"``, the paper's formula) or
    ``|.|`` (``"abs"``). Signed, it is the attention token ``k`` receives minus its uniform share.
    ``attn``: (B, H, n, n)."""
    if score not in ("abs", "signed"):
        raise ValueError(f"score must be 'abs' or 'signed', got {score!r}")
    if attn.ndim != 4 or attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attn must have shape (B, H, n, n), got {tuple(attn.shape)}")
    valid = state.valid.to(attn.dtype)
    a_lp = valid / valid.sum(-1, keepdim=True)                    # each row of A^LP, (B, n)
    a_hp = (attn - a_lp[:, None, None, :]) * valid[:, None, None, :]
    a_hp = a_hp.abs() if score == "abs" else a_hp
    return (a_hp * valid[:, None, :, None]).sum((1, 2))          # sum over heads and valid queries


def _rows(B: int, n_new: int, n: int, like: torch.Tensor) -> torch.Tensor:
    return torch.zeros(B, n_new, n, dtype=like.dtype, device=like.device)


def reduce_ours(attn, state, n_keep, grid, window=1, score="signed", keep_high=True, dc=True):
    """HF tokens kept, LF tokens averaged into ``window²`` DC tokens (recursively with earlier DC tokens).

    Layout of the output: ``[CLS, n_keep - window² kept tokens, DC_0 .. DC_{window²-1}]``. A DC token
    of a window without LF tokens is empty (size 0) and masked out of attention. ``keep_high=False``
    keeps the lowest scores instead (keep-LF); ``dc=False`` drops the tokens not kept (no DC token)."""
    B, n = state.is_dc.shape
    n_dc = window * window if dc else 0
    had_dc = bool(state.is_dc.any())
    if had_dc and not dc:
        raise ValueError("dc=False cannot follow a reduction that made DC tokens")
    if had_dc and int(state.is_dc[0].sum()) != n_dc:
        raise ValueError(f"window={window} does not match the {int(state.is_dc[0].sum())} DC tokens present")
    n_sel = n_keep - n_dc
    cand = ~state.is_dc
    cand[:, 0] = False
    if n_sel < 1 or n_sel > int(cand[0].sum()):
        raise ValueError(f"keep budget {n_keep} must exceed the {n_dc} DC tokens of window={window} "
                         f"and leave at most the {int(cand[0].sum())} candidates; raise keep_ratio")
    s = hf_scores(attn, state, score)
    s = s if keep_high else -s
    s = s.masked_fill(~cand, -math.inf)
    keep = s.topk(n_sel, dim=-1).indices.sort(-1).values          # raster order, deterministic
    C = _rows(B, 1 + n_keep, n, attn)
    b = torch.arange(B, device=attn.device)[:, None]
    C[:, 0, 0] = 1.0
    C[b, torch.arange(1, 1 + n_sel, device=attn.device)[None], keep] = 1.0
    is_dc = torch.zeros(B, 1 + n_keep, dtype=torch.bool, device=attn.device)
    if not dc:
        return C, is_dc
    lf = cand.clone()
    lf[b, keep] = False
    wid = window_ids(state, grid, window)
    onehot = F.one_hot(wid.clamp_min(0), n_dc).to(attn.dtype) * lf[..., None]   # (B, n, n_dc)
    C[:, 1 + n_sel:, :] = onehot.transpose(1, 2)
    if had_dc:  # recursive update: DC_j <- size-weighted mean of (old DC_j, new LF tokens of window j)
        C[:, 1 + n_sel:, n - n_dc:] += torch.eye(n_dc, dtype=attn.dtype, device=attn.device)
    is_dc[:, 1 + n_sel:] = True
    return C, is_dc


def reduce_evit(attn, state, n_keep):
    """EViT: keep the ``n_keep - 1`` tokens with the highest CLS attention (mean over heads); fuse the
    rest into one token, weighted by that attention. Returns (C, W) -- W holds the fusion weights."""
    B, n = state.is_dc.shape
    if n_keep < 2 or n_keep - 1 > n - 2:
        raise ValueError(f"EViT needs 2 <= n_keep <= {n - 1} (one slot is the fused token), got {n_keep}")
    cls_attn = attn[:, :, 0, :].mean(1).masked_fill(~state.valid, 0.0)
    cls_attn[:, 0] = -math.inf
    keep = cls_attn.topk(n_keep - 1, dim=-1).indices.sort(-1).values
    b = torch.arange(B, device=attn.device)[:, None]
    C = _rows(B, 1 + n_keep, n, attn)
    C[:, 0, 0] = 1.0
    C[b, torch.arange(1, n_keep, device=attn.device)[None], keep] = 1.0
    rest = torch.ones(B, n, dtype=torch.bool, device=attn.device)
    rest[:, 0] = False
    rest[b, keep] = False
    C[:, -1, :] = rest.to(attn.dtype)
    W = C.clone()
    W[:, -1, :] = rest * cls_attn.clamp_min(0.0) + 1e-12 * rest   # attention-weighted fused token
    return C, W


def reduce_tome(keys, state, n_keep):
    """ToMe bipartite soft matching (Bolya et al. 2023) on the keys (B, n, d), repeated until ``n_keep``
    non-CLS tokens remain; CLS is protected. Returns the source matrix C; merging is size-weighted."""
    B, n = state.is_dc.shape
    if n_keep > n - 1:
        raise ValueError(f"n_keep must be <= {n - 1}, got {n_keep}")
    size = state.size
    C = torch.eye(n, dtype=keys.dtype, device=keys.device).expand(B, -1, -1)
    bb = torch.arange(B, device=keys.device)[:, None]
    while C.shape[1] - 1 > n_keep:
        m = C.shape[1]
        a_idx = torch.arange(1, m, 2, device=keys.device)   # alternate split, CLS left out
        b_idx = torch.arange(2, m, 2, device=keys.device)
        r = min(m - 1 - n_keep, len(a_idx))
        W = C * size[:, None, :]
        metric = F.normalize((W @ keys) / W.sum(-1, keepdim=True).clamp_min(1e-12), dim=-1)
        best, match = (metric[:, a_idx] @ metric[:, b_idx].transpose(1, 2)).max(-1)  # (B, |A|)
        order = best.sort(dim=-1, descending=True, stable=True).indices
        merged, kept_a = order[:, :r], order[:, r:].sort(-1).values
        n_ka = kept_a.shape[1]
        step = _rows(B, m - r, m, keys)
        step[:, 0, 0] = 1.0
        step[bb, torch.arange(1, 1 + n_ka, device=keys.device)[None], a_idx[kept_a]] = 1.0
        step[:, 1 + n_ka:, b_idx] = torch.eye(len(b_idx), dtype=keys.dtype, device=keys.device)
        step[bb, 1 + n_ka + match.gather(1, merged), a_idx[merged]] = 1.0   # A token -> its best B
        C = step @ C
    return C


def reduce_random(state, n_keep, generator):
    """Keep ``n_keep`` uniformly random non-CLS tokens (drop the rest)."""
    B, n = state.is_dc.shape
    if n_keep > n - 1:
        raise ValueError(f"n_keep must be <= {n - 1}, got {n_keep}")
    noise = torch.rand(B, n, generator=generator).to(state.src.device)
    noise = noise.masked_fill(~state.valid, -1.0)
    noise[:, 0] = -math.inf
    keep = noise.topk(n_keep, dim=-1).indices.sort(-1).values
    C = _rows(B, 1 + n_keep, n, state.src)
    C[:, 0, 0] = 1.0
    dev = state.src.device
    C[torch.arange(B, device=dev)[:, None], torch.arange(1, 1 + n_keep, device=dev)[None], keep] = 1.0
    return C


def apply_reduction(x: torch.Tensor, state: TokenState, C: torch.Tensor, is_dc: torch.Tensor | None = None,
                    W: torch.Tensor | None = None) -> tuple[torch.Tensor, TokenState]:
    """``X' = M X`` with ``M`` the row-normalised ``W`` (default: ``C`` weighted by token sizes, i.e.
    a size-weighted average), and the new sources ``C @ src``. Every column of ``C`` sums to <= 1
    (each old token goes to at most one new token) -- the condition of Prop. 3.1."""
    W = C * state.size[:, None, :] if W is None else W
    M = W / W.sum(-1, keepdim=True).clamp_min(1e-12)
    if is_dc is None:
        is_dc = torch.zeros(C.shape[:2], dtype=torch.bool, device=C.device)
    return M @ x, TokenState(C @ state.src, is_dc)
