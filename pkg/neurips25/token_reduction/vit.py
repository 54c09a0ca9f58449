"""The tiny ViT with pluggable per-layer token reduction and the re-weighted attention."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from .core import (
    ReductionPlan,
    TokenState,
    apply_reduction,
    reduce_evit,
    reduce_ours,
    reduce_random,
    reduce_tome,
)

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
    returns logits. ``forward(images, plan=ReductionPlan(...))`` reduces tokens after the attention of
    the plan's blocks; ``trace=True`` also returns a list of :class:`LayerTrace`.
    """

    def __init__(self, image_size: int = 8, patch_size: int = 2, in_chans: int = 1, num_classes: int = 10,
                 dim: int = 32, depth: int = 6, heads: int = 4, mlp_ratio: float = 2.0):
        super().__init__()
        for name, v in (("image_size", image_size), ("patch_size", patch_size), ("in_chans", in_chans),
                        ("num_classes", num_classes), ("dim", dim), ("depth", depth), ("heads", heads)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
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

    def forward(self, images, plan: ReductionPlan | None = None, trace: bool = False, generator=None):
        x = self.embed(images)
        state = TokenState.initial(len(x), self.n_patches, x.device)
        if plan is not None and any(i >= self.depth for i in plan.layers):
            raise ValueError(f"plan.layers must be < depth={self.depth}, got {plan.layers}")
        if plan is not None and plan.method == "random" and generator is None:
            generator = torch.Generator().manual_seed(plan.seed)
        traces = []
        for i, blk in enumerate(self.blocks):
            h, attn, keys = blk.attn(blk.norm1(x), state, proportional=bool(plan and plan.proportional),
                                     reweight=bool(plan and plan.reweight))
            x = x + h
            x_attn, state_in = x, state
            if plan is not None and i in plan.layers:
                x, state = self._reduce(x, state, attn, keys, plan, generator)
            x = x + blk.mlp(blk.norm2(x))
            if trace:
                traces.append(LayerTrace(x_attn, attn, state_in, x, state))
        logits = self.head(self.norm(x[:, 0]))
        return (logits, traces) if trace else logits

    def _reduce(self, x, state, attn, keys, plan, generator):
        n_keep = plan.n_keep(x.shape[1] - 1)
        if plan.method in ("ours", "keep_lf"):
            C, is_dc = reduce_ours(attn, state, n_keep, self.grid, plan.window, plan.score,
                                   keep_high=plan.method == "ours")
            return apply_reduction(x, state, C, is_dc)
        if plan.method == "evit":
            C, W = reduce_evit(attn, state, n_keep)
            return apply_reduction(x, state, C, W=W)
        if plan.method == "tome":
            return apply_reduction(x, state, reduce_tome(keys, state, n_keep))
        return apply_reduction(x, state, reduce_random(state, n_keep, generator))
