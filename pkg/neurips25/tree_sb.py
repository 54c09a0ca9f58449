"""TreeDSBM: Schrödinger bridge matching on trees and entropic Wasserstein barycentres.

Howard, Potaptchik, Deligiannidis, "Schrödinger Bridge Matching for Tree-Structured Costs and
Entropic Wasserstein Barycentres", NeurIPS 2025 (arXiv 2506.17197).

A tree T = (V, E) carries a Brownian motion of variance σ² per unit time along each edge e of
length T_e (the reference Q). TreeSB (Eq. 5) is the process P closest to Q in KL whose marginals
on the observed vertices S are μ_i; its static form is multi-marginal entropic OT with cost
Σ_e ‖x_u − x_v‖² / T_e and ε = 2σ². The star tree with T_i = 1/λ_i gives the entropic barycentre.

Contents: the ``Tree`` description and its Laplacian conditional (Eq. 12), Brownian bridges,
closed forms for Gaussians (fixed-point and exact entropic TreeSB), a Lightning module that
bridge-matches every edge in both directions at once (Eq. 15), the simulation leaf → root →
leaves and the TreeIMF loop (Alg. 2), and the BW2²-UVP metric.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from .nn import TimeConditionedMLP

__all__ = [
    "Tree", "star_tree", "brownian_bridge", "gaussian_fixed_point_barycenter", "gaussian_tree_sb",
    "grid_multimarginal_sinkhorn", "bw2", "bw2_uvp", "TreeBridgeMatching", "simulate_tree",
    "tree_dsbm", "sinkhorn_divergence", "h_tree", "gaussian_problem", "independent_reference", "run_gaussian",
    "CONFIGS", "run_config", "pot_free_support_barycenter",
]


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
        n = self.n_vertices
        if not isinstance(n, int) or n < 2:
            raise ValueError(f"n_vertices must be an int >= 2, got {n!r}")
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
        if not (isinstance(self.sigma, (int, float)) and self.sigma > 0):
            raise ValueError(f"sigma must be a positive float, got {self.sigma!r}")
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
            z = torch.randn(N, len(self.unobserved), d, generator=generator, dtype=y_obs.dtype).to(y_obs.device)
            Y[:, self.unobserved] = torch.einsum("us,nsd->nud", B, y_obs) + torch.einsum("uw,nwd->nud", Lc, z)
        return Y

    def edge_sigma(self) -> list[float]:
        """Noise of each edge rescaled to unit time: σ_e = σ √T_e."""
        return [self.sigma * float(np.sqrt(T)) for T in self.lengths]


def star_tree(weights: Sequence[float], sigma: float) -> Tree:
    """Barycentre tree: root 0 (unobserved), leaves 1..K with T_i = 1/λ_i (weights sum to 1)."""
    lam = np.asarray(weights, dtype=float)
    if lam.ndim != 1 or len(lam) < 2 or np.any(lam <= 0) or abs(lam.sum() - 1) > 1e-8:
        raise ValueError(f"weights must be >= 2 positive numbers summing to 1, got {list(weights)}")
    K = len(lam)
    return Tree(K + 1, [(0, i) for i in range(1, K + 1)], list(1 / lam), list(range(1, K + 1)), sigma)


def brownian_bridge(x0: torch.Tensor, x1: torch.Tensor, t: torch.Tensor, sigma_e, generator=None) -> torch.Tensor:
    """x_t = (1−t)x0 + t x1 + σ_e √(t(1−t)) z: the unit-time Brownian bridge (variance σ_e² t(1−t))."""
    if x0.shape != x1.shape:
        raise ValueError(f"x0 and x1 must have the same shape, got {tuple(x0.shape)} and {tuple(x1.shape)}")
    t = torch.as_tensor(t, dtype=x0.dtype, device=x0.device).reshape(-1, 1)
    sigma_e = torch.as_tensor(sigma_e, dtype=x0.dtype, device=x0.device).reshape(-1, 1)
    z = torch.randn(x0.shape, generator=generator, dtype=x0.dtype).to(x0.device)
    return (1 - t) * x0 + t * x1 + sigma_e * torch.sqrt(t * (1 - t)) * z


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
    means = [np.asarray(m, dtype=float) for m in means]
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


# --- bridge matching on every edge (Eq. 15) ----------------------------------------------------

def _lightning_module():
    import lightning as L

    return L.LightningModule


class TreeBridgeMatching(_lightning_module()):
    """Drifts v_θ(x, t; e, direction) for all edges and both directions, in one network.

    A batch holds observed vertices only; ``training_step`` performs the reciprocal projection on
    the fly (Laplacian conditional for Y_U, then a Brownian bridge per edge) and regresses the
    bridge drift (x_1 − x_t)/(1 − t) of every directed edge at once.
    """

    def __init__(self, n_vertices: int, edges, lengths, observed, sigma: float, dim: int = 2,
                 hidden: Sequence[int] = (128, 128, 128), lr: float = 5e-3, t_max: float = 0.99):
        super().__init__()
        self.save_hyperparameters()
        self.tree = Tree(n_vertices, edges, lengths, observed, sigma)
        self.n_codes = 2 * len(self.tree.edges)
        self.net = TimeConditionedMLP(dim + self.n_codes, tuple(hidden), out_dim=dim)
        self.register_buffer("sig_e", torch.tensor(self.tree.edge_sigma(), dtype=torch.float32), persistent=False)

    def drift(self, x: torch.Tensor, t, code: int) -> torch.Tensor:
        onehot = torch.zeros(x.shape[0], self.n_codes, dtype=x.dtype, device=x.device)
        onehot[:, code] = 1
        return self.net(torch.cat([x, onehot], dim=1), t)

    def loss(self, y_obs: torch.Tensor) -> torch.Tensor:
        Y = self.tree.sample_unobserved(y_obs)  # reciprocal projection: Y_U | Y_S
        N = Y.shape[0]
        src = [u for (u, v) in self.tree.edges] + [v for (u, v) in self.tree.edges]
        dst = [v for (u, v) in self.tree.edges] + [u for (u, v) in self.tree.edges]
        codes = [2 * k for k in range(len(self.tree.edges))] + [2 * k + 1 for k in range(len(self.tree.edges))]
        x0 = Y[:, src].transpose(0, 1).reshape(-1, Y.shape[2])
        x1 = Y[:, dst].transpose(0, 1).reshape(-1, Y.shape[2])
        code = torch.tensor(codes, device=Y.device).repeat_interleave(N)
        sig = self.sig_e[code // 2]
        t = torch.rand(x0.shape[0], device=Y.device) * self.hparams.t_max
        xt = brownian_bridge(x0, x1, t, sig)
        target = (x1 - xt) / (1 - t[:, None])
        onehot = torch.nn.functional.one_hot(code, self.n_codes).to(Y.dtype)
        pred = self.net(torch.cat([xt, onehot], dim=1), t)
        return ((pred - target) ** 2).sum(1).mean()

    def training_step(self, batch, batch_idx):
        loss = self.loss(batch[0])
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        # Cosine decay within each IMF iteration: the late small steps average out the bridge noise.
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, self.trainer.max_steps))
        return [opt], [{"scheduler": sched, "interval": "step"}]


@torch.no_grad()
def simulate_tree(model: TreeBridgeMatching, start: int, y_start: torch.Tensor, n_steps: int = 50) -> torch.Tensor:
    """Euler–Maruyama along every edge, breadth-first from ``start`` (leaf → root → other leaves).

    Returns (N, |V|, d) with ``y_start`` at ``start``; the last step is noise-free.
    """
    tree = model.tree
    if y_start.ndim != 2:
        raise ValueError(f"y_start must have shape (N, d), got {tuple(y_start.shape)}")
    model.eval()
    N, d = y_start.shape
    Y = y_start.new_zeros(N, tree.n_vertices, d)
    Y[:, start] = y_start
    dt = 1.0 / n_steps
    sig = tree.edge_sigma()
    for u, v, code in tree.traversal(start):
        x = Y[:, u].clone()
        for k in range(n_steps):
            x = x + model.drift(x, torch.full((N,), k * dt, device=x.device), code) * dt
            if k < n_steps - 1:
                x = x + sig[code // 2] * np.sqrt(dt) * torch.randn_like(x)
        Y[:, v] = x
    return Y


def tree_dsbm(tree: Tree, data: Sequence[torch.Tensor], n_iter: int = 3, steps: int = 300, batch_size: int = 256,
              hidden: Sequence[int] = (128, 128, 128), lr: float = 5e-3, n_steps: int = 50,
              start: int | None = None, callback=None) -> TreeBridgeMatching:
    """TreeIMF with bridge matching (Alg. 2): alternate reciprocal and per-edge Markovian projections.

    ``data[i]`` are samples of μ at ``tree.observed[i]`` (equal sizes). Iteration 1 trains on the
    independent coupling; each later one on the coupling simulated from ``start`` (default: the
    observed vertices in turn), whose unobserved vertices are re-drawn from Q_{U|S} in training.
    The network is warm-started across iterations. ``callback(it, model)`` runs after each.
    """
    from .runtime import make_trainer

    if len(data) != len(tree.observed):
        raise ValueError(f"data must hold one tensor per observed vertex ({len(tree.observed)}), got {len(data)}")
    N, d = data[0].shape
    if any(x.shape != (N, d) for x in data):
        raise ValueError(f"data tensors must all have shape ({N}, {d})")
    model = TreeBridgeMatching(tree.n_vertices, tree.edges, tree.lengths, tree.observed, tree.sigma, d, hidden, lr)
    # Independent coupling: shuffle each marginal separately.
    coupling = torch.stack([x[torch.randperm(N)] for x in data], dim=1).float()
    for it in range(1, n_iter + 1):
        ds = torch.utils.data.TensorDataset(coupling)
        dl = torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=True)
        make_trainer(None, max_steps=steps).fit(model, dl)
        s = tree.observed[(it - 1) % len(tree.observed)] if start is None else start
        Y = simulate_tree(model, s, data[tree.observed.index(s)].float(), n_steps)
        coupling = Y[:, tree.observed].detach()
        if callback is not None:
            callback(it, model)
    return model


def sinkhorn_divergence(A: torch.Tensor, B: torch.Tensor, reg: float = 0.05) -> float:
    """Debiased Sinkhorn divergence (POT), squared-Euclidean cost."""
    import ot

    a = np.asarray(A, dtype=float)
    b = np.asarray(B, dtype=float)
    return float(ot.bregman.empirical_sinkhorn_divergence(a, b, reg, numIterMax=2000, warn=False))


def pot_free_support_barycenter(samples: Sequence[torch.Tensor], weights, n_support: int = 300, seed: int = 0,
                                n_iter: int = 20) -> np.ndarray:
    """Unregularised W2 barycentre of point clouds with POT's free-support solver (the 2-D reference)."""
    import ot

    lam = np.asarray(weights, dtype=float)
    if lam.shape != (len(samples),) or np.any(lam <= 0):
        raise ValueError(f"weights must be {len(samples)} positive numbers, got {list(weights)}")
    rng = np.random.default_rng(seed)
    locs = [np.asarray(x, dtype=float)[rng.choice(len(x), n_support, replace=False)] for x in samples]
    w = [np.full(n_support, 1.0 / n_support)] * len(locs)
    X0 = rng.normal(size=(n_support, locs[0].shape[1]))
    return ot.lp.free_support_barycenter(locs, w, X0, weights=lam / lam.sum(), numItermax=n_iter)


# --- experiments: Gaussian leaves with an exact reference ---------------------------------------

def h_tree(sigma: float) -> Tree:
    """A non-star tree: two unobserved hubs 0 — 1, leaves 2, 3 on hub 0 and 4, 5 on hub 1 (unit lengths)."""
    return Tree(6, [(0, 1), (0, 2), (0, 3), (1, 4), (1, 5)], [1.0] * 5, [2, 3, 4, 5], sigma)


def gaussian_problem(d: int, K: int, seed: int, spread: float = 1.5):
    """K Gaussian marginals in R^d: means ~ N(0, spread²I), covariances with eigenvalues in [0.5, 2]."""
    from .data import random_spd

    rng = np.random.default_rng(seed)
    means = [rng.normal(size=d) * spread for _ in range(K)]
    covs = [random_spd(d, seed=1000 * seed + i).numpy() for i in range(K)]
    return means, covs


def independent_reference(tree: Tree, means, covs) -> tuple[np.ndarray, np.ndarray]:
    """Law of every vertex when the leaves are independent (iteration 0): Y_U = B y_S + noise."""
    d = len(means[0])
    B, C = tree.conditional()
    G = np.kron(B, np.eye(d))
    S = np.zeros((len(covs) * d,) * 2)
    for i, c in enumerate(covs):
        S[i * d:(i + 1) * d, i * d:(i + 1) * d] = c
    return G @ np.concatenate(means), G @ S @ G.T + np.kron(C, np.eye(d))


def run_gaussian(tree: Tree, means, covs, seed: int = 0, n: int = 2048, n_iter: int = 3, steps: int = 200,
                 batch_size: int = 128, hidden: Sequence[int] = (64, 64, 64), n_steps: int = 30,
                 lr: float = 5e-3) -> dict:
    """TreeDSBM on Gaussian leaves; BW2²-UVP (%) of every unobserved vertex against the exact TreeSB.

    Returns ``uvp_independent`` (per unobserved vertex, analytic) and ``uvp[it][start][u]``: after
    IMF iteration ``it``, simulating from observed vertex ``start``, at unobserved vertex ``u``.
    """
    from .data import sample_gaussian
    from .runtime import seed_everything

    seed_everything(seed)
    d = len(means[0])
    data = [sample_gaussian(m, c, n, seed=1000 * seed + 17 * i).float() for i, (m, c) in enumerate(zip(means, covs))]
    mV, CV = gaussian_tree_sb(tree, means, covs)
    exact = {u: (mV[u * d:(u + 1) * d], CV[u * d:(u + 1) * d, u * d:(u + 1) * d]) for u in tree.unobserved}
    m_ind, C_ind = independent_reference(tree, means, covs)
    ind = [float(100) * bw2(m_ind[k * d:(k + 1) * d], C_ind[k * d:(k + 1) * d, k * d:(k + 1) * d], *exact[u])
           / np.trace(exact[u][1]) for k, u in enumerate(tree.unobserved)]
    uvp: list = []

    def record(it, model):
        per_start = []
        for k, s in enumerate(tree.observed):
            Y = simulate_tree(model, s, data[k], n_steps)
            per_start.append([float(bw2_uvp(Y[:, u], *exact[u])) for u in tree.unobserved])
        uvp.append(per_start)

    tree_dsbm(tree, data, n_iter=n_iter, steps=steps, batch_size=batch_size, hidden=hidden, lr=lr, n_steps=n_steps,
              callback=record)
    return {"uvp_independent": ind, "uvp": uvp}


CONFIGS = {
    "star_d2_equal": dict(tree="star", d=2, weights=[1 / 3, 1 / 3, 1 / 3]),
    "star_d2_unequal": dict(tree="star", d=2, weights=[0.6, 0.3, 0.1]),
    "star_d4_equal": dict(tree="star", d=4, weights=[1 / 3, 1 / 3, 1 / 3]),
    "h_tree_d2": dict(tree="h", d=2, weights=None),
}


def run_config(name: str, seed: int, sigma: float = float(np.sqrt(0.05)), **kw) -> dict:
    """One entry of ``CONFIGS`` (ε = 2σ² = 0.1 by default) for one seed."""
    if name not in CONFIGS:
        raise ValueError(f"name must be one of {sorted(CONFIGS)}, got {name!r}")
    cfg = CONFIGS[name]
    tree = star_tree(cfg["weights"], sigma) if cfg["tree"] == "star" else h_tree(sigma)
    means, covs = gaussian_problem(cfg["d"], len(tree.observed), seed)
    return run_gaussian(tree, means, covs, seed=seed, **kw)


def main(argv: Sequence[str] | None = None) -> None:
    import argparse
    import time

    from .results import save_results

    p = argparse.ArgumentParser(description="TreeDSBM on Gaussian trees over seeds (stored results).")
    p.add_argument("--configs", nargs="+", default=list(CONFIGS))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--n-iter", type=int, default=3)
    p.add_argument("--steps", type=int, default=200)
    a = p.parse_args(argv)
    out: dict = {}
    for name in a.configs:
        out[name] = {}
        for s in a.seeds:
            t0 = time.time()
            out[name][str(s)] = run_config(name, s, n_iter=a.n_iter, steps=a.steps)
            print(name, s, f"{time.time() - t0:.0f}s", flush=True)
    cmd = (f"python -m neurips25.tree_sb --configs {' '.join(a.configs)} --seeds {' '.join(map(str, a.seeds))}"
           f" --n-iter {a.n_iter} --steps {a.steps}")
    print(save_results("tree_sb", out, cmd, a.seeds[0]))


if __name__ == "__main__":
    main()
