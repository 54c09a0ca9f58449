"""Models a client receives: sub-models of the tiny ViT (selected block + compressed rest), LoRA
adapters, layer compression by distillation on the proxy set, and the compute/memory accountant."""
from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..runtime import cap, check_int, lightning_module, make_trainer
from ..vision import TinyViT, TokenState

# --- model specs and sub-models ------------------------------------------------------------------------

@dataclass(frozen=True)
class ModelSpec:
    """What a client needs to rebuild the model it is sent (the architecture; weights travel apart).
    ``layer_map[j]`` is the global layer that sub-model block ``j`` *is* (``-1``: a compressed block)."""

    dim: int = 32
    heads: int = 4
    mlp_ratio: float = 2.0
    num_classes: int = 5
    layer_map: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
    lora_rank: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


class LoRALinear(nn.Module):
    """``W x + b + (s/r) B A x`` with ``A`` (r, in) random, ``B`` (out, r) zero: the update starts at
    zero and only ``A, B`` train (Hu et al., 2022). A thin wrapper because the tiny ViT is no
    Hugging Face model; it keeps the state dict a plain ``{name: tensor}`` that aggregates like any other."""

    def __init__(self, base: nn.Linear, rank: int, scale: float = 1.0, generator: torch.Generator | None = None):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"base must be nn.Linear, got {type(base).__name__}")
        rank = check_int(rank, "rank")
        self.base, self.rank, self.scale = base, rank, scale
        self.lora_A = nn.Parameter(torch.randn(rank, base.in_features, generator=generator) / math.sqrt(base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank))

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A.T @ self.lora_B.T) * (self.scale / self.rank)


def add_lora(model: TinyViT, rank: int, seed: int = 0) -> TinyViT:
    """Wrap every block's attention ``qkv`` and ``proj`` in :class:`LoRALinear` (in place)."""
    g = torch.Generator().manual_seed(seed)
    for blk in model.blocks:
        blk.attn.qkv = LoRALinear(blk.attn.qkv, rank, generator=g)
        blk.attn.proj = LoRALinear(blk.attn.proj, rank, generator=g)
    return model


def build_model(spec: ModelSpec) -> TinyViT:
    """An (untrained) tiny ViT with ``len(spec.layer_map)`` blocks, LoRA-wrapped if ``spec.lora_rank``."""
    model = TinyViT(dim=spec.dim, depth=len(spec.layer_map), heads=spec.heads, mlp_ratio=spec.mlp_ratio,
                    num_classes=spec.num_classes)
    return add_lora(model, spec.lora_rank) if spec.lora_rank else model


def set_trainable(model: nn.Module, names) -> nn.Module:
    """Freeze every parameter of ``model`` except those named in ``names`` (in place; returns ``model``)."""
    names = set(names)
    for n, p in model.named_parameters():
        p.requires_grad_(n in names)
    return model


def submodel(model: TinyViT, blocks: list[nn.Module]) -> TinyViT:
    """A copy of ``model`` (embedding, final norm, head) running copies of ``blocks`` instead of its own."""
    sub = copy.deepcopy(model, {id(model.blocks): nn.ModuleList()})   # skip copying the old blocks
    sub.blocks = nn.ModuleList(copy.deepcopy(b) for b in blocks)
    sub.depth = len(blocks)
    return sub


def run_blocks(blocks, x: torch.Tensor, n_patches: int):
    """Tokens ``x`` through ``blocks`` as ``TinyViT.forward`` does without reduction; returns the hidden
    states after each block and each block's attention map (B, heads, n, n)."""
    state = TokenState.initial(len(x), n_patches, x.device)
    hidden, attns = [], []
    for blk in blocks:
        h, attn, _ = blk.attn(blk.norm1(x), state)
        x = x + h
        x = x + blk.mlp(blk.norm2(x))
        hidden.append(x)
        attns.append(attn)
    return hidden, attns


# --- compression by distillation on the proxy set ------------------------------------------------------

def n_compressed(n_layers: int, r: float) -> int:
    """``ceil(n * r)`` layers stand in for ``n`` unselected ones (r = 1: no compression)."""
    if isinstance(r, bool) or not (isinstance(r, (int, float)) and 0 < r <= 1):
        raise ValueError(f"r must be in (0, 1], got {r!r}")
    n_layers = check_int(n_layers, "n_layers", 0)
    return math.ceil(n_layers * r - 1e-9)


def compression_groups(n_layers: int, m: int) -> list[list[int]]:
    """Split ``n_layers`` consecutive teacher layers into ``m`` consecutive groups; student layer ``j``
    is initialised from, and distilled towards, the last layer of group ``j``."""
    return [g.tolist() for g in np.array_split(np.arange(n_layers), m)] if m else []


def distill_loss(h_s, h_t, a_s, a_t, alpha: float) -> torch.Tensor:
    """``E = (1 - alpha) MSE(H_t, H_s) + alpha KL(A_t || A_s)`` averaged over the matched layers
    (hidden states and attention maps of the teacher's group-end layers)."""
    mse = sum(F.mse_loss(s, t) for s, t in zip(h_s, h_t)) / len(h_s)
    kl = sum((t * (t.clamp_min(1e-12).log() - s.clamp_min(1e-12).log())).sum(-1).mean()
             for s, t in zip(a_s, a_t)) / len(a_s)
    return (1 - alpha) * mse + alpha * kl




class LayerDistiller(lightning_module()):
    """Server-side distillation (Eq. E) of several compressed segments at once on proxy hidden states.
    ``segments[s]`` are the student blocks of segment ``s``; a batch holds, per segment, ``(H_in, H_t
    per group end, A_t per group end)``. The loss is the sum of the segments' ``E`` -- their parameters
    are disjoint and Adam is per-parameter, so this equals distilling each segment on its own."""

    def __init__(self, segments: list[list[nn.Module]], n_patches: int, alpha: float = 0.5, lr: float = 1e-3):
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        self.save_hyperparameters(ignore=["segments"])
        self.segments = nn.ModuleList(nn.ModuleList(s) for s in segments)

    def training_step(self, batch, batch_idx):
        loss = 0
        for students, (x, h_t, a_t) in zip(self.segments, batch):
            h_s, a_s = run_blocks(students, x, self.hparams.n_patches)
            loss = loss + distill_loss(h_s, h_t, a_s, a_t, self.hparams.alpha)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.segments.parameters(), lr=self.hparams.lr)


def compress_segments(segments: dict, r: float, n_patches: int, steps: int = 20, alpha: float = 0.5,
                      lr: float = 1e-3) -> dict:
    """Compress each segment of consecutive teacher blocks into ``ceil(n r)`` blocks, initialised from
    the last layer of each group (:func:`compression_groups`) and distilled for ``steps`` full-batch
    Adam steps with :func:`distill_loss` on the proxy set (all segments in one Lightning fit).

    ``segments[key] = (blocks, h_in, hidden, attns)``: the teacher blocks, the proxy tokens entering
    the segment, and the teacher's output and attention map of each of its blocks. Returns
    ``{key: compressed blocks}`` (copies of the originals where nothing is compressed)."""
    out, jobs, data = {}, [], []
    for key, (blocks, h_in, hidden, attns) in segments.items():
        n = len(blocks)
        m = n_compressed(n, r)
        if m == n or n == 0:
            out[key] = [copy.deepcopy(b) for b in blocks]
            continue
        ends = [g[-1] for g in compression_groups(n, m)]
        out[key] = [copy.deepcopy(blocks[e]).requires_grad_(True) for e in ends]
        jobs.append(out[key])
        data.append((h_in, [hidden[e] for e in ends], [attns[e] for e in ends]))
    if steps > 0 and jobs:
        loader = torch.utils.data.DataLoader(_Repeat([data]), batch_size=None)
        make_trainer(None, max_steps=cap(steps)).fit(LayerDistiller(jobs, n_patches, alpha, lr),
                                                     train_dataloaders=loader)
    for blocks in out.values():
        for b in blocks:
            b.requires_grad_(False)
    return out


def compress_segment(blocks, h_in, hidden, attns, r: float, n_patches: int, steps: int = 20,
                     alpha: float = 0.5, lr: float = 1e-3) -> list[nn.Module]:
    """One segment through :func:`compress_segments`."""
    return compress_segments({0: (blocks, h_in, hidden, attns)}, r, n_patches, steps, alpha, lr)[0]


class _Repeat(torch.utils.data.IterableDataset):
    """One full batch, forever (the distiller takes full-batch steps on the small proxy set)."""

    def __init__(self, batches):
        super().__init__()
        self.batches = batches

    def __iter__(self):
        while True:
            yield from self.batches


# --- compute / memory accountant -----------------------------------------------------------------------

@dataclass
class Cost:
    """Per-client cost of one local step on a batch: trainable parameters, FLOPs (forward + backward,
    counted by ``torch.utils.flop_counter``), and an *estimate* of peak training memory in bytes:
    weights + gradients + two Adam moments of the trainable parameters + the activations autograd
    saves for the backward pass (measured with saved-tensor hooks, parameters excluded)."""

    trainable: int
    params: int
    flops: int
    memory: int
    parts: dict = field(default_factory=dict)


def step_cost(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> Cost:
    """Count one training step (forward, cross-entropy, backward) of ``model`` with its current
    ``requires_grad`` flags on the batch ``(x, y)``; leaves no gradients behind."""
    from torch.utils.flop_counter import FlopCounterMode

    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    if not trainable:
        raise ValueError("model has no trainable parameters")
    pids = {p.data_ptr() for p in params}
    seen: dict[int, int] = {}

    def pack(t):
        if t.data_ptr() not in pids and t.data_ptr() not in seen:
            seen[t.data_ptr()] = t.numel() * t.element_size()
        return t

    with FlopCounterMode(display=False) as fc, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = F.cross_entropy(model(x), y)
        grads = torch.autograd.grad(loss, trainable, allow_unused=True)
    del grads
    weights = sum(p.numel() * p.element_size() for p in params)
    n_train = sum(p.numel() for p in trainable)
    states = 3 * sum(p.numel() * p.element_size() for p in trainable)   # grad + Adam m, v
    act = sum(seen.values())
    return Cost(n_train, sum(p.numel() for p in params), int(fc.get_total_flops()), weights + states + act,
                {"weights": weights, "grads+adam": states, "activations": act})


def round_time(flops_per_step, speeds, K: int) -> float:
    """Simulated wall-clock of a synchronous round: the server waits for the slowest participant,
    ``max_i K * FLOPs_i / speed_i`` (stragglers set the pace)."""
    f, s = np.asarray(flops_per_step, float), np.asarray(speeds, float)
    if f.shape != s.shape or f.ndim != 1 or len(f) == 0:
        raise ValueError("flops_per_step and speeds must be 1-D of equal, non-zero length")
    if not (np.isfinite(s).all() and (s > 0).all()):
        raise ValueError(f"speeds must be finite and positive, got {s.tolist()}")
    if not (np.isfinite(f).all() and (f >= 0).all()):
        raise ValueError(f"flops_per_step must be finite and non-negative, got {f.tolist()}")
    if not isinstance(K, (int, np.integer)) or isinstance(K, bool) or K < 1:
        raise ValueError(f"K must be a positive int (local steps), got {K!r}")
    return float((K * f / s).max())
