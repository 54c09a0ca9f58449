"""A multi-view, incomplete version of scikit-learn's digits, and the clustering metrics.

Mfeat (the paper's handwritten-digit benchmark) describes each digit by six hand-crafted feature
sets. We build four genuinely different views of the bundled 8x8 digits in the same spirit.
"""
from __future__ import annotations

import numpy as np

__all__ = ["VIEW_NAMES", "multiview_digits", "missing_masks", "check_views",
           "clustering_accuracy", "nmi", "purity", "clustering_scores"]

VIEW_NAMES = ("pixels", "pooled", "profiles", "gradients")


def _gradient_histograms(img: np.ndarray, bins: int = 8) -> np.ndarray:
    """HOG-like view: unsigned gradient orientations in ``bins`` bins, magnitude-weighted, per 4x4 quadrant."""
    gy, gx = np.gradient(img, axis=(1, 2))
    mag = np.hypot(gx, gy)
    ang = np.mod(np.arctan2(gy, gx), np.pi)
    b = np.minimum((ang / np.pi * bins).astype(int), bins - 1)
    feats = []
    for r in (slice(0, 4), slice(4, 8)):
        for c in (slice(0, 4), slice(4, 8)):
            bq, mq = b[:, r, c].reshape(len(img), -1), mag[:, r, c].reshape(len(img), -1)
            feats.append(np.stack([(mq * (bq == k)).sum(1) for k in range(bins)], axis=1))
    return np.concatenate(feats, axis=1)


def multiview_digits(n: int = 800, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """``n`` random digits (without replacement) seen through four views, ``(views, labels)``.

    Views, each ``(n, d_v)``: raw pixels (64), 2x2 block-pooled pixels (16), row and column ink
    profiles (16) and gradient-orientation histograms over four quadrants (32).
    """
    from sklearn.datasets import load_digits

    if not isinstance(n, (int, np.integer)) or not 10 <= n <= 1797:
        raise ValueError(f"n must be an int in [10, 1797], got {n!r}")
    X, y = load_digits(return_X_y=True)
    idx = np.sort(np.random.default_rng(seed).choice(len(y), size=int(n), replace=False))
    img = X[idx].reshape(-1, 8, 8) / 16.0
    pooled = img.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(len(idx), -1)
    profiles = np.concatenate([img.sum(2), img.sum(1)], axis=1)
    views = [img.reshape(len(idx), -1), pooled, profiles, _gradient_histograms(img)]
    return views, y[idx].astype(np.int64)


def missing_masks(n: int, n_views: int, rate: float, seed: int = 0) -> np.ndarray:
    """Observed-entry mask ``(n, n_views)``: each view independently misses a ``rate`` fraction of samples.

    A sample left with no view at all gets one view (chosen at random) back, so every sample keeps
    at least one view; the realised missing rate is therefore slightly below ``rate``.
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not isinstance(n_views, (int, np.integer)) or n_views < 2:
        raise ValueError(f"n_views must be an int >= 2, got {n_views!r}")
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"rate must be in [0, 1), got {rate!r}")
    rng = np.random.default_rng(seed)
    observed = np.ones((n, n_views), dtype=bool)
    n_miss = int(round(rate * n))
    for v in range(n_views):
        observed[rng.choice(n, size=n_miss, replace=False), v] = False
    empty = np.flatnonzero(~observed.any(1))
    observed[empty, rng.integers(0, n_views, size=len(empty))] = True
    return observed


def check_views(views, masks) -> tuple[list[np.ndarray], np.ndarray]:
    """Validate ``views`` (list of ``(n, d_v)`` arrays) and ``masks`` (bool ``(n, m)``, True = observed)."""
    if not isinstance(views, (list, tuple)) or len(views) < 2:
        raise TypeError("views must be a list of at least two (n, d_v) arrays")
    views = [np.asarray(X, dtype=np.float64) for X in views]
    n = views[0].shape[0]
    for v, X in enumerate(views):
        if X.ndim != 2 or X.shape[0] != n:
            raise ValueError(f"views[{v}] must have shape (n={n}, d_v), got {X.shape}")
    masks = np.asarray(masks)
    if masks.dtype != bool:
        raise TypeError(f"masks must be a boolean array (True = observed), got dtype {masks.dtype}")
    if masks.shape != (n, len(views)):
        raise ValueError(f"masks must have shape (n, n_views) = {(n, len(views))}, got {masks.shape}")
    none = np.flatnonzero(~masks.any(1))
    if len(none):
        raise ValueError(f"masks: every sample needs at least one observed view; samples {none[:5].tolist()}"
                         f"{'...' if len(none) > 5 else ''} ({len(none)} in all) miss every view")
    for v in range(len(views)):
        if masks[:, v].sum() < 2:
            raise ValueError(f"masks: view {v} must observe at least 2 samples")
        if not np.isfinite(views[v][masks[:, v]]).all():
            raise ValueError(f"views[{v}] has NaN or inf in observed samples")
    return views, masks


def _check_labels(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape or len(y_true) == 0:
        raise ValueError(f"y_true and y_pred must be non-empty 1-D arrays of equal length, "
                         f"got {y_true.shape} and {y_pred.shape}")
    return y_true, y_pred


def clustering_accuracy(y_true, y_pred) -> float:
    """ACC: the accuracy under the best one-to-one map of clusters to classes (Hungarian algorithm)."""
    from scipy.optimize import linear_sum_assignment
    from sklearn.metrics.cluster import contingency_matrix

    y_true, y_pred = _check_labels(y_true, y_pred)
    C = contingency_matrix(y_true, y_pred)
    rows, cols = linear_sum_assignment(-C)
    return float(C[rows, cols].sum() / len(y_true))


def nmi(y_true, y_pred) -> float:
    """Normalised mutual information (arithmetic normalisation, scikit-learn's default)."""
    from sklearn.metrics import normalized_mutual_info_score

    return float(normalized_mutual_info_score(*_check_labels(y_true, y_pred)))


def purity(y_true, y_pred) -> float:
    """Purity: each cluster votes for its majority class."""
    from sklearn.metrics.cluster import contingency_matrix

    y_true, y_pred = _check_labels(y_true, y_pred)
    return float(contingency_matrix(y_true, y_pred).max(0).sum() / len(y_true))


def clustering_scores(y_true, y_pred) -> dict[str, float]:
    """``{"ACC", "NMI", "purity"}`` in [0, 1]."""
    return {"ACC": clustering_accuracy(y_true, y_pred), "NMI": nmi(y_true, y_pred),
            "purity": purity(y_true, y_pred)}
