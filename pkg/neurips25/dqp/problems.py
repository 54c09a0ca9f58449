"""Test problems: random QPs with a planted active set, simplex (sparsemax) and chain projections."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from ..runtime import check_int
from .core import dqp_solve

__all__ = ["planted_qp", "planted_gradient", "projection_constraints", "project", "sparsemax", "sparsemax_jacobian"]


def planted_qp(n: int = 8, m: int = 6, p: int = 2, n_active: int = 3, seed: int = 0,
               margin: float = 0.1) -> dict[str, torch.Tensor]:
    """A random strictly convex QP whose solution z*, duals and active set J are known.

    Choose z*, λ, μ_J ≥ ``margin`` on the first ``n_active`` inequality rows and slack ≥ ``margin``
    on the others, then set b = Az*, d so that the slacks hold, and q from stationarity
    Pz* + q + Aᵀλ + Cᵀμ = 0. Strict complementarity makes the solution map differentiable.
    """
    for name, v in (("n", n), ("m", m), ("p", p), ("n_active", n_active)):
        check_int(v, name, 0)
    if n < 1 or n_active > m or p + n_active > n:
        raise ValueError(f"need n >= 1, n_active <= m and p + n_active <= n; got n={n}, m={m}, p={p}, "
                         f"n_active={n_active}")
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    P = M @ M.T / n + np.eye(n)
    A, C = rng.standard_normal((p, n)), rng.standard_normal((m, n))
    z, lam = rng.standard_normal(n), rng.standard_normal(p)
    mu = np.zeros(m)
    mu[:n_active] = rng.uniform(margin, 1.0, n_active)
    slack = np.zeros(m)
    slack[n_active:] = rng.uniform(margin, 1.0, m - n_active)
    d = C @ z + slack
    q = -(P @ z + A.T @ lam + C.T @ mu)
    t = lambda x: torch.tensor(x, dtype=torch.float64)
    return dict(P=t(P), q=t(q), A=t(A), b=t(A @ z), C=t(C), d=t(d), z=t(z), lam=t(lam), mu=t(mu),
                active=torch.arange(m) < n_active)


def planted_gradient(qp: dict[str, torch.Tensor], g: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The exact gradient of ⟨g, z*⟩ with respect to (P, q, A, b, C, d) of a :func:`planted_qp`.

    Independent of any solver and of dQP's backward pass: it uses only the planted z*, λ, μ and
    active set J. With strict complementarity the solution map is, near the data, the solution of
    the equality-constrained KKT system K [z; ν] = [−q; h_J], K = [[P, Gᵀ], [G, 0]], G = [A; C_J],
    h_J = [b; d_J], ν = [λ; μ_J]. One dense solve K [w_z; w_ν] = [g; 0] (K is symmetric) gives
    ∂/∂q = −w_z, ∂/∂h_J = w_ν, ∂/∂G = −(ν w_zᵀ + w_ν z*ᵀ) and ∂/∂P = −½(w_z z*ᵀ + z* w_zᵀ) (only the
    symmetric part of P enters the QP); inactive rows of C and d get zero.
    """
    keys = ("P", "q", "A", "b", "C", "d", "z", "lam", "mu", "active")
    if not isinstance(qp, dict) or any(k not in qp for k in keys):
        raise ValueError(f"qp must be a dict from planted_qp with keys {keys}")
    n = qp["z"].shape[0]
    if not isinstance(g, torch.Tensor) or g.shape != (n,):
        raise ValueError(f"g must be a tensor of shape ({n},), got {getattr(g, 'shape', type(g))}")
    P, A, C = (qp[k].detach().cpu().numpy() for k in ("P", "A", "C"))
    z, lam, mu = (qp[k].detach().cpu().numpy() for k in ("z", "lam", "mu"))
    J = qp["active"].cpu().numpy().astype(bool)
    G = np.vstack([A, C[J]])
    nu = np.concatenate([lam, mu[J]])
    k = G.shape[0]
    K = np.block([[(P + P.T) / 2, G.T], [G, np.zeros((k, k))]])
    w = np.linalg.solve(K, np.concatenate([g.detach().cpu().numpy().astype(np.float64), np.zeros(k)]))
    wz, wn = w[:n], w[n:]
    p = A.shape[0]
    gG = -(np.outer(nu, wz) + np.outer(wn, z))
    gC, gd = np.zeros_like(C), np.zeros(C.shape[0])
    gC[J], gd[J] = gG[p:], wn[p:]
    out = (-0.5 * (np.outer(wz, z) + np.outer(z, wz)), -wz, gG[:p], wn[:p], gC, gd)
    return tuple(torch.tensor(x, dtype=torch.float64) for x in out)


def projection_constraints(kind: str, n: int) -> dict:
    """Sparse constraint data of a Euclidean projection min ½‖z − x‖² (P = I, q = −x).

    ``"simplex"``: 1ᵀz = 1, z ≥ 0 (the probability simplex; the projection is sparsemax).
    ``"chain"``: z₁ ≤ z₂ ≤ … ≤ z_n (a monotone chain: n − 1 bidiagonal constraints).
    """
    n = check_int(n, "n", 2)
    one = torch.ones
    if kind == "simplex":
        return dict(P=sp.identity(n, format="csc"), A=sp.csr_matrix(np.ones((1, n))),
                    b=one(1, dtype=torch.float64), C=-sp.identity(n, format="csr"),
                    d=torch.zeros(n, dtype=torch.float64))
    if kind == "chain":
        D = sp.diags([np.ones(n - 1), -np.ones(n - 1)], [0, 1], shape=(n - 1, n), format="csr")
        return dict(P=sp.identity(n, format="csc"), C=D, d=torch.zeros(n - 1, dtype=torch.float64))
    raise ValueError(f"kind must be 'simplex' or 'chain', got {kind!r}")


def project(x: torch.Tensor, kind: str = "simplex", solver: str = "clarabel", **kw) -> torch.Tensor:
    """Differentiable projection of ``x`` (``(n,)`` or ``(B, n)``) onto the simplex or the chain via dQP."""
    if not isinstance(x, torch.Tensor) or x.ndim not in (1, 2):
        raise ValueError("x must be a tensor of shape (n,) or (B, n)")
    cons = projection_constraints(kind, x.shape[-1])
    return dqp_solve(q=-x.double(), solver=solver, check_psd=False, **cons, **kw).z


def sparsemax(x: torch.Tensor) -> torch.Tensor:
    """Closed-form simplex projection (Martins & Astudillo, 2016): z = max(x − τ, 0)."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point torch.Tensor, got {type(x).__name__}")
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"x must have shape (..., n) with n >= 1, got {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):  # a NaN empties the support: index −1 below
        raise ValueError("x must be finite (no NaN/inf)")
    xs, _ = torch.sort(x, dim=-1, descending=True)
    k = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    cs = xs.cumsum(-1) - 1
    support = (xs - cs / k) > 0
    kz = support.sum(-1, keepdim=True)
    tau = cs.gather(-1, kz - 1) / kz.to(x.dtype)
    return torch.clamp(x - tau, min=0)


def sparsemax_jacobian(z: torch.Tensor) -> torch.Tensor:
    """∂ sparsemax / ∂x = diag(s) − s sᵀ / |S| with s the indicator of the support S of z."""
    if not isinstance(z, torch.Tensor) or not z.is_floating_point():
        raise TypeError(f"z must be a floating-point torch.Tensor, got {type(z).__name__}")
    if z.ndim != 1:
        raise ValueError(f"z must be a vector, got shape {tuple(z.shape)}")
    if not bool(torch.isfinite(z).all()):
        raise ValueError("z must be finite (no NaN/inf)")
    s = (z > 0).to(z.dtype)
    if not bool(s.any()):  # a point of the simplex has a positive entry; else 0/0 below
        raise ValueError(f"z must be a sparsemax output (a point of the simplex, >= 1 positive entry), "
                         f"got {z.tolist() if z.numel() <= 8 else tuple(z.shape)}")
    return torch.diag(s) - torch.outer(s, s) / s.sum()
