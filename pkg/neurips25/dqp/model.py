"""Learning through dQP: fit the offsets of a polygon from projections onto it (a bilevel toy).

Upper level: find offsets d of the polygon Π(d) = {z ∈ R² : c_jᵀz ≤ d_j} (fixed normals c_j) such
that projecting points x_k onto Π(d) lands on observed targets t_k. Lower level: the projections
z_k(d) = argmin_{z ∈ Π(d)} ½‖z − x_k‖². All K projections are one sparse, block-diagonal QP
(P = I_{2K}, C = I_K ⊗ C₀, d repeated K times), so one dQP solve per step serves the whole batch and
the gradient ∂loss/∂d reaches d only through dQP's backward pass.
"""
from __future__ import annotations

import lightning as L
import numpy as np
import scipy.sparse as sp
import torch

from ..runtime import check_int
from .core import dqp_solve

__all__ = ["polygon_normals", "project_polygon", "PolygonFit"]


def polygon_normals(m: int) -> np.ndarray:
    """``m`` unit normals c_j = (cos θ_j, sin θ_j), θ_j = 2πj/m: the faces of a convex m-gon."""
    m = check_int(m, "m", 3)
    th = 2 * np.pi * np.arange(m) / m
    return np.stack([np.cos(th), np.sin(th)], 1)


def project_polygon(x: torch.Tensor, C0: np.ndarray, d: torch.Tensor, solver: str = "clarabel"):
    """Projections of points ``x`` (K, 2) onto {z : C0 z ≤ d} as one block-diagonal sparse QP."""
    if x.ndim != 2 or x.shape[1] != C0.shape[1]:
        raise ValueError(f"x must have shape (K, {C0.shape[1]}), got {tuple(x.shape)}")
    K = x.shape[0]
    C = sp.kron(sp.identity(K), sp.csr_matrix(C0), format="csr")
    res = dqp_solve(sp.identity(C.shape[1], format="csc"), -x.double().reshape(-1), C=C,
                    d=d.double().repeat(K), solver=solver, check_psd=False)
    return res.z.reshape(K, -1), res


class PolygonFit(L.LightningModule):
    """Learn the offsets d (softplus-parametrised, so d > 0) of an m-gon from (x_k, t_k) pairs."""

    def __init__(self, m: int = 6, d0: float = 1.5, lr: float = 0.05, solver: str = "clarabel"):
        super().__init__()
        self.save_hyperparameters()
        self.C0 = polygon_normals(m)
        # softplus⁻¹(d0), so that every face starts at distance d0 from the origin
        self.raw_d = torch.nn.Parameter(torch.full((m,), float(np.log(np.expm1(d0))), dtype=torch.float64))
        self.history: list[float] = []

    @property
    def d(self) -> torch.Tensor:
        return torch.nn.functional.softplus(self.raw_d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return project_polygon(x, self.C0, self.d, self.hparams.solver)[0]

    def training_step(self, batch, batch_idx):
        x, t = batch
        loss = ((self(x) - t.double()) ** 2).sum(-1).mean()
        self.history.append(float(loss.detach()))
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
