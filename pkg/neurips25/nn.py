"""Small network building blocks shared by the chapters: an MLP and a sinusoidal time embedding."""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from .runtime import check_int

__all__ = ["ACTIVATIONS", "MLP", "SinusoidalTimeEmbedding", "TimeConditionedMLP"]

ACTIVATIONS = {"relu": nn.ReLU, "silu": nn.SiLU, "gelu": nn.GELU, "tanh": nn.Tanh, "selu": nn.SELU}


class MLP(nn.Sequential):
    """``in_dim -> hidden[0] -> ... -> out_dim`` with an activation between layers (none after the last).

    >>> MLP(2, [64, 64], 1)(torch.zeros(5, 2)).shape
    torch.Size([5, 1])
    """

    def __init__(self, in_dim: int, hidden: Sequence[int], out_dim: int, activation: str = "silu",
                 dropout: float = 0.0):
        for name, v in (("in_dim", in_dim), ("out_dim", out_dim)):
            check_int(v, name)
        hidden = list(hidden)
        if any((not isinstance(h, int)) or h < 1 for h in hidden):
            raise ValueError(f"hidden must be a sequence of positive ints, got {hidden!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        dims = [in_dim, *hidden, out_dim]
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(dims) - 2:
                layers.append(ACTIVATIONS[activation]())
                if dropout > 0:
                    layers.append(nn.Dropout(dropout))
        super().__init__(*layers)
        self.in_dim, self.out_dim = in_dim, out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.in_dim:
            raise ValueError(f"x must have last dimension {self.in_dim}, got shape {tuple(x.shape)}")
        return super().forward(x)


class SinusoidalTimeEmbedding(nn.Module):
    """Transformer-style embedding of a scalar time t: ``[sin(ω_k t), cos(ω_k t)]_k``.

    Frequencies ω_k = scale · max_period^(-k / (dim/2)), k = 0..dim/2-1; t in [0, 1] is the usual
    input (``scale`` spreads it, as in diffusion models where t is an integer step).
    """

    def __init__(self, dim: int, max_period: float = 10_000.0, scale: float = 1000.0):
        super().__init__()
        if not isinstance(dim, int) or dim < 2 or dim % 2:
            raise ValueError(f"dim must be an even int >= 2, got {dim!r}")
        half = dim // 2
        freqs = scale * torch.exp(-math.log(max_period) * torch.arange(half) / half)
        self.register_buffer("freqs", freqs, persistent=False)
        self.dim = dim

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        t = torch.as_tensor(t)
        if t.ndim == 2 and t.shape[-1] == 1:
            t = t[:, 0]
        if t.ndim > 1:
            raise ValueError(f"t must have shape (B,) or (B, 1), got {tuple(t.shape)}")
        args = t.reshape(-1, 1).to(self.freqs.dtype) * self.freqs
        return torch.cat([torch.sin(args), torch.cos(args)], dim=-1)


class TimeConditionedMLP(nn.Module):
    """``v(x, t)``: an MLP on ``[x, embed(t)]`` — the usual drift/velocity network for flows and bridges."""

    def __init__(self, dim: int, hidden: Sequence[int] = (128, 128, 128), time_dim: int = 32,
                 activation: str = "silu", out_dim: int | None = None):
        super().__init__()
        self.embed = SinusoidalTimeEmbedding(time_dim)
        self.net = MLP(dim + time_dim, hidden, out_dim or dim, activation)
        self.dim = dim

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must have shape (B, {self.dim}), got {tuple(x.shape)}")
        t = torch.as_tensor(t, dtype=x.dtype, device=x.device)
        if t.ndim == 0:
            t = t.expand(x.shape[0])
        emb = self.embed(t).to(x.dtype)
        if emb.shape[0] != x.shape[0]:
            raise ValueError(f"t must have one entry per row of x ({x.shape[0]}), got {emb.shape[0]}")
        return self.net(torch.cat([x, emb], dim=-1))
