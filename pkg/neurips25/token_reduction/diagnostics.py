"""Accuracy, frequency diagnostics (HF energy, DC cosines, HF/LF maps), MACs and throughput."""
from __future__ import annotations

import math
import time

import torch
import torch.nn.functional as F

from ..runtime import check_int
from .core import (
    ReductionPlan,
    hf_energy,
    hf_scores,
    window_ids,
)
from .vit import TinyViT

# --- evaluation and diagnostics ---------------------------------------------------------------------

def _to_model(model: torch.nn.Module, t: torch.Tensor) -> torch.Tensor:
    """``t`` on the device of ``model``'s parameters (data stays where the caller keeps it)."""
    return t.to(next(model.parameters()).device)


@torch.no_grad()
def evaluate(model: TinyViT, X: torch.Tensor, y: torch.Tensor, plan: ReductionPlan | None = None) -> float:
    """Top-1 accuracy of ``model`` (run with ``plan``) on ``(X, y)``."""
    if len(X) != len(y) or len(y) == 0:
        raise ValueError(f"X and y must be non-empty and equally long, got {len(X)} and {len(y)}")
    model.eval()
    return float((model(_to_model(model, X), plan).argmax(-1) == _to_model(model, y)).float().mean())


def _partition(attn, state, n_keep, score="signed"):
    """Boolean (B, n) masks of the HF tokens (top ``n_keep`` scores) and LF tokens among the patches."""
    cand = ~state.is_dc & state.valid
    cand[:, 0] = False
    s = hf_scores(attn, state, score).masked_fill(~cand, -math.inf)
    hf = torch.zeros_like(cand)
    hf.scatter_(1, s.topk(n_keep, -1).indices, True)
    return hf & cand, ~hf & cand


@torch.no_grad()
def dc_cosine_stats(model: TinyViT, X: torch.Tensor, keep_ratio: float = 0.5, score: str = "signed",
                    control: bool = False, seed: int = 0) -> dict[str, torch.Tensor]:
    """Fig. 2b analogue on the unreduced model: per block, the mean cosine similarity of the LF tokens
    and of the HF tokens to the DC token (the mean of the LF tokens), partitioned by ``hf_scores``.
    ``control=True`` partitions at random into groups of the same sizes instead (a DC token is the
    mean of its group, so some closeness is automatic; the control measures how much)."""
    ReductionPlan(keep_ratio=keep_ratio, score=score)  # validates
    model.eval()
    _, traces = model(_to_model(model, X), trace=True)
    g = torch.Generator().manual_seed(seed)
    out = {"lf": [], "hf": []}
    for t in traces:
        n_keep = ReductionPlan(keep_ratio=keep_ratio).n_keep(t.x_attn.shape[1] - 1)
        if control:
            attn = torch.rand(t.attn.shape, generator=g).to(t.attn.device)  # CPU stream: same on any device
            hf, lf = _partition(attn, t.state_in, n_keep, "signed")
        else:
            hf, lf = _partition(t.attn, t.state_in, n_keep, score)
        x = t.x_attn
        dc = (x * lf[..., None]).sum(1, keepdim=True) / lf.sum(1, keepdim=True)[..., None]
        cos = F.cosine_similarity(x, dc, dim=-1)
        out["lf"].append(((cos * lf).sum(1) / lf.sum(1)).mean())
        out["hf"].append(((cos * hf).sum(1) / hf.sum(1)).mean())
    return {k: torch.stack(v) for k, v in out.items()}


@torch.no_grad()
def hf_lf_partition(model: TinyViT, image: torch.Tensor, layer: int, keep_ratio: float = 0.5,
                    window: int = 1, score: str = "signed") -> dict[str, torch.Tensor]:
    """Which patches block ``layer`` of the unreduced model calls HF (kept) or LF (sent to a DC token),
    as ``(grid, grid)`` maps: ``hf`` (bool) and ``window`` (the DC window of each patch)."""
    if not 0 <= layer < model.depth:
        raise ValueError(f"layer must be in [0, {model.depth}), got {layer}")
    plan = ReductionPlan(keep_ratio=keep_ratio, window=window, score=score)
    model.eval()
    _, traces = model(_to_model(model, image.reshape(1, -1)), trace=True)
    t = traces[layer]
    n_sel = plan.n_keep(model.n_patches) - window * window
    if n_sel < 1:
        raise ValueError(f"keep_ratio={keep_ratio} leaves no HF token beside {window * window} DC tokens")
    hf, _ = _partition(t.attn, t.state_in, n_sel, score)
    g = model.grid
    return {"hf": hf[0, 1:].reshape(g, g), "window": window_ids(t.state_in, g, window)[0, 1:].reshape(g, g),
            "score": hf_scores(t.attn, t.state_in, score)[0, 1:].reshape(g, g)}


@torch.no_grad()
def hf_energy_per_layer(model: TinyViT, X: torch.Tensor, plan: ReductionPlan | None = None,
                        sized: bool = False) -> torch.Tensor:
    """Mean relative high-frequency energy ``||H_f[X_l]||_F / ||X_l||_F`` of each block's output tokens
    (the valid ones) -- the rank-collapse curve (Sec. 3.1). ``sized=True`` weights each token by the
    number of patches it stands for, i.e. measures the unmerged token map (see :func:`hf_energy`)."""
    model.eval()
    _, traces = model(_to_model(model, X), plan, trace=True)
    return torch.stack([hf_energy(t.x_out, t.state_out.valid, weight=t.state_out.size if sized else None).mean()
                        for t in traces])


def unmerged_map(x: torch.Tensor, state, grid: int) -> torch.Tensor:
    """The patch tokens of ``x`` (B, n, d) put back on the ``grid x grid`` patch grid, (B, d, grid, grid):
    each patch takes the value of the token that stands for it (a merged, fused or DC token is copied
    onto all its patches, ToMe's "unmerge"); a pruned patch, which no token stands for, takes the
    size-weighted mean of the covered ones (adds no frequency but DC)."""
    if x.ndim != 3 or state.src.shape[:2] != x.shape[:2] or state.src.shape[-1] != 1 + grid * grid:
        raise ValueError(f"x (B, n, d) and state.src (B, n, 1 + grid²) must match, got {tuple(x.shape)}, "
                         f"{tuple(state.src.shape)} and grid={grid}")
    src = state.src[:, 1:, 1:]                                   # non-CLS tokens x patches
    cover = src.sum(1)                                           # (B, P): 1 if some token covers the patch
    U = src.transpose(1, 2) @ x[:, 1:]                           # (B, P, d)
    mu = (U * cover[..., None]).sum(1, keepdim=True) / cover.sum(1)[:, None, None].clamp_min(1e-12)
    U = torch.where(cover[..., None] > 0, U, mu)
    return U.transpose(1, 2).reshape(x.shape[0], x.shape[-1], grid, grid)


@torch.no_grad()
def hf_amplitude_per_layer(model: TinyViT, X: torch.Tensor, plan: ReductionPlan | None = None) -> torch.Tensor:
    """The Fourier view of rank collapse (the paper's Fig. 1, after Park & Kim 2022): per block, the
    log amplitude of the 2-D Fourier transform of the :func:`unmerged_map` at the highest frequency
    (pi, pi) minus that at frequency 0, averaged over images and channels. More negative = less
    high-frequency signal left relative to DC."""
    if X.ndim < 2 or len(X) == 0:
        raise ValueError(f"X must be a non-empty batch of images, got shape {tuple(X.shape)}")
    model.eval()
    _, traces = model(_to_model(model, X), plan, trace=True)
    h = model.grid // 2
    out = []
    for t in traces:
        amp = torch.fft.fft2(unmerged_map(t.x_out, t.state_out, model.grid)).abs().add(1e-6).log().mean((0, 1))
        out.append(amp[h, h] - amp[0, 0])
    return torch.stack(out)


@torch.no_grad()
def reduction_step(model: TinyViT, X: torch.Tensor, plan: ReductionPlan, layer: int) -> dict[str, float]:
    """What one reduction does by itself: ``plan``'s reducer applied once, at block ``layer`` of the
    *unreduced* model, to the tokens it sees there (after the attention).

    Returns ``hf_removed``, the fraction of the high-frequency energy ``||H_f[U]||_F^2`` of the
    patch map ``U`` that the reduction removes (``U`` before vs :func:`unmerged_map` after, mean over
    images; a pruned patch takes the mean, so pruning a fraction ``p`` of random patches removes about
    ``p``); ``largest_group``, the mean size of the largest group of patches averaged into one token;
    and ``group_cos``, the mean cosine similarity of each averaged patch's key to the mean key of its
    group (how alike the tokens a reducer averages are; NaN when it averages nothing)."""
    if not isinstance(layer, int) or not 0 <= layer < model.depth:
        raise ValueError(f"layer must be an int in [0, {model.depth}), got {layer!r}")
    if X.ndim < 2 or len(X) == 0:
        raise ValueError(f"X must be a non-empty batch of images, got shape {tuple(X.shape)}")
    model.eval()
    X = _to_model(model, X)
    _, traces = model(X, trace=True)
    t = traces[layer]
    x_in = traces[layer - 1].x_out if layer else model.embed(X)
    blk = model.blocks[layer]
    keys = blk.attn(blk.norm1(x_in), t.state_in)[2]                # the keys this block's attention used
    x2, s2 = plan.reduce(model, t.x_attn, t.state_in, t.attn, keys, plan.make_generator())
    g = model.grid
    before, after = (unmerged_map(x, s, g).flatten(2).transpose(1, 2) for x, s in ((t.x_attn, t.state_in), (x2, s2)))
    removed = 1 - hf_energy(after, relative=False).pow(2) / hf_energy(before, relative=False).pow(2)
    src = s2.src[:, 1:, 1:]                                        # new non-CLS tokens x patches
    size = src.sum(-1)
    kp = keys[:, 1:]
    mean_key = (src @ kp) / size.clamp_min(1.0)[..., None]         # (B, n', d)
    cos = F.cosine_similarity(kp[:, None], mean_key[:, :, None], dim=-1)   # (B, n', P)
    grouped = src * (size[..., None] >= 2)
    n_grouped = grouped.sum()
    return {"hf_removed": float(removed.mean()), "largest_group": float(size.max(-1).values.mean()),
            "group_cos": float((cos * grouped).sum() / n_grouped) if n_grouped > 0 else math.nan}


@torch.no_grad()
def cls_probe(model: TinyViT, train: tuple, test: tuple, plan: ReductionPlan | None = None,
              ridge: float = 1.0, batch: int = 256) -> torch.Tensor:
    """How early the CLS token holds the class: test accuracy of a linear probe on the CLS token after
    each block (run with ``plan``), fitted on ``train = (X, y)`` by ridge regression onto one-hot labels
    (closed form, standardised features, penalty ``ridge``) and scored on ``test``."""
    if not isinstance(ridge, (int, float)) or isinstance(ridge, bool) or ridge <= 0:
        raise ValueError(f"ridge must be a positive number, got {ridge!r}")
    for name, (X, y) in (("train", train), ("test", test)):
        if len(X) != len(y) or len(y) == 0:
            raise ValueError(f"{name} must be a non-empty (X, y) pair of equal lengths, got {len(X)} and {len(y)}")
    model.eval()

    def cls_features(X):
        chunks = []
        for i in range(0, len(X), batch):
            _, traces = model(_to_model(model, X[i:i + batch]), plan, trace=True)
            chunks.append(torch.stack([t.x_out[:, 0] for t in traces]))       # (depth, b, d)
        return torch.cat(chunks, 1).double().cpu()

    (Xtr, ytr), (Xte, yte) = train, test
    Ftr, Fte = cls_features(Xtr), cls_features(Xte)
    mu, sd = Ftr.mean(1, keepdim=True), Ftr.std(1, keepdim=True).clamp_min(1e-8)
    Ftr, Fte = (Ftr - mu) / sd, (Fte - mu) / sd
    Y = F.one_hot(ytr.cpu().long(), int(max(ytr.max(), yte.max())) + 1).double()
    prior = Y.mean(0)                                                        # the intercept
    eye = ridge * torch.eye(Ftr.shape[-1], dtype=Ftr.dtype)
    W = torch.linalg.solve(Ftr.transpose(1, 2) @ Ftr + eye, Ftr.transpose(1, 2) @ (Y - prior))  # (depth, d, k)
    return ((Fte @ W + prior).argmax(-1) == yte.cpu()).double().mean(-1).float()


@torch.no_grad()
def measure_macs(model: TinyViT, plan: ReductionPlan | None = None) -> float:
    """Multiply-accumulates of one forward pass of one image, counted by
    ``torch.utils.flop_counter.FlopCounterMode`` (matmuls and convolutions; MACs = FLOPs / 2).
    The reducers' own matrix products are counted too."""
    from torch.utils.flop_counter import FlopCounterMode

    model.eval()
    x = torch.zeros(1, model.in_chans, model.image_size, model.image_size,
                    device=next(model.parameters()).device)
    with FlopCounterMode(display=False) as fc:
        model(x, plan)
    return fc.get_total_flops() / 2


@torch.no_grad()
def measure_throughput(model: TinyViT, X: torch.Tensor, plan: ReductionPlan | None = None,
                       repeats: int = 5) -> float:
    """Images per second of ``model(X, plan)`` (best of ``repeats`` timed passes after one warm-up)."""
    repeats = check_int(repeats, "repeats")
    model.eval()
    X = _to_model(model, X)
    model(X, plan)
    best = math.inf
    for _ in range(repeats):
        if X.is_cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        model(X, plan)
        if X.is_cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return len(X) / best
