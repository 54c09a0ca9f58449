"""Baselines: best single view, zero-filled concatenation, PVC (Li, Jiang & Zhou, AAAI 2014) and APMC
(Guo & Ye, AAAI 2019).

All start from the same per-sample l2-normalised features as GUITAR (no PCA) and end in k-means
with 10 restarts, so differences come from how the views and the missing entries are handled.
"""
from __future__ import annotations

import numpy as np

from ..runtime import check_int
from .data import check_views
from .solver import spectral_labels

__all__ = ["normalise_views", "single_view_kmeans", "concat_kmeans", "pvc", "apmc", "baseline_embeddings"]


def normalise_views(views, masks) -> list[np.ndarray]:
    """Per-sample l2 normalisation of every view; missing samples are set to zero."""
    views, masks = check_views(views, masks)
    out = []
    for v, X in enumerate(views):
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True).clip(1e-12)
        Xn[~masks[:, v]] = 0.0
        out.append(Xn)
    return out


def _kmeans(F: np.ndarray, k: int, seed: int) -> np.ndarray:
    from sklearn.cluster import KMeans

    return KMeans(k, n_init=10, random_state=seed).fit_predict(F)


def baseline_embeddings(method: str, views, masks, n_clusters: int, seed: int = 0, **kw):
    """``[(F, spectral), ...]``: what ``method``'s final k-means clusters, one entry per candidate view for
    "Best single view", else one. ``spectral``: ``F`` goes through ``solver.spectral_labels`` (APMC), else
    plain k-means. ``seed`` seeds PVC's start; k-means seeds are the caller's (repeated k-means runs on one
    embedding). ``kw``: the method's hyper-parameters."""
    if method == "Best single view":
        return [(X, False) for X in _mean_filled(views, masks)]
    if method == "Concat + k-means":
        return [(np.concatenate(_mean_filled(views, masks), 1), False)]
    if method == "PVC":
        return [(_pvc_latent(views, masks, n_clusters, seed, **kw), False)]
    if method == "APMC":
        return [(_apmc_embedding(views, masks, n_clusters, seed, **kw), True)]
    raise ValueError(f"method must be one of 'Best single view', 'Concat + k-means', 'PVC', 'APMC', got {method!r}")


def _mean_filled(views, masks) -> list[np.ndarray]:
    """The normalised views with every missing sample replaced by the mean of the view's observed ones."""
    Xs, masks = normalise_views(views, masks), np.asarray(masks)
    for v, X in enumerate(Xs):
        X[~masks[:, v]] = X[masks[:, v]].mean(0)
    return Xs


def single_view_kmeans(views, masks, view: int, n_clusters: int, seed: int = 0) -> np.ndarray:
    """k-means on one view, its missing samples imputed by the view's mean (the "BSV" baseline)."""
    Xs = _mean_filled(views, masks)
    if not isinstance(view, int) or not 0 <= view < len(Xs):
        raise ValueError(f"view must be an int in [0, {len(Xs) - 1}], got {view!r}")
    return _kmeans(Xs[view], n_clusters, seed)


def concat_kmeans(views, masks, n_clusters: int, seed: int = 0) -> np.ndarray:
    """k-means on the concatenation of all views, every missing view filled by that view's mean over the
    samples that have it (the "Concat" baseline of the incomplete multi-view literature, e.g. Wen et al.'s
    survey that the paper cites). Zero-filling instead would let k-means group the samples by which
    views they miss: each l2-normalised view adds 1 to a sample's squared norm."""
    return _kmeans(np.concatenate(_mean_filled(views, masks), 1), n_clusters, seed)


def pvc(views, masks, n_clusters: int, seed: int = 0, latent_per_cluster: int = 1, lam: float = 1e-2,
        max_iter: int = 300) -> np.ndarray:
    """Partial multi-view clustering (PVC, Li, Jiang & Zhou 2014), extended from two views to ``m``.

    PVC factorises every view non-negatively, ``X_v ~ P U_v``, with a latent row ``p_i`` per sample that
    is *shared by all the views observing it* (two views: the paired samples share a row, the others
    have a view-specific one), and an l1 penalty on ``P``::

        min_{P, U_v >= 0}  sum_v ||W_v (X_v - P U_v)||_F^2 + lam sum_v ||W_v P||_1,

    ``W_v`` the diagonal observed-mask of view v. Solved by multiplicative updates (Lee & Seung with the
    l1 term in the denominator) from a seeded random start; then k-means on ``P``. The features are the
    per-sample l2-normalised views made non-negative by scaling every feature to [0, 1] over the
    samples that observe it. ``latent_per_cluster * n_clusters`` is the latent dimension.
    """
    return _kmeans(_pvc_latent(views, masks, n_clusters, seed, latent_per_cluster, lam, max_iter), n_clusters, seed)


def _pvc_latent(views, masks, n_clusters: int, seed: int = 0, latent_per_cluster: int = 1, lam: float = 1e-2,
                max_iter: int = 300) -> np.ndarray:
    """PVC's latent matrix ``P (n, latent_per_cluster * n_clusters)`` (see ``pvc``)."""
    Xs = normalise_views(views, masks)
    masks = np.asarray(masks)
    for name, val in (("latent_per_cluster", latent_per_cluster), ("max_iter", max_iter)):
        check_int(val, name)
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam!r}")
    W = masks.astype(float)
    for v, X in enumerate(Xs):  # min-max scale every feature over the observed samples
        lo, hi = X[masks[:, v]].min(0), X[masks[:, v]].max(0)
        Xs[v] = (X - lo) / np.where(hi > lo, hi - lo, 1.0) * W[:, v:v + 1]
    rng = np.random.default_rng(seed)
    k, eps = latent_per_cluster * n_clusters, 1e-12
    P = rng.random((len(W), k))
    U = [rng.random((k, X.shape[1])) for X in Xs]
    for _ in range(max_iter):
        for v, X in enumerate(Xs):
            WP = W[:, v:v + 1] * P
            U[v] *= (WP.T @ X) / (WP.T @ P @ U[v] + eps)
        num = sum(X @ Uv.T for X, Uv in zip(Xs, U))  # rows of missing views are zero in X
        den = sum(W[:, v:v + 1] * (P @ Uv @ Uv.T) for v, Uv in enumerate(U)) + lam / 2 * W.sum(1, keepdims=True)
        P *= num / (den + eps)
    return P


def apmc(views, masks, n_clusters: int, seed: int = 0, n_neighbors: int = 5,
         anchor_fraction: float = 1.0) -> np.ndarray:
    """Anchor-based partial multi-view clustering (APMC, Guo & Ye 2019), as we reconstruct it.

    The samples observed in *every* view are the anchors, shared by all views. Each view builds an
    anchor graph ``Z_v (n, k)`` on its observed samples (Gaussian kernel on the ``n_neighbors``
    nearest anchors it observes, rows summing to one; missing rows zero). The graphs are fused by
    averaging over the views each sample has, ``Z = sum_v Z_v / #views(i)``, and clustered spectrally
    on the anchor-graph affinity ``S = Z Lambda^{-1} Z^T`` via the SVD of ``Z Lambda^{-1/2}``.

    APMC was designed for two views, where paired samples are plentiful. With many views and a high
    missing rate few samples are complete (six views at rate 0.5: ~1.6%); when fewer than
    ``n_clusters`` are, the anchors are the samples observed in the most views that still number at
    least ``n_clusters`` (e.g. all views but one), and each view links only to the anchors it observes.

    ``anchor_fraction < 1`` (a diagnostic, not part of APMC) keeps a random fraction of those anchors,
    e.g. to ask whether fewer anchors alone change the result on complete data.
    """
    return spectral_labels(_apmc_embedding(views, masks, n_clusters, seed, n_neighbors, anchor_fraction),
                           n_clusters, seed)


def _apmc_embedding(views, masks, n_clusters: int, seed: int = 0, n_neighbors: int = 5,
                    anchor_fraction: float = 1.0) -> np.ndarray:
    """APMC's normalised anchor graph ``Z Lambda^{-1/2}`` (see ``apmc``), the input of its spectral step."""
    n_neighbors = check_int(n_neighbors, "n_neighbors")
    Xs = normalise_views(views, masks)
    masks = np.asarray(masks)
    n_obs = masks.sum(1)
    need = next((a for a in range(masks.shape[1], 0, -1) if (n_obs >= a).sum() >= n_clusters), None)
    if need is None or need < 2:
        raise ValueError(f"APMC needs at least n_clusters={n_clusters} samples observed in two or more views "
                         "to serve as anchors")
    if not 0 < anchor_fraction <= 1:
        raise ValueError(f"anchor_fraction must be in (0, 1], got {anchor_fraction!r}")
    anchors = np.flatnonzero(n_obs >= need)
    if anchor_fraction < 1:
        keep = max(n_clusters, round(anchor_fraction * len(anchors)))
        anchors = np.sort(np.random.default_rng(seed).choice(anchors, size=keep, replace=False))
    Z = np.zeros((len(masks), len(anchors)))
    for v, X in enumerate(Xs):
        obs = np.flatnonzero(masks[:, v])
        cols = np.flatnonzero(masks[anchors, v])  # the anchors this view observes
        r = min(n_neighbors, len(cols))
        Xa = X[anchors[cols]]  # squared distances without the (n, anchors, d) difference tensor
        D = ((X[obs] ** 2).sum(1)[:, None] + (Xa ** 2).sum(1)[None, :] - 2 * X[obs] @ Xa.T).clip(0)
        nn = np.argsort(D, axis=1)[:, :r]
        Dn = np.take_along_axis(D, nn, 1)
        sigma2 = Dn.mean() + 1e-12  # one bandwidth per view: mean squared distance to the r anchors
        W = np.exp(-(Dn - Dn[:, :1]) / sigma2)  # shift by the nearest distance for stability
        Zv = np.zeros((len(obs), len(cols)))
        np.put_along_axis(Zv, nn, W / W.sum(1, keepdims=True), 1)
        Z[np.ix_(obs, cols)] += Zv
    Z /= n_obs[:, None]
    lam = Z.sum(0)
    return Z / np.sqrt(np.clip(lam, 1e-12, None))
