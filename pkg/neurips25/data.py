"""Offline datasets: scikit-learn's bundled digits, toy 2-D shapes and Gaussian helpers.

Nothing here downloads anything; every sampler takes an explicit ``seed``.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from .runtime import check_int

__all__ = [
    "TOY_2D",
    "load_digits_tensors",
    "digits_split",
    "DigitsDataModule",
    "toy_2d",
    "sample_gaussian",
    "random_spd",
]


def load_digits_tensors(normalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's 1,797 bundled 8x8 digits as ``(X, y)``: X float32 ``(N, 64)``, y int64 ``(N,)``.

    With ``normalize=True`` pixel values (0..16) are scaled to [0, 1].
    """
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = torch.as_tensor(X, dtype=torch.float32)
    if normalize:
        X = X / 16.0
    return X, torch.as_tensor(y, dtype=torch.long)


def digits_split(
    val_fraction: float = 0.2, test_fraction: float = 0.2, seed: int = 0, normalize: bool = True
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Stratified train/val/test split of the digits: ``{"train": (X, y), "val": ..., "test": ...}``."""
    for name, f in (("val_fraction", val_fraction), ("test_fraction", test_fraction)):
        if not 0.0 <= f < 1.0:
            raise ValueError(f"{name} must be in [0, 1), got {f}")
    if val_fraction + test_fraction >= 1.0:
        raise ValueError("val_fraction + test_fraction must be < 1")
    from sklearn.model_selection import train_test_split

    X, y = load_digits_tensors(normalize)
    idx = np.arange(len(y))
    out: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    rest = idx
    if test_fraction > 0:
        rest, test = train_test_split(idx, test_size=test_fraction, random_state=seed, stratify=y.numpy())
        out["test"] = (X[test], y[test])
    if val_fraction > 0:
        frac = val_fraction / (1.0 - test_fraction)
        rest, val = train_test_split(rest, test_size=frac, random_state=seed, stratify=y.numpy()[rest])
        out["val"] = (X[val], y[val])
    out["train"] = (X[rest], y[rest])
    return {k: out[k] for k in ("train", "val", "test") if k in out}


def _datamodule_base():
    import lightning as L

    return L.LightningDataModule


class DigitsDataModule(_datamodule_base()):
    """Lightning ``DataModule`` over the bundled digits (stratified, seeded split)."""

    def __init__(self, batch_size: int = 128, val_fraction: float = 0.2, test_fraction: float = 0.2,
                 seed: int = 0, normalize: bool = True):
        super().__init__()
        batch_size = check_int(batch_size, "batch_size")
        self.save_hyperparameters()
        self.splits: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def setup(self, stage: str | None = None) -> None:
        if not self.splits:
            h = self.hparams
            self.splits = digits_split(h.val_fraction, h.test_fraction, h.seed, h.normalize)

    def _loader(self, split: str, shuffle: bool):
        from torch.utils.data import DataLoader, TensorDataset

        self.setup()
        if split not in self.splits:
            raise ValueError(f"split {split!r} is empty; set a positive {split}_fraction")
        g = torch.Generator().manual_seed(self.hparams.seed)
        return DataLoader(TensorDataset(*self.splits[split]), batch_size=self.hparams.batch_size,
                          shuffle=shuffle, generator=g)

    def train_dataloader(self):
        return self._loader("train", True)

    def val_dataloader(self):
        return self._loader("val", False)

    def test_dataloader(self):
        return self._loader("test", False)


# --- toy 2-D distributions -------------------------------------------------------------------

def _moons(n: int, rng: np.random.Generator) -> np.ndarray:
    from sklearn.datasets import make_moons

    X, _ = make_moons(n, noise=0.05, random_state=int(rng.integers(2**31)))
    return (X - np.array([0.5, 0.25])) * 1.5


def _circles(n: int, rng: np.random.Generator) -> np.ndarray:
    from sklearn.datasets import make_circles

    X, _ = make_circles(n, noise=0.04, factor=0.5, random_state=int(rng.integers(2**31)))
    return X * 2.0


def _eight_gaussians(n: int, rng: np.random.Generator) -> np.ndarray:
    angles = 2 * math.pi * rng.integers(0, 8, n) / 8
    centres = 2.0 * np.stack([np.cos(angles), np.sin(angles)], 1)
    return centres + 0.15 * rng.standard_normal((n, 2))


def _squares(n: int, rng: np.random.Generator) -> np.ndarray:
    """Four uniform unit squares centred at (±1, ±1)."""
    corner = rng.integers(0, 4, n)
    centres = np.stack([np.where(corner % 2 == 0, -1.0, 1.0), np.where(corner < 2, -1.0, 1.0)], 1)
    return centres + rng.uniform(-0.5, 0.5, (n, 2))


def _swiss_roll(n: int, rng: np.random.Generator) -> np.ndarray:
    from sklearn.datasets import make_swiss_roll

    X, _ = make_swiss_roll(n, noise=0.3, random_state=int(rng.integers(2**31)))
    return X[:, [0, 2]] / 5.0


def _gaussian(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((n, 2))


TOY_2D: dict[str, Callable[[int, np.random.Generator], np.ndarray]] = {
    "moons": _moons,
    "circles": _circles,
    "8gaussians": _eight_gaussians,
    "squares": _squares,
    "swissroll": _swiss_roll,
    "gaussian": _gaussian,
}


def toy_2d(name: str, n: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``n`` samples ``(n, 2)`` from a named toy distribution (see ``TOY_2D``), roughly in [-3, 3]²."""
    if name not in TOY_2D:
        raise ValueError(f"name must be one of {sorted(TOY_2D)}, got {name!r}")
    n = check_int(n, "n")
    rng = np.random.default_rng(seed)
    return torch.as_tensor(TOY_2D[name](n, rng), dtype=dtype)


def sample_gaussian(mean, cov, n: int, seed: int = 0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``n`` samples of N(mean, cov) as a ``(n, d)`` tensor (Cholesky of ``cov``, which must be SPD)."""
    n = check_int(n, "n")
    mean = torch.as_tensor(mean, dtype=dtype)
    cov = torch.as_tensor(cov, dtype=dtype)
    if mean.ndim != 1:
        raise ValueError(f"mean must be a vector (d,), got shape {tuple(mean.shape)}")
    d = mean.shape[0]
    if cov.shape != (d, d):
        raise ValueError(f"cov must have shape ({d}, {d}) to match mean, got {tuple(cov.shape)}")
    if not torch.allclose(cov, cov.T, atol=1e-10):
        raise ValueError("cov must be symmetric")
    L, info = torch.linalg.cholesky_ex(cov)
    if int(info) != 0:
        raise ValueError("cov must be positive definite (Cholesky failed)")
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, d, generator=g, dtype=dtype)
    return mean + z @ L.T


def random_spd(d: int, seed: int = 0, eig_range: tuple[float, float] = (0.5, 2.0),
               dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """A random ``d x d`` SPD matrix with eigenvalues spread uniformly in ``eig_range``."""
    d = check_int(d, "d")
    lo, hi = eig_range
    if not 0 < lo <= hi:
        raise ValueError(f"eig_range must satisfy 0 < lo <= hi, got {eig_range}")
    g = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=dtype))
    lam = torch.linspace(lo, hi, d, dtype=dtype)
    S = Q @ torch.diag(lam) @ Q.T
    return (S + S.T) / 2
