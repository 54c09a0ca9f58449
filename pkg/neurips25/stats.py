"""Small statistics shared by the chapters: convergence rates as log-log slopes, with bootstrap
intervals over the repeated trials behind them.

A rate claim "the error falls like n^a" is read off as the least-squares slope of log(error) on
log(n); its uncertainty comes from resampling the trials at each n and refitting. Two resampling
schemes occur: independent trials at every n (``paired=False``), and the same data sets measured at
every n (``paired=True``: one resample of data-set indices serves all n, which keeps their
correlation). A paired comparison of two methods over seeds is read off as the mean difference
with its Student t-interval (``t_interval``).
"""
from __future__ import annotations

import numpy as np

from .runtime import check_int

__all__ = ["loglog_slope", "bootstrap_means", "slope_ci", "t_interval"]


def loglog_slope(x, y) -> np.ndarray | float:
    """Least-squares slope of log y on log x, one per row of ``y`` (its last axis runs over x).

    A row with a non-positive entry has no logarithm and gets ``nan`` (a bootstrap caller drops it).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim != 1 or len(x) < 2 or not np.all(x > 0):
        raise ValueError(f"x must be a 1-D array of >= 2 positive sizes, got {x!r}")
    if y.shape[-1:] != x.shape:
        raise ValueError(f"y's last axis must have length len(x) = {len(x)}, got shape {y.shape}")
    lx = np.log(x) - np.log(x).mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        ly = np.where(y > 0, np.log(np.where(y > 0, y, 1.0)), np.nan)
    s = (ly - ly.mean(-1, keepdims=True)) @ lx / (lx @ lx)
    return float(s) if s.ndim == 0 else s


def bootstrap_means(err, n_boot: int = 2000, *, seed: int = 0, paired: bool = False) -> np.ndarray:
    """Means over the trials (last axis of ``err``) of ``n_boot`` bootstrap resamples.

    ``err`` is (..., trials); the result is (n_boot, ...). With ``paired=True`` every row shares one
    resample of trial indices per replicate (the trials are the same data sets in every row).
    """
    err = np.asarray(err, dtype=float)
    if err.ndim < 1 or err.shape[-1] < 2:
        raise ValueError(f"err must have >= 2 trials on its last axis, got shape {err.shape}")
    n_boot = check_int(n_boot, "n_boot")
    rng = np.random.default_rng(seed)
    t = err.shape[-1]
    shape = (n_boot, *((1,) * (err.ndim - 1) if paired else err.shape[:-1]), t)
    idx = np.broadcast_to(rng.integers(0, t, size=shape), (n_boot, *err.shape))
    return np.take_along_axis(np.broadcast_to(err, idx.shape), idx, -1).mean(-1)


def slope_ci(x, err, *, level: float = 0.95, n_boot: int = 2000, seed: int = 0,
             paired: bool = False) -> tuple[float, float]:
    """Percentile bootstrap interval of the log-log slope of the trial means of ``err`` (len(x), trials)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    s = loglog_slope(x, bootstrap_means(err, n_boot, seed=seed, paired=paired))
    lo, hi = np.nanpercentile(s, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def t_interval(d, level: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of the paired differences ``d`` (one per seed) and its two-sided
    Student t-interval at ``level``."""
    from scipy import stats

    d = np.asarray(d, dtype=float)
    if d.ndim != 1 or len(d) < 2 or not np.all(np.isfinite(d)):
        raise ValueError(f"d must be a 1-D array of >= 2 finite differences, got shape {d.shape}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    half = float(stats.t.ppf(0.5 + level / 2, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
    m = float(d.mean())
    return m, m - half, m + half
