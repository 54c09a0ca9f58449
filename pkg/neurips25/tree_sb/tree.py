"""The tree: edges, lengths, the Laplacian conditional (Eq. 12) and Brownian bridges."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from ..runtime import check_int

# --- the tree ----------------------------------------------------------------------------------

@dataclass
class Tree:
    """An undirected tree on vertices ``0..n_vertices-1`` with edge lengths T_e and observed set S.

    ``sigma`` is the reference diffusion coefficient (ε = 2σ²). Edges are ``(u, v)`` pairs; edge k
    in direction u→v has code ``2k``, in direction v→u code ``2k+1`` (one network serves all).
    """

    n_vertices: int
    edges: Sequence[tuple[int, int]]
    lengths: Sequence[float]
    observed: Sequence[int]
    sigma: float = 0.2
    unobserved: list[int] = field(init=False)

    def __post_init__(self):
        self.n_vertices = n = check_int(self.n_vertices, "n_vertices", 2)
        self.edges = [tuple(int(a) for a in e) for e in self.edges]
        self.lengths = [float(x) for x in self.lengths]
        if len(self.lengths) != len(self.edges):
            raise ValueError(f"lengths must have one entry per edge ({len(self.edges)}), got {len(self.lengths)}")
        if any(not np.isfinite(x) or x <= 0 for x in self.lengths):
            raise ValueError(f"lengths must be positive, got {self.lengths}")
        for u, v in self.edges:
            if not (0 <= u < n and 0 <= v < n):
                raise ValueError(f"edges mention an unknown vertex: ({u}, {v}) with n_vertices={n}")
            if u == v:
                raise ValueError(f"edges must join distinct vertices, got a self-loop at {u}")
        if len(self.edges) != n - 1:
            raise ValueError(f"a tree on {n} vertices has {n - 1} edges, got {len(self.edges)} (cycle or disconnected)")
        if len(self._reachable(0)) != n:
            raise ValueError("edges must connect all vertices (the graph is disconnected, so it has a cycle)")
        obs = [int(i) for i in self.observed]
        if not obs or len(set(obs)) != len(obs) or any(not 0 <= i < n for i in obs):
            raise ValueError(f"observed must be distinct known vertices, got {list(self.observed)}")
        self.observed = obs
        self.unobserved = [i for i in range(n) if i not in obs]
        if (isinstance(self.sigma, bool) or not isinstance(self.sigma, (int, float))
                or not np.isfinite(self.sigma) or self.sigma <= 0):
            raise ValueError(f"sigma must be a positive finite float, got {self.sigma!r}")
        self.sigma = float(self.sigma)

    def _neighbours(self, u: int) -> list[tuple[int, int]]:
        """(neighbour, edge index) pairs of u."""
        return [(b if a == u else a, k) for k, (a, b) in enumerate(self.edges) if u in (a, b)]

    def _reachable(self, start: int) -> set[int]:
        seen, todo = {start}, [start]
        while todo:
            for w, _ in self._neighbours(todo.pop()):
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen

    def traversal(self, start: int) -> list[tuple[int, int, int]]:
        """Breadth-first directed edges ``(u, v, code)`` leaving ``start`` (simulation order)."""
        if start not in range(self.n_vertices):
            raise ValueError(f"start must be a vertex in 0..{self.n_vertices - 1}, got {start!r}")
        out, seen, q = [], {start}, deque([start])
        while q:
            u = q.popleft()
            for w, k in self._neighbours(u):
                if w not in seen:
                    seen.add(w)
                    q.append(w)
                    out.append((u, w, 2 * k + (self.edges[k][0] != u)))
        return out

    def laplacian(self) -> np.ndarray:
        """Weighted Laplacian L with weights 1/(σ² T_e): Q_V ∝ exp(−½ Σ_coords yᵀ L y)."""
        L = np.zeros((self.n_vertices, self.n_vertices))
        for (u, v), T in zip(self.edges, self.lengths):
            w = 1.0 / (self.sigma**2 * T)
            L[u, u] += w
            L[v, v] += w
            L[u, v] -= w
            L[v, u] -= w
        return L

    def conditional(self) -> tuple[np.ndarray, np.ndarray]:
        """(B, C) with Y_U | Y_S ~ N(B y_S, C) per coordinate: B = −L_UU⁻¹ L_US, C = L_UU⁻¹ (Eq. 12)."""
        L, S, U = self.laplacian(), self.observed, self.unobserved
        if not U:
            return np.zeros((0, len(S))), np.zeros((0, 0))
        C = np.linalg.inv(L[np.ix_(U, U)])
        return -C @ L[np.ix_(U, S)], C

    def observed_precision(self) -> np.ndarray:
        """Schur complement A = L_SS − L_SU L_UU⁻¹ L_US: the leaf cost of the static problem, divided by ε/2."""
        L, S, U = self.laplacian(), self.observed, self.unobserved
        A = L[np.ix_(S, S)]
        if U:
            A = A - L[np.ix_(S, U)] @ np.linalg.solve(L[np.ix_(U, U)], L[np.ix_(U, S)])
        return A

    def sample_unobserved(self, y_obs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Fill in every vertex: (N, |S|, d) observed values → (N, |V|, d), Y_U drawn from the conditional."""
        if y_obs.ndim != 3 or y_obs.shape[1] != len(self.observed):
            raise ValueError(f"y_obs must have shape (N, {len(self.observed)}, d), got {tuple(y_obs.shape)}")
        N, _, d = y_obs.shape
        Y = y_obs.new_zeros(N, self.n_vertices, d)
        Y[:, self.observed] = y_obs
        if self.unobserved:
            B, C = self.conditional()
            B = torch.as_tensor(B, dtype=y_obs.dtype, device=y_obs.device)
            Lc = torch.as_tensor(np.linalg.cholesky(C), dtype=y_obs.dtype, device=y_obs.device)
            z = torch.randn(N, len(self.unobserved), d, generator=generator, dtype=y_obs.dtype,
                            device=y_obs.device if generator is None else generator.device).to(y_obs.device)
            Y[:, self.unobserved] = torch.einsum("us,nsd->nud", B, y_obs) + torch.einsum("uw,nwd->nud", Lc, z)
        return Y

    def edge_sigma(self) -> list[float]:
        """Noise of each edge rescaled to unit time: σ_e = σ √T_e."""
        return [self.sigma * float(np.sqrt(T)) for T in self.lengths]


def star_tree(weights: Sequence[float], sigma: float) -> Tree:
    """Barycentre tree: root 0 (unobserved), leaves 1..K with T_i = 1/λ_i (weights sum to 1)."""
    lam = np.asarray(weights, dtype=float)
    # NaN passes both comparisons below, so check finiteness first (else Tree blames ``lengths``)
    if (lam.ndim != 1 or len(lam) < 2 or not np.all(np.isfinite(lam)) or np.any(lam <= 0)
            or abs(lam.sum() - 1) > 1e-8):
        raise ValueError(f"weights must be >= 2 positive numbers summing to 1, got {list(weights)}")
    K = len(lam)
    return Tree(K + 1, [(0, i) for i in range(1, K + 1)], list(1 / lam), list(range(1, K + 1)), sigma)


def brownian_bridge(x0: torch.Tensor, x1: torch.Tensor, t: torch.Tensor, sigma_e, generator=None) -> torch.Tensor:
    """x_t = (1−t)x0 + t x1 + σ_e √(t(1−t)) z: the unit-time Brownian bridge (variance σ_e² t(1−t))."""
    if x0.shape != x1.shape:
        raise ValueError(f"x0 and x1 must have the same shape, got {tuple(x0.shape)} and {tuple(x1.shape)}")
    t = torch.as_tensor(t, dtype=x0.dtype, device=x0.device).reshape(-1, 1)
    sigma_e = torch.as_tensor(sigma_e, dtype=x0.dtype, device=x0.device).reshape(-1, 1)
    # outside [0, 1] the variance t(1 − t) is negative and the square root NaN
    if not bool(((t >= 0) & (t <= 1)).all()):
        raise ValueError("t must lie in [0, 1] (unit-time bridge)")
    if not bool((torch.isfinite(sigma_e) & (sigma_e >= 0)).all()):
        raise ValueError("sigma_e must be finite and non-negative")
    z = torch.randn(x0.shape, generator=generator, dtype=x0.dtype,
                    device=x0.device if generator is None else generator.device).to(x0.device)
    return (1 - t) * x0 + t * x1 + sigma_e * torch.sqrt(t * (1 - t)) * z
