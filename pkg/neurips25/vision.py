"""A tiny Vision Transformer shared by the vision chapters (token reduction, LEFF).

``TinyViT`` is a small pre-norm ViT for tiny grey images (default: sklearn's 8x8 digits) whose
blocks can hand their attention map and keys to a pluggable token *reducer* after the attention
(a "plan"; see :class:`ReducerPlan`). ``TokenState`` is the bookkeeping every token carries: which
original patches it stands for (a 0/1 source matrix), hence its size, and whether it is a DC
token. ``ViTClassifier`` trains a ``TinyViT`` with Lightning.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import nn

from .runtime import check_int, lightning_module

__all__ = ["TokenState", "ReducerPlan", "Attention", "Block", "LayerTrace", "TinyViT", "ViTClassifier",
           "random_shift"]


# --- token bookkeeping ----------------------------------------------------------------------------

@dataclass
class TokenState:
    """What each current token stands for. ``src`` (B, n, 1+N) counts the original tokens (column 0
    = CLS, then the N patches in raster order) merged into it; ``is_dc`` (B, n) marks DC tokens."""

    src: torch.Tensor
    is_dc: torch.Tensor

    @classmethod
    def initial(cls, batch: int, n_patches: int, device=None) -> TokenState:
        eye = torch.eye(1 + n_patches, device=device).expand(batch, -1, -1).clone()
        return cls(eye, torch.zeros(batch, 1 + n_patches, dtype=torch.bool, device=device))

    @property
    def size(self) -> torch.Tensor:
        return self.src.sum(-1)

    @property
    def valid(self) -> torch.Tensor:
        return self.size > 0


@runtime_checkable
class ReducerPlan(Protocol):
    """What :meth:`TinyViT.forward` needs from a reduction plan: the blocks after whose attention it
    reduces (``layers``), whether attention adds ``log(size)`` (``proportional``) or applies the
    per-head re-weighting (``reweight``), a random generator for one forward pass (``make_generator``,
    may return None) and ``reduce(model, x, state, attn, keys, generator) -> (x', state')``."""

    layers: tuple[int, ...]
    proportional: bool
    reweight: bool

    def make_generator(self) -> torch.Generator | None: ...

    def reduce(self, model: TinyViT, x: torch.Tensor, state: TokenState, attn: torch.Tensor,
               keys: torch.Tensor, generator: torch.Generator | None) -> tuple[torch.Tensor, TokenState]: ...


# --- the tiny ViT -------------------------------------------------------------------------------------

class Attention(nn.Module):
    """Multi-head self-attention that returns its attention map and keys, masks empty tokens, can
    add ToMe's ``log(size)`` and applies the re-weighting ``A_hat = A^LP + (omega1 + 1) A^HP +
    omega2 A^DC`` (per-head ``omega1, omega2``, zero-initialised: ``A_hat = A`` until fine-tuned;
    ``A^DC`` is the attention paid to DC tokens, whose share ``omega2`` can raise)."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.omega1 = nn.Parameter(torch.zeros(heads))
        self.omega2 = nn.Parameter(torch.zeros(heads))

    def forward(self, x, state: TokenState, proportional=False, reweight=False):
        B, n, D = x.shape
        q, k, v = self.qkv(x).reshape(B, n, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        logits = (q @ k.transpose(-2, -1)) * self.scale
        size = state.size
        if proportional:
            logits = logits + size.log()[:, None, None, :]            # log 0 = -inf masks empty tokens
        elif not bool(state.valid.all()):
            logits = logits.masked_fill(~state.valid[:, None, None, :], -math.inf)
        attn = logits.softmax(-1)
        a = attn
        if reweight:
            valid = state.valid.to(x.dtype)
            a_lp = (valid / valid.sum(-1, keepdim=True))[:, None, None, :]
            w1, w2 = self.omega1[None, :, None, None], self.omega2[None, :, None, None]
            a = a_lp + (w1 + 1) * (attn - a_lp) + w2 * attn * state.is_dc[:, None, None, :]
        out = (a @ v).transpose(1, 2).reshape(B, n, D)
        return self.proj(out), attn, k.transpose(1, 2).reshape(B, n, D)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: float):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))


@dataclass
class LayerTrace:
    """Per block: tokens after attention (what the reducer sees), the attention map, the token state
    before reduction, and tokens + state after the whole block."""

    x_attn: torch.Tensor
    attn: torch.Tensor
    state_in: TokenState
    x_out: torch.Tensor
    state_out: TokenState
    extra: dict = field(default_factory=dict)


class TinyViT(nn.Module):
    """A small pre-norm Vision Transformer for tiny grey images (default: sklearn's 8x8 digits).

    Args:
        image_size: side of the square input image (pixels).
        patch_size: side of a square patch; ``(image_size // patch_size)**2`` patch tokens plus CLS.
        in_chans: input channels.
        num_classes: classifier outputs (read from the CLS token).
        dim, depth, heads, mlp_ratio: width, number of blocks, attention heads, MLP expansion.

    ``forward(images)`` takes ``(B, in_chans, H, W)`` or flattened ``(B, in_chans*H*W)`` images and
    returns logits. ``forward(images, plan=plan)`` reduces tokens after the attention of
    the plan's blocks; ``trace=True`` also returns a list of :class:`LayerTrace`.
    """

    def __init__(self, image_size: int = 8, patch_size: int = 2, in_chans: int = 1, num_classes: int = 10,
                 dim: int = 32, depth: int = 6, heads: int = 4, mlp_ratio: float = 2.0):
        super().__init__()
        for name, v in (("image_size", image_size), ("patch_size", patch_size), ("in_chans", in_chans),
                        ("num_classes", num_classes), ("dim", dim), ("depth", depth), ("heads", heads)):
            check_int(v, name)
        if image_size % patch_size:
            raise ValueError(f"patch_size must divide image_size={image_size}, got {patch_size}")
        if dim % heads:
            raise ValueError(f"heads must divide dim={dim}, got {heads}")
        self.image_size, self.patch_size, self.in_chans = image_size, patch_size, in_chans
        self.grid = image_size // patch_size
        self.n_patches, self.depth = self.grid ** 2, depth
        self.patch_embed = nn.Conv2d(in_chans, dim, patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        # A 2x2 patch holds 4 pixels, so many patches embed alike: a large position-embedding init
        # (std 0.5, not ViT's 0.02) makes tokens distinguishable from the start and trains ~3x faster.
        self.pos_embed = nn.Parameter(0.5 * torch.randn(1, 1 + self.n_patches, dim))
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio) for _ in range(depth))
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, num_classes)

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        s, c = self.image_size, self.in_chans
        if images.ndim == 2 and images.shape[1] == c * s * s:
            images = images.reshape(-1, c, s, s)
        if images.ndim != 4 or tuple(images.shape[1:]) != (c, s, s):
            raise ValueError(f"images must have shape (B, {c}, {s}, {s}) or (B, {c * s * s}), "
                             f"got {tuple(images.shape)}")
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        return torch.cat([self.cls_token.expand(len(x), -1, -1), x], 1) + self.pos_embed

    def forward(self, images, plan: ReducerPlan | None = None, trace: bool = False, generator=None):
        x = self.embed(images)
        state = TokenState.initial(len(x), self.n_patches, x.device)
        if plan is not None and any(i >= self.depth for i in plan.layers):
            raise ValueError(f"plan.layers must be < depth={self.depth}, got {plan.layers}")
        if plan is not None and generator is None:
            generator = plan.make_generator()
        traces = []
        for i, blk in enumerate(self.blocks):
            h, attn, keys = blk.attn(blk.norm1(x), state, proportional=bool(plan and plan.proportional),
                                     reweight=bool(plan and plan.reweight))
            x = x + h
            x_attn, state_in = x, state
            if plan is not None and i in plan.layers:
                x, state = plan.reduce(self, x, state, attn, keys, generator)
            x = x + blk.mlp(blk.norm2(x))
            if trace:
                traces.append(LayerTrace(x_attn, attn, state_in, x, state))
        logits = self.head(self.norm(x[:, 0]))
        return (logits, traces) if trace else logits


# --- training -----------------------------------------------------------------------------------------

class ViTClassifier(lightning_module()):
    """Trains a :class:`TinyViT` (8x8 images, ``patch_size`` patches) with cross-entropy (AdamW,
    one-cycle learning rate, optional random shifts by up to ``shift`` pixels)."""

    def __init__(self, dim: int = 32, depth: int = 6, heads: int = 4, mlp_ratio: float = 2.0,
                 lr: float = 2e-3, weight_decay: float = 0.05, shift: int = 0, patch_size: int = 2,
                 num_classes: int = 10):
        super().__init__()
        shift = check_int(shift, "shift", 0)
        self.save_hyperparameters()
        self.model = TinyViT(patch_size=patch_size, num_classes=num_classes, dim=dim, depth=depth,
                             heads=heads, mlp_ratio=mlp_ratio)

    def forward(self, x, plan=None):
        return self.model(x, plan)

    def training_step(self, batch, batch_idx):
        x, y = batch
        s = self.model.image_size
        x = random_shift(x.reshape(-1, self.model.in_chans, s, s), self.hparams.shift)
        return F.cross_entropy(self.model(x), y)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, self.hparams.lr, pct_start=0.15,
                                                    total_steps=self.trainer.estimated_stepping_batches)
        return [opt], [{"scheduler": sched, "interval": "step"}]


def random_shift(x: torch.Tensor, shift: int) -> torch.Tensor:
    """Translate each image ``(B, C, H, W)`` by up to ``shift`` pixels (zero padding) -- cheap
    augmentation."""
    shift = check_int(shift, "shift", 0)
    if x.ndim != 4:
        raise ValueError(f"x must have shape (B, C, H, W), got {tuple(x.shape)}")
    if shift == 0:
        return x
    B, C, H, W = x.shape
    pad = F.pad(x, (shift,) * 4)
    dy, dx = torch.randint(0, 2 * shift + 1, (2, B, 1), device=x.device)
    rows = (dy + torch.arange(H, device=x.device))[:, None, :, None].expand(B, C, H, W + 2 * shift)
    pad = pad.gather(2, rows)
    cols = (dx + torch.arange(W, device=x.device))[:, None, None, :].expand(B, C, H, W)
    return pad.gather(3, cols)
