"""The multi-view data sets, incomplete-view masks and the clustering metrics.

Mfeat (UCI "Multiple Features", the paper's handwritten-digit benchmark) describes each of 2,000
digits by six hand-crafted feature sets: Fourier coefficients of the character shape (fou), profile
correlations (fac), Karhunen-Loeve coefficients (kar), pixel averages in 2x3 windows (pix), Zernike
moments (zer) and morphological features (mor). The real data ship with the package
(``data_files/mfeat.npz``, CC BY 4.0, see its README): ``load_mfeat`` reads them and ``mfeat`` draws
the chapter's instances. Two stand-ins built from scikit-learn's 8x8 digits serve as contrasts:
``mfeat_digits`` computes the same six kinds of feature from them, ``multiview_digits`` four
pixel-derived views (pixels, pooled pixels, profiles, gradient histograms).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..runtime import check_int

__all__ = ["VIEW_NAMES", "MFEAT_VIEW_NAMES", "N_MFEAT", "load_mfeat", "mfeat_indices", "mfeat", "digit_indices",
           "multiview_digits", "mfeat_digits", "missing_masks", "check_views", "clustering_accuracy", "nmi", "purity",
           "clustering_scores"]

VIEW_NAMES = ("pixels", "pooled", "profiles", "gradients")
MFEAT_VIEW_NAMES = ("fou", "fac", "kar", "pix", "zer", "mor")


N_MFEAT = 2000  # UCI Multiple Features: 200 digits of each class


@lru_cache(maxsize=1)
def _mfeat_arrays() -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    from importlib.resources import as_file, files

    res = files(__package__) / "data_files" / "mfeat.npz"
    if not res.is_file():
        raise FileNotFoundError(f"the packaged Mfeat data are missing ({res}); reinstall neurips25 with its "
                                "package data (pkg/neurips25/guitar/data_files/mfeat.npz)")
    with as_file(res) as path, np.load(path) as d:
        views = tuple(d[name].astype(np.float64) for name in MFEAT_VIEW_NAMES)
        y = d["labels"].astype(np.int64)
    for a in views + (y,):
        a.flags.writeable = False
    return views, y


def load_mfeat() -> tuple[list[np.ndarray], np.ndarray]:
    """The real UCI Multiple Features data, ``(views, labels)``: six views of the 2,000 digits
    (``MFEAT_VIEW_NAMES``; fou 76, fac 216, kar 64, pix 240, zer 47 and mor 6 features), in class
    order, and the labels 0-9. Read from the packaged ``data_files/mfeat.npz`` (UCI, CC BY 4.0;
    provenance in its README); the arrays are read-only float64 copies of the stored float32."""
    views, y = _mfeat_arrays()
    return list(views), y


def mfeat_indices(n: int, seed: int) -> np.ndarray:
    """Which of Mfeat's 2,000 digits the instance ``(n, seed)`` uses (sorted indices; all of them for
    ``n = 2000``, whatever the seed)."""
    if not isinstance(n, (int, np.integer)) or not 10 <= n <= N_MFEAT:
        raise ValueError(f"n must be an int in [10, {N_MFEAT}], got {n!r}")
    return np.sort(np.random.default_rng(seed).choice(N_MFEAT, size=int(n), replace=False))


def mfeat(n: int = N_MFEAT, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """``n`` random digits (without replacement) of the real Mfeat, ``(views, labels)``; ``n = 2000``
    is the paper's whole data set (the seed then only drives the masks and k-means)."""
    idx = mfeat_indices(n, seed)
    views, y = _mfeat_arrays()
    return [X[idx] for X in views], y[idx]


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
    img, y = _digit_sample(n, seed)
    pooled = img.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(len(img), -1)
    profiles = np.concatenate([img.sum(2), img.sum(1)], axis=1)
    return [img.reshape(len(img), -1), pooled, profiles, _gradient_histograms(img)], y


N_DIGITS = 1797  # scikit-learn's digits


def digit_indices(n: int, seed: int) -> np.ndarray:
    """Which of scikit-learn's 1,797 digits the instance ``(n, seed)`` uses (sorted indices): the
    subsample behind ``multiview_digits`` and ``mfeat_digits``."""
    if not isinstance(n, (int, np.integer)) or not 10 <= n <= N_DIGITS:
        raise ValueError(f"n must be an int in [10, {N_DIGITS}], got {n!r}")
    return np.sort(np.random.default_rng(seed).choice(N_DIGITS, size=int(n), replace=False))


def _digit_sample(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` random digits (without replacement) as ``(n, 8, 8)`` images in [0, 1], and their labels."""
    from sklearn.datasets import load_digits

    idx = digit_indices(n, seed)
    X, y = load_digits(return_X_y=True)
    return X[idx].reshape(-1, 8, 8) / 16.0, y[idx].astype(np.int64)


def _upsample(img: np.ndarray, size: int = 32) -> np.ndarray:
    """Cubic-spline zoom of ``(N, 8, 8)`` images to ``(N, size, size)``, clipped to [0, 1]."""
    from scipy import ndimage

    return np.stack([ndimage.zoom(im, size / img.shape[1], order=3) for im in img]).clip(0.0, 1.0)


def _fourier_shape(up: np.ndarray, n_angles: int = 64, n_coef: int = 24, thr: float = 0.3) -> np.ndarray:
    """fou: Fourier descriptors of the character's outline. The outline is the outermost ink radius
    along ``n_angles`` rays from the ink centroid; the features are the magnitudes of its DFT
    coefficients 1..n_coef relative to the mean radius (shift-, rotation- and scale-invariant)."""
    from scipy import ndimage

    N, S, _ = up.shape
    ys, xs = np.mgrid[0:S, 0:S]
    mass = up.sum((1, 2)) + 1e-12
    cy, cx = (up * ys).sum((1, 2)) / mass, (up * xs).sum((1, 2)) / mass
    ang = np.linspace(0, 2 * np.pi, n_angles, endpoint=False)
    radii = np.linspace(0, 0.75 * S, 48)
    out = np.empty((N, n_coef))
    for i in range(N):
        py = cy[i] + radii[None, :] * np.sin(ang)[:, None]
        px = cx[i] + radii[None, :] * np.cos(ang)[:, None]
        ink = ndimage.map_coordinates(up[i], [py.ravel(), px.ravel()], order=1, cval=0.0).reshape(n_angles, -1) > thr
        r = np.where(ink.any(1), radii[np.where(ink, np.arange(len(radii)), -1).max(1)], 0.0)
        F = np.abs(np.fft.rfft(r))
        out[i] = F[1:n_coef + 1] / (F[0] + 1e-12)
    return out


def _profile_correlations(img: np.ndarray) -> np.ndarray:
    """fac: ink profiles along rows, columns and both diagonals, and their autocorrelations at lags 1-3."""
    rows, cols = img.sum(2), img.sum(1)
    diag = np.stack([[np.trace(im, k) for k in range(-7, 8)] for im in img])
    anti = np.stack([[np.trace(im[:, ::-1], k) for k in range(-7, 8)] for im in img])

    def acf(p: np.ndarray) -> np.ndarray:
        p = p - p.mean(1, keepdims=True)
        den = (p * p).sum(1) + 1e-12
        return np.stack([(p[:, lag:] * p[:, :-lag]).sum(1) / den for lag in (1, 2, 3)], 1)

    return np.concatenate([rows, cols, diag, anti, acf(rows), acf(cols), acf(diag), acf(anti)], 1)


def _zernike_moments(up: np.ndarray, order: int = 10) -> np.ndarray:
    """zer: magnitudes |A_nm| of the Zernike moments up to ``order`` on the unit disc (rotation-invariant)."""
    from math import factorial

    S = up.shape[1]
    c = (S - 1) / 2
    ys, xs = np.mgrid[0:S, 0:S]
    x, y = (xs - c) / c, (ys - c) / c
    rho, theta = np.hypot(x, y), np.arctan2(y, x)
    disc = rho <= 1
    feats = []
    for n in range(order + 1):
        for m in range(n % 2, n + 1, 2):
            R = sum((-1) ** s * factorial(n - s) / (factorial(s) * factorial((n + m) // 2 - s)
                    * factorial((n - m) // 2 - s)) * rho ** (n - 2 * s) for s in range((n - m) // 2 + 1))
            V = R * np.exp(-1j * m * theta) * disc
            feats.append(np.abs((n + 1) / np.pi * (up * V[None]).sum((1, 2)) / c**2))
    return np.stack(feats, 1)


def _morphology(up: np.ndarray, thr: float = 0.4) -> np.ndarray:
    """mor: six morphological features of the binarised character: number of holes, number of
    connected ink components, width / height, ink area / bounding-box area, boundary / area, and the
    ink centroid's height."""
    from scipy import ndimage

    out = np.zeros((len(up), 6))
    for i, im in enumerate(up):
        b = im > thr
        _, n_ink = ndimage.label(b)
        bg, n_bg = ndimage.label(~b)
        border = set(np.unique(np.concatenate([bg[0], bg[-1], bg[:, 0], bg[:, -1]]))) - {0}
        ys, xs = np.nonzero(b)
        if len(ys) == 0:
            continue
        h, w, area = np.ptp(ys) + 1, np.ptp(xs) + 1, b.sum()
        boundary = (b & ~ndimage.binary_erosion(b)).sum()
        out[i] = [n_bg - len(border), n_ink, w / h, area / (h * w), boundary / area, ys.mean() / len(im)]
    return out


def mfeat_digits(n: int = 500, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """``n`` random digits of scikit-learn's 8x8 set (without replacement) seen through six views built
    like Mfeat's (a stand-in for the real ``mfeat``), ``(views, labels)``.

    The views (``MFEAT_VIEW_NAMES``), each ``(n, d_v)``, follow Mfeat's six feature sets: fou (24
    Fourier descriptors of the outline), fac (58 profile and profile-autocorrelation features), kar
    (32 Karhunen-Loeve, i.e. PCA, coefficients of the pixels, fitted on the ``n`` digits without
    labels), pix (16 averages over 2x2 windows), zer (36 Zernike moment magnitudes, order <= 10) and
    mor (6 morphological features). Shape features use the digit zoomed to 32x32. Unlike the four
    pixel-derived views of ``multiview_digits``, several of these are non-linear, invariant summaries
    that are individually weak (fou, mor) but carry information the pixels expose only indirectly.
    """
    from sklearn.decomposition import PCA

    img, y = _digit_sample(n, seed)
    up = _upsample(img)
    flat = img.reshape(len(img), -1)
    kar = PCA(min(32, len(img) - 1), svd_solver="full").fit_transform(flat)
    pix = img.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(len(img), -1)
    views = [_fourier_shape(up), _profile_correlations(img), kar, pix, _zernike_moments(up), _morphology(up)]
    return views, y


def missing_masks(n: int, n_views: int, rate: float, seed: int = 0) -> np.ndarray:
    """Observed-entry mask ``(n, n_views)``: each view independently misses a ``rate`` fraction of samples.

    A sample left with no view at all gets one view (chosen at random) back, so every sample keeps
    at least one view; the realised missing rate is therefore slightly below ``rate``.
    """
    n = check_int(n, "n")
    n_views = check_int(n_views, "n_views", 2)
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
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if y.dtype.kind in "fc" and not np.isfinite(y).all():  # a NaN label would count as a class
            raise ValueError(f"{name} must not contain NaN or inf labels")
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
