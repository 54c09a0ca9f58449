"""GUITAR's ADMM solver (Algorithm 1 of the paper), a plain torch loop in the scikit-learn style.

Model, for views ``X_v (d_v x n)`` with missing columns imputed by the model itself::

    min  ||Z||_HPl_delta + lam1 sum_v GRN(E_v; Sigma_v)
         + lam2 sum_v sum_{v' != v} tr(Z_v L_{v'} Z_v^T) + lam3 sum_v tr(Z_v L_s Z_v^T)
    s.t. X_v = A_v Z_v + E_v,  A_v^T A_v = I,  Z_v = G_v (the tensor copy),

with ``GRN(E; Sigma) = sum_q e_q^T Sigma^{-1} e_q / 2 + n log|Sigma| / 2`` the Gaussian negative
log-likelihood of the noise columns. Updates follow the authors' order: A, E, Sigma, missing X, Y, G, Q,
Z, graphs, penalties.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..runtime import check_int, single_thread
from .data import check_views
from .tensor import RANK_SURROGATES, tensor_prox

__all__ = ["knn_cosine_graph", "normalized_laplacian", "preprocess", "spectral_labels", "GUITAR"]


def knn_cosine_graph(Z: torch.Tensor, k: int) -> torch.Tensor:
    """Symmetric kNN graph on the columns of ``Z (t, n)``: cosine similarity to the ``k`` nearest
    other columns, negatives clipped to 0 (they would make degrees negative), ``S = max(S, S^T)``."""
    if not isinstance(Z, torch.Tensor) or Z.ndim != 2:
        raise TypeError("Z must be a 2-D torch.Tensor (features x samples)")
    n = Z.shape[1]
    if not isinstance(k, int) or not 1 <= k < n:
        raise ValueError(f"k must be an int in [1, n-1] = [1, {n - 1}], got {k!r}")
    return _knn_graphs(Z, (k,))[0]


def _knn_graphs(Z: torch.Tensor, ks: tuple[int, ...]) -> list[torch.Tensor]:
    """``knn_cosine_graph(Z, k)`` for every ``k`` in ``ks``, from one cosine matrix and one top-k search."""
    Zn = Z / Z.norm(dim=0, keepdim=True).clamp_min(1e-12)
    C = Zn.T @ Zn
    C.fill_diagonal_(-torch.inf)
    val, idx = C.topk(max(ks), dim=1)  # sorted: the k nearest are the first k columns
    out = []
    for k in ks:
        S = torch.zeros_like(C).scatter_(1, idx[:, :k], val[:, :k].clamp_min(0))
        out.append(torch.maximum(S, S.T))
    return out


def normalized_laplacian(S: torch.Tensor) -> torch.Tensor:
    """``L = I - D^{-1/2} S D^{-1/2}`` of a symmetric non-negative affinity ``S`` (isolated nodes get L_ii = 1)."""
    if not isinstance(S, torch.Tensor) or S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError("S must be a square 2-D torch.Tensor")
    if (S < 0).any() or not torch.allclose(S, S.T):
        raise ValueError("S must be symmetric and non-negative")
    return _laplacian(S)


def _laplacian(S: torch.Tensor) -> torch.Tensor:
    d = S.sum(1)
    dinv = torch.where(d > 0, d.clamp_min(1e-300).rsqrt(), torch.zeros_like(d))
    return torch.eye(len(S), dtype=S.dtype, device=S.device) - dinv[:, None] * S * dinv[None, :]


def preprocess(views, masks, dims=None) -> list[np.ndarray]:
    """The authors' preprocessing: per-sample l2 normalisation, then PCA fitted on the observed samples
    of each view to ``min(20, round(d_v / 4))`` dimensions; missing samples are zero. Returns ``(d'_v, n)``."""
    from sklearn.decomposition import PCA

    views, masks = check_views(views, masks)
    out = []
    for v, X in enumerate(views):
        obs = masks[:, v]
        Xo = X[obs] / np.linalg.norm(X[obs], axis=1, keepdims=True).clip(1e-12)
        d = dims[v] if dims is not None else min(20, round(X.shape[1] / 4))
        d = max(1, min(d, Xo.shape[1], Xo.shape[0] - 1))
        Xv = np.zeros((d, len(X)))
        Xv[:, obs] = PCA(d, svd_solver="full").fit_transform(Xo).T
        out.append(Xv)
    return out


def spectral_labels(F: np.ndarray, n_clusters: int, seed: int = 0) -> np.ndarray:
    """Top-``n_clusters`` left singular vectors of ``F (n, p)``, rows normalised, then k-means (10 restarts)."""
    from sklearn.cluster import KMeans

    U, _, _ = np.linalg.svd(F, full_matrices=False)
    U = U[:, :n_clusters]
    U = U / (np.linalg.norm(U, axis=1, keepdims=True) + 1e-12)
    return KMeans(n_clusters, n_init=10, random_state=seed).fit_predict(U)


@dataclass
class GUITAR:
    """Gaussian-regression-driven tensorized incomplete multi-view clustering.

    Defaults are the official code's: ``lam1=1e-3, lam2=0.1, lam3=1, delta=1e-2``, ``t = n_clusters``
    anchors, kNN sizes 4 (view graphs) and 1 (consensus graph), ``mu = rho = 1e-4`` growing by 1.2.
    Ablations: ``rank="nuclear"`` (t-SVD nuclear norm), ``lam2 = lam3 = 0`` (no manifold terms),
    ``noise="l2"`` (``Sigma`` frozen at ``I``: a plain Frobenius penalty instead of GRN).
    """

    n_clusters: int
    lam1: float = 1e-3
    lam2: float = 0.1
    lam3: float = 1.0
    delta: float = 1e-2
    rank: str = "hp_ldelta"
    noise: str = "grn"
    n_anchors: int | None = None
    k_view: int = 4
    k_shared: int = 1
    max_iter: int = 100
    tol: float = 1e-7
    mu: float = 1e-4
    rho: float = 1e-4
    eta: float = 1.2
    seed: int = 0
    device: str | torch.device = "cpu"
    history_: dict = field(default_factory=dict, init=False, repr=False)

    def _validate(self) -> None:
        self.n_clusters = check_int(self.n_clusters, "n_clusters", 2)
        for name in ("lam1", "lam2", "lam3"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if self.rank not in RANK_SURROGATES:
            raise ValueError(f"rank must be one of {RANK_SURROGATES}, got {self.rank!r}")
        if self.noise not in ("grn", "l2"):
            raise ValueError(f"noise must be 'grn' or 'l2', got {self.noise!r}")
        self.max_iter = check_int(self.max_iter, "max_iter")
        # Theorem 1 needs mu_k, rho_k growing geometrically: with eta <= 1 the penalties stay put or shrink
        if not 1 < self.eta < np.inf:
            raise ValueError(f"eta must be a finite number > 1 (the penalties' growth factor), "
                             f"got {self.eta!r}")
        for name in ("mu", "rho", "tol"):
            if not 0 < getattr(self, name) < np.inf:
                raise ValueError(f"{name} must be positive and finite, got {getattr(self, name)!r}")
        if self.noise == "grn" and self.lam1 <= 0:
            raise ValueError("lam1 must be > 0 with noise='grn'")

    def objective(self, rank_term: float, Z, E, Sigma, L, Ls) -> float:
        """The model's objective: ``rank_term`` (the surrogate of the tensor copy G) plus the noise and
        manifold terms at the current iterate."""
        m, Lsum = len(Z), sum(L)
        f = rank_term
        for v in range(m):
            n = E[v].shape[1]
            quad = 0.5 * (E[v] * torch.linalg.solve(Sigma[v], E[v])).sum()
            noise = quad + 0.5 * n * torch.linalg.slogdet(Sigma[v])[1] if self.noise == "grn" else quad
            f += float(self.lam1 * noise + self.lam2 * (Z[v] * (Z[v] @ (Lsum - L[v]))).sum()
                       + self.lam3 * (Z[v] * (Z[v] @ Ls)).sum())
        return f

    def fit(self, views, masks, dims=None) -> GUITAR:
        """Run ADMM on ``views`` (list of ``(n, d_v)`` arrays) with observed-mask ``masks (n, m)``.

        On CPU the loop runs single-threaded: its matrices are small (n x n at most, n <= ~2000), where
        intra-op threads cost more in synchronisation than they save, badly so on a shared machine.
        """
        self._validate()
        if torch.device(self.device).type != "cpu":
            return self._fit(views, masks, dims)
        with single_thread():
            return self._fit(views, masks, dims)

    def _fit(self, views, masks, dims) -> GUITAR:
        Xs = preprocess(views, masks, dims)
        masks = np.asarray(masks)
        dev, dt = torch.device(self.device), torch.float64
        m, n, t = len(Xs), Xs[0].shape[1], self.n_anchors or self.n_clusters
        X = [torch.as_tensor(x, dtype=dt, device=dev) for x in Xs]
        miss = [torch.as_tensor(~masks[:, v], device=dev) for v in range(m)]
        I_n = torch.eye(n, dtype=dt, device=dev)
        Z = [torch.ones(t, n, dtype=dt, device=dev) for _ in range(m)]
        E = [torch.zeros_like(x) for x in X]
        Y = [torch.zeros_like(x) for x in X]
        Q = [torch.zeros_like(z) for z in Z]
        Sigma = [torch.eye(len(x), dtype=dt, device=dev) for x in X]
        L, Ls = [I_n.clone() for _ in range(m)], I_n.clone()
        mu, rho = self.mu, self.rho
        hist = {"residual_X": [], "residual_Z": [], "objective": []}
        for _ in range(self.max_iter):
            A = []
            for v in range(m):
                # A_v: orthogonal Procrustes, max tr(A^T M) s.t. A^T A = I  ->  A = U V^T.
                U, _, Vh = torch.linalg.svd((Y[v] + mu * (X[v] - E[v])) @ Z[v].T, full_matrices=False)
                A.append(U @ Vh)
            for v in range(m):
                # E_v column-wise: (lam1 Sigma^{-1} + mu I) e_q = y_q + mu (x_q - A z_q); one shared matrix.
                d = len(X[v])
                W = mu * torch.eye(d, dtype=dt, device=dev)
                if self.lam1 > 0:
                    W = W + self.lam1 * torch.linalg.inv(Sigma[v])
                E[v] = torch.linalg.solve(W, Y[v] + mu * (X[v] - A[v] @ Z[v]))
                if self.noise == "grn":  # Sigma_v: the ML covariance of the noise columns, kept PD.
                    Sigma[v] = (E[v] @ E[v].T + self.tol * torch.eye(d, dtype=dt, device=dev)) / n
                X[v][:, miss[v]] = (A[v] @ Z[v])[:, miss[v]]  # impute the missing columns
                Y[v] = Y[v] + mu * (X[v] - A[v] @ Z[v] - E[v])
            # G: prox of the rank surrogate on the rotated tensor (n, m, t): the FFT runs along the
            # anchor mode and each Fourier slice is an n x m matrix whose columns are the views.
            Zt, Qt = torch.stack(Z, 2).permute(1, 2, 0), torch.stack(Q, 2).permute(1, 2, 0)
            Gt, rank_term = tensor_prox(Zt + Qt / rho, 1.0 / rho, self.rank, self.delta, return_penalty=True)
            Qt = Qt + rho * (Zt - Gt)
            G = [Gt.permute(2, 0, 1)[:, :, v] for v in range(m)]
            Q = [Qt.permute(2, 0, 1)[:, :, v] for v in range(m)]
            Lsum = sum(L)
            for v in range(m):
                # Z_v M = T with M = (rho + mu) I + 2 lam2 sum_{v'!=v} L_v' + 2 lam3 L_s (SPD): Cholesky.
                T = rho * G[v] - Q[v] + A[v].T @ (Y[v] + mu * (X[v] - E[v]))
                M = (rho + mu) * I_n + 2 * self.lam2 * (Lsum - L[v]) + 2 * self.lam3 * Ls
                Z[v] = torch.cholesky_solve(T.T, torch.linalg.cholesky(M)).T
            if self.lam2 > 0 or self.lam3 > 0:  # rebuild the dual manifold graphs from the new Z
                graphs = [_knn_graphs(z, (self.k_view, self.k_shared)) for z in Z]
                L = [_laplacian(S_v) for S_v, _ in graphs]
                Ls = _laplacian(sum(S_1 for _, S_1 in graphs) / m)
            mu, rho = min(mu * self.eta, 1e13), min(rho * self.eta, 1e13)
            rX = max(float(torch.linalg.matrix_norm(X[v] - A[v] @ Z[v] - E[v], ord=float("inf")))
                     for v in range(m))
            rZ = max(float(torch.linalg.matrix_norm(Z[v] - G[v], ord=float("inf"))) for v in range(m))
            hist["residual_X"].append(rX)
            hist["residual_Z"].append(rZ)
            hist["objective"].append(self.objective(float(rank_term), Z, E, Sigma, L, Ls))
            if rX < self.tol and rZ < self.tol:
                break
        self.Z_ = [z.cpu().numpy() for z in Z]
        self.history_ = hist
        self.n_iter_ = len(hist["residual_X"])
        # Clustering: spectral embedding of the stacked coefficients [Z_1; ...; Z_m]^T, then k-means.
        self.labels_ = spectral_labels(np.concatenate(self.Z_, 0).T, self.n_clusters, self.seed)
        return self

    def fit_predict(self, views, masks, dims=None) -> np.ndarray:
        """Fit and return the cluster labels ``(n,)``."""
        return self.fit(views, masks, dims).labels_

