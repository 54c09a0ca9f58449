"""Baselines: best single view, zero-filled concatenation, and APMC (Guo & Ye, AAAI 2019).

All start from the same per-sample l2-normalised features as GUITAR (no PCA) and end in k-means
with 10 restarts, so differences come from how the views and the missing entries are handled.
"""
from __future__ import annotations

import numpy as np

from .data import check_views
from .solver import spectral_labels

__all__ = ["normalise_views", "single_view_kmeans", "concat_kmeans", "apmc"]


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


def single_view_kmeans(views, masks, view: int, n_clusters: int, seed: int = 0) -> np.ndarray:
    """k-means on one view, its missing samples imputed by the view's mean (the "BSV" baseline)."""
    Xs = normalise_views(views, masks)
    if not isinstance(view, int) or not 0 <= view < len(Xs):
        raise ValueError(f"view must be an int in [0, {len(Xs) - 1}], got {view!r}")
    X, obs = Xs[view].copy(), np.asarray(masks)[:, view]
    X[~obs] = X[obs].mean(0)
    return _kmeans(X, n_clusters, seed)


def concat_kmeans(views, masks, n_clusters: int, seed: int = 0) -> np.ndarray:
    """k-means on the concatenation of all views with missing views filled by zeros."""
    return _kmeans(np.concatenate(normalise_views(views, masks), 1), n_clusters, seed)


def apmc(views, masks, n_clusters: int, seed: int = 0, n_neighbors: int = 5) -> np.ndarray:
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
    """
    Xs = normalise_views(views, masks)
    masks = np.asarray(masks)
    n_obs = masks.sum(1)
    need = next((a for a in range(masks.shape[1], 0, -1) if (n_obs >= a).sum() >= n_clusters), None)
    if need is None or need < 2:
        raise ValueError(f"APMC needs at least n_clusters={n_clusters} samples observed in two or more views "
                         "to serve as anchors")
    anchors = np.flatnonzero(n_obs >= need)
    Z = np.zeros((len(masks), len(anchors)))
    for v, X in enumerate(Xs):
        obs = np.flatnonzero(masks[:, v])
        cols = np.flatnonzero(masks[anchors, v])  # the anchors this view observes
        r = min(n_neighbors, len(cols))
        D = ((X[obs, None, :] - X[None, anchors[cols], :]) ** 2).sum(-1)
        nn = np.argsort(D, axis=1)[:, :r]
        Dn = np.take_along_axis(D, nn, 1)
        sigma2 = Dn.mean() + 1e-12  # one bandwidth per view: mean squared distance to the r anchors
        W = np.exp(-(Dn - Dn[:, :1]) / sigma2)  # shift by the nearest distance for stability
        Zv = np.zeros((len(obs), len(cols)))
        np.put_along_axis(Zv, nn, W / W.sum(1, keepdims=True), 1)
        Z[np.ix_(obs, cols)] += Zv
    Z /= n_obs[:, None]
    lam = Z.sum(0)
    return spectral_labels(Z / np.sqrt(np.clip(lam, 1e-12, None)), n_clusters, seed)
