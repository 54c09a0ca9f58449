"""Closed forms for Gaussian leaves (fixed-point barycentre, exact entropic TreeSB), a grid
multi-marginal Sinkhorn, and the BW2²-UVP metric."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..runtime import check_int
from .tree import Tree

# --- Gaussian closed forms ---------------------------------------------------------------------

def _sqrtm(S: np.ndarray) -> np.ndarray:
    w, V = np.linalg.eigh((S + S.T) / 2)
    return (V * np.sqrt(np.clip(w, 0, None))) @ V.T


def _check_covs(covs) -> list[np.ndarray]:
    covs = [np.asarray(c, dtype=float) for c in covs]
    d = covs[0].shape[0] if covs and covs[0].ndim == 2 else -1
    for c in covs:
        if c.shape != (d, d) or np.linalg.eigvalsh((c + c.T) / 2).min() <= 0:
            raise ValueError(f"covs must be symmetric positive-definite (d, d) matrices of one size, got shape {c.shape}")
    return covs


def _check_means(means) -> list[np.ndarray]:
    means = [np.asarray(m, dtype=float) for m in means]
    if any(not np.all(np.isfinite(m)) for m in means):
        raise ValueError("means must be finite (NaN or inf in a leaf mean)")
    return means


def gaussian_fixed_point_barycenter(covs, weights, n_iter: int = 200, tol: float = 1e-12) -> np.ndarray:
    """Unregularised W2 barycentre covariance: S ← S^{-½}(Σλ_i(S^{½}Σ_iS^{½})^{½})² S^{-½}."""
    covs = _check_covs(covs)
    lam = np.asarray(weights, dtype=float)
    if lam.shape != (len(covs),) or np.any(lam <= 0):
        raise ValueError(f"weights must be {len(covs)} positive numbers, got {list(weights)}")
    lam = lam / lam.sum()
    S = sum(lam_i * c for lam_i, c in zip(lam, covs))
    for _ in range(n_iter):
        R = _sqrtm(S)
        Ri = np.linalg.inv(R)
        M = sum(lam_i * _sqrtm(R @ c @ R) for lam_i, c in zip(lam, covs))
        S_new = Ri @ M @ M @ Ri
        if np.abs(S_new - S).max() < tol:
            return S_new
        S = S_new
    return S


def gaussian_tree_sb(tree: Tree, means, covs, n_iter: int = 20000, tol: float = 1e-11):
    """Exact TreeSB for Gaussian μ_i: Gaussian multi-marginal Sinkhorn in precision form.

    The optimal leaf coupling has density exp(Σφ_i(y_i) − ½ yᵀ(A⊗I)y) with A the Schur complement
    of the Laplacian; for Gaussian μ_i the potentials are quadratic, so the precision is
    M = A⊗I + blockdiag(P_i), and the Sinkhorn (IPF) step for marginal i is the exact update
    P_i ← P_i + Σ_i⁻¹ − (marginal precision of block i under M).
    Returns (mean, cov) of all |V| vertices, stacked as (|V|·d,) and (|V|·d, |V|·d).
    """
    covs = _check_covs(covs)
    means = _check_means(means)
    K, d = len(tree.observed), covs[0].shape[0]
    if len(covs) != K or len(means) != K or any(m.shape != (d,) for m in means):
        raise ValueError(f"means and covs must give one ({d},) mean and ({d},{d}) cov per observed vertex ({K})")
    A = np.kron(tree.observed_precision(), np.eye(d))
    P = [np.linalg.inv(c) for c in covs]
    blk = [slice(i * d, (i + 1) * d) for i in range(K)]
    for _ in range(n_iter):
        delta = 0.0
        for i in range(K):
            M = A.copy()
            for j in range(K):
                M[blk[j], blk[j]] += P[j]
            marg_prec = np.linalg.inv(np.linalg.inv(M)[blk[i], blk[i]])
            step = np.linalg.inv(covs[i]) - marg_prec
            P[i] = P[i] + (step + step.T) / 2
            delta = max(delta, np.abs(step).max())
        if delta < tol:
            break
    M = A.copy()
    for j in range(K):
        M[blk[j], blk[j]] += P[j]
    C_S = np.linalg.inv(M)
    m_S = np.concatenate(means)
    # Unobserved vertices: Y_U = B y_S + noise with covariance C (per coordinate).
    B, C = tree.conditional()
    nV = tree.n_vertices
    order = [*tree.observed, *tree.unobserved]
    G = np.vstack([np.eye(K * d), np.kron(B, np.eye(d))]) if tree.unobserved else np.eye(K * d)
    cov_o = G @ C_S @ G.T
    if tree.unobserved:
        cov_o[K * d:, K * d:] += np.kron(C, np.eye(d))
    mean_o = G @ m_S
    # Reorder blocks from (S, U) to vertex order 0..|V|-1.
    perm = np.concatenate([np.arange(order.index(v) * d, (order.index(v) + 1) * d) for v in range(nV)])
    return mean_o[perm], cov_o[np.ix_(perm, perm)]


def grid_multimarginal_sinkhorn(grid: np.ndarray, marginals: Sequence[np.ndarray], weights, sigma: float,
                                n_iter: int = 5000, tol: float = 1e-10) -> np.ndarray:
    """Discrete multi-marginal Sinkhorn on a 1-D grid for the star cost Σ_{i<j} λ_iλ_j (x_i − x_j)² / (2σ²).

    (Root integrated out.) Log-domain, dense K-tensor: only for small grids and K ≤ 4. POT has no
    multi-marginal Sinkhorn, so this is the check of ``gaussian_tree_sb``; returns the coupling tensor.
    """
    K, lam = len(marginals), np.asarray(weights, dtype=float)
    if lam.shape != (K,) or K < 2 or K > 4:
        raise ValueError(f"weights must match 2..4 marginals, got {K} marginals and weights {list(weights)}")
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 1 or len(grid) < 1 or not np.all(np.isfinite(grid)):
        raise ValueError(f"grid must be a non-empty finite 1-D array, got shape {grid.shape}")
    if not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError(f"weights must be positive and finite, got {list(weights)}")
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not np.isfinite(sigma) or sigma <= 0:
        raise ValueError(f"sigma must be a positive finite float, got {sigma!r}")
    for m in marginals:
        m = np.asarray(m, dtype=float)
        # densities on the grid: a negative or NaN entry would make the scalings meaningless
        if m.shape != grid.shape or not np.all(np.isfinite(m)) or np.any(m < 0) or m.sum() <= 0:
            raise ValueError(f"marginals must be non-negative finite densities on the grid "
                             f"(shape {grid.shape}) with positive mass, got shape {m.shape}")
    logc = np.zeros((len(grid),) * K)
    for i in range(K):
        for j in range(i + 1, K):
            sh_i = [1] * K
            sh_j = [1] * K
            sh_i[i] = sh_j[j] = len(grid)
            logc = logc - lam[i] * lam[j] * (grid.reshape(sh_i) - grid.reshape(sh_j)) ** 2 / (2 * sigma**2)
    a = [np.asarray(m, float) / np.sum(m) for m in marginals]
    Kt = np.exp(logc - logc.max())
    u = [np.ones(len(grid)) for _ in range(K)]
    letters = "abcd"[:K]

    def scaled(skip: int) -> np.ndarray:  # K ⊙ (⊗_{j≠skip} u_j), summed over all axes but skip
        ops = [Kt] + [u[j] for j in range(K) if j != skip]
        spec = letters + "," + ",".join(letters[j] for j in range(K) if j != skip) + "->" + letters[skip]
        return np.einsum(spec, *ops)

    for _ in range(n_iter):
        err = 0.0
        for i in range(K):
            s = scaled(i)
            err = max(err, np.abs(u[i] * s - a[i]).sum())
            u[i] = a[i] / s
        if err < tol:
            break
    P = Kt
    for i in range(K):
        sh = [1] * K
        sh[i] = len(grid)
        P = P * u[i].reshape(sh)
    return P


def bw2(m1, S1, m2, S2) -> float:
    """Squared Bures–Wasserstein distance ‖m1−m2‖² + tr(S1 + S2 − 2(S2^{½} S1 S2^{½})^{½})."""
    m1, m2, S1, S2 = (np.asarray(a, dtype=float) for a in (m1, m2, S1, S2))
    R = _sqrtm(S2)
    return float(np.sum((m1 - m2) ** 2) + np.trace(S1 + S2 - 2 * _sqrtm(R @ S1 @ R)))


def bw2_uvp(samples, m_star, S_star) -> float:
    """BW2²-UVP (%) = 100 · BW2²(m̂, Σ̂; m*, Σ*) / tr Σ*, with (m̂, Σ̂) the sample moments."""
    x = np.asarray(samples.detach().cpu() if isinstance(samples, torch.Tensor) else samples, dtype=float)
    if x.ndim != 2 or x.shape[1] != len(m_star):
        raise ValueError(f"samples must have shape (N, {len(m_star)}), got {x.shape}")
    return 100 * bw2(x.mean(0), np.cov(x.T).reshape(x.shape[1], x.shape[1]), m_star, S_star) / np.trace(S_star)


def gaussian_tree_ipf(tree: Tree, means, covs, n_iter: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Exact TreeDSB (tree IPF, Noble et al. 2023) for Gaussian μ_i: no learning error.

    P⁰ is the reference Q started from μ at ``tree.observed[0]``; half-bridge h projects onto the
    marginal of ``tree.observed[h mod K]`` (P ← μ_i ⊗ P_{·|i}, a linear regression for Gaussians).
    An iteration is one sweep of K half-bridges, ending back at ``observed[0]``. Every iterate lies in
    the reciprocal class, so the unobserved vertices are Y_U = B y_S + noise. Returns, after each of
    the ``n_iter``·K half-bridges, the (mean, cov) of Y_U stacked as (|U|·d,), (|U|·d, |U|·d).
    """
    covs = _check_covs(covs)
    means = _check_means(means)
    K, d = len(tree.observed), covs[0].shape[0]
    if len(covs) != K or len(means) != K or any(m.shape != (d,) for m in means):
        raise ValueError(f"means and covs must give one ({d},) mean and ({d},{d}) cov per observed vertex ({K})")
    n_iter = check_int(n_iter, "n_iter")
    # Q given Y_{s0}: the other vertices are y_{s0} plus Gaussian noise of covariance L_rr⁻¹ (per coordinate).
    s0, L = tree.observed[0], tree.laplacian()
    rest = [v for v in range(tree.n_vertices) if v != s0]
    C_rest = np.linalg.inv(L[np.ix_(rest, rest)])
    pos = [rest.index(v) if v != s0 else None for v in tree.observed]
    C_leaf = np.array([[0.0 if a is None or b is None else C_rest[a, b] for b in pos] for a in pos])
    m = np.tile(means[0], K)
    Sig = np.kron(np.ones((K, K)), covs[0]) + np.kron(C_leaf, np.eye(d))
    B, C = tree.conditional()
    G = np.kron(B, np.eye(d))
    laws = []
    for h in range(1, n_iter * K + 1):
        i = h % K
        blk = slice(i * d, (i + 1) * d)
        R = Sig[:, blk] @ np.linalg.inv(Sig[blk, blk])  # regression of every leaf on leaf i
        m = m + R @ (means[i] - m[blk])
        Sig = Sig + R @ (covs[i] - Sig[blk, blk]) @ R.T
        Sig = (Sig + Sig.T) / 2
        laws.append((G @ m, G @ Sig @ G.T + np.kron(C, np.eye(d))))
    return laws
