"""When models don't collapse: iterative MLE on accumulating synthetic data (Barzilai & Shamir, 2025).

Algorithm 1 of the paper: ``θ(0) = θ*``; for ``T = 0, 1, …`` draw ``X(T) ~ p_θ(T)`` (``n`` points;
``X(0)`` is the only real data) and set ``θ(T+1) = MLE(X(0) ∪ … ∪ X(T))``. We compare it with the
"replace" scheme (fit only on the last synthetic batch) and with "fresh" mixing (each generation
fits ``n`` fresh real points plus ``n`` synthetic ones).

Contents
- ``iterate_mle``: the generic loop over any family with ``fit(x)`` / ``sample(θ, n, generator)``.
- ``GaussianFamily``: (multivariate) Gaussian with closed-form MLE, batched over replications.
- ``gaussian_replications``: the same loop for Gaussians with running sufficient statistics, so
  thousands of replications × hundreds of generations take well under a second.
- ``NonSmoothFamily``: a non-smooth, ``n``-dependent family in the spirit of Theorem 5.1, where
  generation 1 is excellent and generation 2 is far off with a constant probability;
  ``nonsmooth_generations`` runs it for ``T`` generations (Theorem 5.2's collapse within a few).
- ``CouplingFlow`` / ``FlowFamily``: a small RealNVP normalising flow trained by MLE with Lightning.
- ``closed_form_mle`` / ``closed_form_iterations``: the paper's Appendix G experiment, Algorithm 1
  with the exact MLE of a Gaussian (μ, σ), an Exponential (rate) and the Beta family θx^{θ−1},
  vectorised over runs.

The loops are plain functions: they are algorithms over a family, not trainable models; only the
neural family learns by gradient descent and so is a ``LightningModule``.
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Protocol

import numpy as np
import torch

from .nn import MLP
from .runtime import cap, check_int, lightning_module, make_trainer

__all__ = [
    "SCHEMES", "Family", "IterationResult", "iterate_mle", "GaussianParams", "GaussianFamily",
    "gaussian_replications", "gaussian_sq_error", "gaussian_kl", "NonSmoothFamily",
    "nonsmooth_replications", "nonsmooth_generations", "CouplingFlow", "FlowFamily",
    "CLOSED_FORM_FAMILIES", "closed_form_mle", "closed_form_iterations", "mean_error", "neg_log_lik",
    "OptimizedIterations", "optimized_iterations",
]

SCHEMES = ("accumulate", "replace", "fresh")


def _check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    return scheme


# --- the generic loop (Algorithm 1 and the two comparison schemes) ------------------------------

class Family(Protocol):
    """A parametric family: ``fit`` returns the MLE θ of data ``x``; ``sample`` draws from p_θ."""

    def fit(self, x: Any) -> Any: ...

    def sample(self, theta: Any, n: int, generator: Any) -> Any: ...


class IterationResult(NamedTuple):
    thetas: list   # θ(1), …, θ(T)
    sizes: list    # training-set size of each θ(t)


def iterate_mle(family: Family, real: Callable[[int, Any], Any], n: int, T: int,
                scheme: str = "accumulate", generator: Any = None,
                cat: Callable[[list], Any] | None = None) -> IterationResult:
    """Run ``T`` generations of iterative MLE (Algorithm 1 for ``scheme="accumulate"``).

    ``real(n, generator)`` draws ``n`` real points; ``X(0) = real(n)`` is fitted to give θ(1).
    Generation ``t ≥ 1`` samples ``X(t) ~ p_θ(t)`` and fits θ(t+1) on
      - accumulate: ``X(0) ∪ … ∪ X(t)`` (size ``(t+1)·n``),
      - replace:    ``X(t)`` only (size ``n``; Shumailov et al.'s fully synthetic loop),
      - fresh:      ``n`` new real points ``∪ X(t)`` (size ``2n``).
    ``cat`` joins data batches (default: ``torch.cat`` along the sample axis ``-2``).
    """
    _check_scheme(scheme)
    n = check_int(n, "n", 2)
    T = check_int(T, "T", 1)
    cat = cat or (lambda xs: torch.cat(xs, dim=-2))
    data = real(n, generator)
    thetas, sizes = [family.fit(data)], [n]
    for _ in range(1, T):
        synthetic = family.sample(thetas[-1], n, generator)
        if scheme == "accumulate":
            data = cat([data, synthetic])
        elif scheme == "replace":
            data = synthetic
        else:
            data = cat([real(n, generator), synthetic])
        thetas.append(family.fit(data))
        sizes.append(int(data.shape[-2]) if hasattr(data, "shape") else len(data))
    return IterationResult(thetas, sizes)


# --- Gaussian families -------------------------------------------------------------------------

class GaussianParams(NamedTuple):
    mean: torch.Tensor  # (..., d)
    cov: torch.Tensor   # (..., d, d)


def _sqrtm_psd(cov: torch.Tensor) -> torch.Tensor:
    """Symmetric square root; eigenvalues clipped at 0 so a collapsed (singular) Σ still samples."""
    if cov.shape[-1] == 1:  # scalar case: avoid thousands of tiny LAPACK calls
        return cov.clamp_min(0).sqrt()
    lam, Q = torch.linalg.eigh(cov)
    return (Q * lam.clamp_min(0).sqrt().unsqueeze(-2)) @ Q.transpose(-1, -2)


class GaussianFamily:
    """N(μ, Σ) in ``R^d`` with the closed-form MLE ``μ̂ = mean``, ``Σ̂ = (1/m) Σ (x−μ̂)(x−μ̂)ᵀ``.

    Note the MLE divides by ``m``, not ``m − 1``: the paper's loop uses the MLE. All methods are
    batched over leading dimensions (one per independent replication).
    """

    def fit(self, x: torch.Tensor) -> GaussianParams:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        if x.ndim < 2 or x.shape[-2] < 2:
            raise ValueError(f"x must have shape (..., m, d) with m >= 2, got {tuple(x.shape)}")
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x must be finite (a NaN would give a NaN MLE)")
        mean = x.mean(-2)
        xc = x - mean.unsqueeze(-2)
        return GaussianParams(mean, xc.transpose(-1, -2) @ xc / x.shape[-2])

    def sample(self, theta: GaussianParams, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        n = check_int(n, "n", 1)
        mean, cov = theta
        # drawn on the generator's device (a CPU generator gives the same stream on any device)
        z = torch.randn((*mean.shape[:-1], n, mean.shape[-1]), generator=generator, dtype=mean.dtype,
                        device=generator.device if generator is not None else mean.device).to(mean.device)
        return mean.unsqueeze(-2) + z @ _sqrtm_psd(cov).transpose(-1, -2)

    def log_prob(self, theta: GaussianParams, x: torch.Tensor) -> torch.Tensor:
        return torch.distributions.MultivariateNormal(theta.mean, theta.cov).log_prob(x)


def gaussian_replications(mean_star, cov_star, n: int, T: int, R: int, scheme: str = "accumulate",
                          seed: int = 0, pool: torch.Tensor | None = None) -> GaussianParams:
    """``R`` independent runs of ``iterate_mle`` with ``GaussianFamily``, vectorised.

    Instead of storing the data, each run keeps the additive sufficient statistics
    ``(m, Σx, Σxxᵀ)`` of its training set, so accumulating costs O(1) per generation.
    Real data is N(mean_star, cov_star), or rows resampled from ``pool`` (an ``(N, d)`` tensor,
    e.g. a standardised dataset) when given. Returns θ(1..T) as ``mean (T, R, d)``, ``cov (T, R, d, d)``.
    The random stream is the same as ``iterate_mle``'s, so both give the same θ's (up to rounding).
    """
    _check_scheme(scheme)
    n, T, R = check_int(n, "n", 2), check_int(T, "T", 1), check_int(R, "R", 1)
    R = cap(R)  # NEURIPS25_SMOKE=1: two replications, every generation (shapes stay (T, ...))
    mean_star = torch.as_tensor(mean_star, dtype=torch.float64).reshape(-1)
    d = mean_star.shape[0]
    cov_star = torch.as_tensor(cov_star, dtype=torch.float64).reshape(d, d)
    if not bool(torch.isfinite(mean_star).all()):
        raise ValueError("mean_star must be finite")
    if not bool(torch.isfinite(cov_star).all()):
        raise ValueError("cov_star must be finite")
    if not torch.allclose(cov_star, cov_star.T):
        raise ValueError("cov_star must be a symmetric (d, d) matrix")
    lam_min = torch.linalg.eigvalsh(cov_star).min().item()
    if lam_min < -1e-12 * max(1.0, cov_star.abs().max().item()):
        raise ValueError(f"cov_star must be positive semi-definite, got smallest eigenvalue {lam_min:.3g}")
    if pool is not None and (pool.ndim != 2 or pool.shape[1] != d):
        raise ValueError(f"pool must have shape (N, {d}), got {tuple(pool.shape)}")
    gen = torch.Generator().manual_seed(seed)
    fam = GaussianFamily()
    star = GaussianParams(mean_star.expand(R, d), cov_star.expand(R, d, d))

    def real(k: int) -> torch.Tensor:
        if pool is None:
            return fam.sample(star, k, gen)
        return pool.to(torch.float64)[torch.randint(len(pool), (R, k), generator=gen)]

    def stats(x: torch.Tensor) -> tuple:
        return x.shape[-2], x.sum(-2), x.transpose(-1, -2) @ x

    def theta(m, s1, s2) -> GaussianParams:
        mu = s1 / m
        return GaussianParams(mu, s2 / m - mu.unsqueeze(-1) * mu.unsqueeze(-2))

    S = stats(real(n))
    means, covs = torch.empty(T, R, d, dtype=torch.float64), torch.empty(T, R, d, d, dtype=torch.float64)
    for t in range(T):
        th = theta(*S)
        # re-symmetrise: the running-sums formula can leave an O(eps) asymmetry.
        means[t], covs[t] = th.mean, 0.5 * (th.cov + th.cov.transpose(-1, -2))
        if t == T - 1:
            break
        new = stats(fam.sample(GaussianParams(means[t], covs[t]), n, gen))
        if scheme == "accumulate":
            S = tuple(a + b for a, b in zip(S, new))
        elif scheme == "replace":
            S = new
        else:
            S = tuple(b + a for a, b in zip(stats(real(n)), new))
    return GaussianParams(means, covs)


def gaussian_sq_error(theta: GaussianParams, mean_star, cov_star) -> torch.Tensor:
    """``‖μ − μ*‖² + ‖Σ − Σ*‖_F²``: the squared parameter error ``‖θ − θ*‖²`` of Theorem 4.1."""
    mean_star = torch.as_tensor(mean_star, dtype=theta.mean.dtype)
    cov_star = torch.as_tensor(cov_star, dtype=theta.cov.dtype)
    return ((theta.mean - mean_star) ** 2).sum(-1) + ((theta.cov - cov_star) ** 2).sum((-1, -2))


def gaussian_kl(theta: GaussianParams, mean_star, cov_star) -> torch.Tensor:
    """``KL(N(μ*, Σ*) ‖ N(μ, Σ))``: the excess test NLL of the model on real data (inf if Σ is singular)."""
    mean_star = torch.as_tensor(mean_star, dtype=theta.mean.dtype)
    cov_star = torch.as_tensor(cov_star, dtype=theta.cov.dtype)
    d = mean_star.shape[-1]
    if not bool(torch.isfinite(mean_star).all()):
        raise ValueError("mean_star must be finite")
    # the KL from N(μ*, Σ*) needs log det Σ*: Σ* must be positive definite (−I gave KL = −2)
    if cov_star.shape[-2:] != (d, d) or not bool(torch.isfinite(cov_star).all()) \
            or not torch.allclose(cov_star, cov_star.transpose(-1, -2)) \
            or bool(torch.linalg.cholesky_ex(cov_star).info.any()):
        raise ValueError(f"cov_star must be a symmetric positive definite ({d}, {d}) matrix")
    L, info = torch.linalg.cholesky_ex(theta.cov)
    diff = (theta.mean - mean_star).unsqueeze(-1)
    sol = torch.cholesky_solve(torch.cat([cov_star.expand(*theta.cov.shape), diff], -1), L)
    trace = sol[..., :d].diagonal(dim1=-2, dim2=-1).sum(-1)
    maha = (diff * sol[..., d:]).sum((-1, -2))
    logdet = 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1) - torch.logdet(cov_star)
    kl = 0.5 * (trace + maha - d + logdet)
    return torch.where(info == 0, kl, torch.full_like(kl, math.inf))


# --- a family where consistency is not enough (in the spirit of Theorem 5.1) -------------------

class NonSmoothFamily:
    """Our own Theorem-5.1-style family on ``[0, 2]`` (truth ``U[0, 1]``), depending on ``n``:

    - ``h_α = (1−α)·U[0, 1−2α] + α·U[1, 2]``, ``α ∈ [0, 1/2)`` — a "good" branch, ``TV(h_α, U) = 2α``
      (``α`` too much on ``[0, 1−2α]``, none on ``(1−2α, 1]``, ``α`` on ``[1, 2]``: half of ``4α``);
    - ``g_{β,μ} = (1−β)·U[0, 1] + β·U[μ, μ + e^{−Kβ}]``, ``β ∈ [0, 1)``, ``μ ≥ 1`` — a spike outside
      the truth's support whose height ``β e^{Kβ}`` explodes; ``TV(g, U) = β``.

    On real data (all in ``[0, 1]``) the MLE is ``h`` with ``α̂ = (1 − max x)/2 ≈ 1/(2n)``, so
    ``TV = 1 − max x ≈ Exp(1)/n``. Its samples put exactly one point in ``[1, 2]`` with probability
    → 2/9 (independent of n); then the spike ``g`` with ``β̂ ≈ 3/4`` wins the likelihood on the union
    (``K = 8n``): collapse at generation 2.
    ``theta`` is an array ``(..., 3)``: ``[branch (0 = h, 1 = g), α or β, μ]``.
    """

    def __init__(self, n: int, K: float | None = None):
        self.n = check_int(n, "n", 2)
        self.K = 8.0 * self.n if K is None else float(K)
        if not self.K > 0:
            raise ValueError(f"K must be positive, got {K!r}")

    def log_lik(self, theta: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Total log-likelihood of each row of ``x (..., m)`` under ``theta (..., 3)`` (−inf off-support)."""
        theta, x = np.asarray(theta, float), np.asarray(x, float)
        branch, a, mu = theta[..., 0:1], theta[..., 1:2], theta[..., 2:3]
        with np.errstate(divide="ignore", invalid="ignore"):
            h = np.where((x >= 0) & (x <= 1 - 2 * a), (1 - a) / (1 - 2 * a),
                         np.where((x >= 1) & (x <= 2), a, 0.0))
            w = np.exp(-self.K * a)
            g = np.where((x >= 0) & (x <= 1), 1 - a, 0.0) + np.where((x >= mu) & (x <= mu + w), a / w, 0.0)
            return np.log(np.where(branch == 0, h, g)).sum(-1)

    def fit(self, x) -> np.ndarray:
        """Exact MLE over both branches, row-wise for ``x (..., m)`` (ties go to ``h``)."""
        x = np.asarray(x, dtype=float)
        if x.ndim < 1 or x.shape[-1] < 1:
            raise ValueError(f"x must have shape (..., m) with m >= 1, got {x.shape}")
        if not np.all((x >= 0) & (x <= 2)):  # written so that NaN fails too
            raise ValueError("x must lie in [0, 2], no NaN (every density of the family vanishes outside)")
        inner, outer = x < 1, x >= 1
        n0, k = inner.sum(-1), outer.sum(-1)
        if np.any(n0 == 0):
            raise ValueError("x must have at least one point in [0, 1) in every row")
        # h: the likelihood increases in α up to the constraint max(inner) <= 1 − 2α.
        alpha = (1 - np.where(inner, x, 0).max(-1)) / 2
        with np.errstate(divide="ignore"):
            ll_h = n0 * np.log((1 - alpha) / (1 - 2 * alpha)) + k * np.log(alpha)
        # g: the spike must cover all outer points, so e^{−Kβ} >= their spread s; the concave
        # objective n0·log(1−β) + k·(log β + Kβ) has its stationary point at the root of
        # kKβ² − (kK − n0 − k)β − k = 0, clipped to β <= −log(s)/K.
        lo = np.where(outer, x, np.inf).min(-1)
        hi = np.where(outer, x, -np.inf).max(-1)
        kK = np.maximum(k, 1) * self.K
        b = kK - n0 - k
        beta = (b + np.sqrt(b * b + 4 * kK * k)) / (2 * kK)
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = np.where(k > 1, hi - lo, 0.0)
            beta = np.minimum(beta, np.where(spread > 0, -np.log(spread) / self.K, np.inf))
            beta = np.clip(beta, 0.0, 1 - 1e-12)
            width = np.exp(-self.K * beta)
            ll_g = np.where(k > 0, n0 * np.log1p(-beta) + k * (np.log(beta) + self.K * beta), -np.inf)
            ll_g = np.where((k > 0) & (lo + width * (1 + 1e-9) < hi), -np.inf, ll_g)  # cannot cover them
        mu = np.where(k > 0, np.minimum(lo, 2 - width), 1.0)
        use_g = ll_g > ll_h
        return np.stack([use_g.astype(float), np.where(use_g, beta, alpha), np.where(use_g, mu, 1.0)], -1)

    def sample(self, theta, n: int, generator: np.random.Generator) -> np.ndarray:
        """``n`` points from each θ in ``theta (..., 3)`` → ``(..., n)``."""
        n = check_int(n, "n", 1)
        theta = np.asarray(theta, float)
        branch, a, mu = (theta[..., i, None] for i in range(3))
        u, v = generator.random((2, *theta.shape[:-1], n))
        in_tail = u < a  # component chosen with probability α (resp. β)
        body = np.where(branch == 0, v * (1 - 2 * a), v)
        tail = np.where(branch == 0, 1 + v, mu + v * np.exp(-self.K * a))
        return np.where(in_tail, tail, body)

    @staticmethod
    def tv_to_truth(theta) -> np.ndarray:
        """``TV(p_θ, U[0, 1])``: 2α for ``h_α`` and β for ``g_{β,μ}`` (μ >= 1)."""
        theta = np.asarray(theta, float)
        return np.where(theta[..., 0] == 0, 2 * theta[..., 1], theta[..., 1])


def nonsmooth_replications(n: int, R: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``R`` runs of two generations of Algorithm 1 on ``NonSmoothFamily(n)`` with truth U[0, 1].

    Returns ``(TV1, TV2)``, each ``(R,)``: the distance of θ(1) (fit on X(0)) and θ(2) (fit on
    X(0) ∪ X(1)) to the truth.
    """
    n, R = check_int(n, "n", 2), cap(check_int(R, "R", 1))
    fam, rng = NonSmoothFamily(n), np.random.default_rng(seed)
    x0 = rng.random((R, n))
    th1 = fam.fit(x0)
    th2 = fam.fit(np.concatenate([x0, fam.sample(th1, n, rng)], -1))
    return fam.tv_to_truth(th1), fam.tv_to_truth(th2)


def nonsmooth_generations(n: int, T: int, R: int, seed: int = 0, K: float | None = None) -> np.ndarray:
    """``R`` runs of ``T`` generations of Algorithm 1 on ``NonSmoothFamily(n, K)`` (truth U[0, 1]).

    In the spirit of Theorem 5.2 (collapse within a few generations): the spike must outweigh all
    ``t·n`` accumulated points at generation ``t``, so the default ``K = 8·n·T`` grows with the
    horizon. Returns ``TV (T, R)``: the distance of θ(1), …, θ(T) to the truth.
    """
    n, T, R = check_int(n, "n", 2), check_int(T, "T", 1), cap(check_int(R, "R", 1))
    fam, rng = NonSmoothFamily(n, 8.0 * n * T if K is None else K), np.random.default_rng(seed)
    x = rng.random((R, n))
    theta = fam.fit(x)
    tv = [fam.tv_to_truth(theta)]
    for _ in range(1, T):
        x = np.concatenate([x, fam.sample(theta, n, rng)], -1)
        theta = fam.fit(x)
        tv.append(fam.tv_to_truth(theta))
    return np.stack(tv)


# --- a neural density family: a small RealNVP trained by MLE with Lightning --------------------



class CouplingFlow(lightning_module()):
    """RealNVP (Dinh et al., 2017): ``n_layers`` affine couplings with alternating masks.

    ``log p(x) = log N(f(x); 0, I) + log|det ∂f/∂x|``; training minimises the mean negative
    log-likelihood, i.e. it is (approximate, non-convex) maximum likelihood estimation.
    """

    def __init__(self, dim: int = 2, n_layers: int = 4, hidden: int = 32, lr: float = 5e-3):
        super().__init__()
        self.save_hyperparameters()
        if dim < 2:
            raise ValueError(f"dim must be >= 2 for a coupling flow, got {dim}")
        masks = [(torch.arange(dim) % 2 == (i % 2)).float() for i in range(n_layers)]
        self.register_buffer("masks", torch.stack(masks))
        self.nets = torch.nn.ModuleList(MLP(dim, [hidden, hidden], 2 * dim) for _ in range(n_layers))

    def _st(self, i: int, x_kept: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s, t = self.nets[i](x_kept).chunk(2, -1)
        free = 1 - self.masks[i]
        return torch.tanh(s) * free, t * free  # tanh keeps the scales bounded: stable training

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``z = f(x)`` and ``log|det ∂f/∂x|`` (each coupling scales the free coordinates by e^s)."""
        logdet = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
        for i in range(len(self.nets)):
            s, t = self._st(i, x * self.masks[i])
            x = x * torch.exp(s) + t
            logdet = logdet + s.sum(-1)
        return x, logdet

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        """``x = f⁻¹(z)``: undo the couplings in reverse order (the kept half is unchanged)."""
        for i in reversed(range(len(self.nets))):
            s, t = self._st(i, z * self.masks[i])
            z = (z - t) * torch.exp(-s)
        return z

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        z, logdet = self(x)
        return -0.5 * (z ** 2).sum(-1) - 0.5 * z.shape[-1] * math.log(2 * math.pi) + logdet

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        z = torch.randn(n, self.hparams.dim, generator=generator).to(self.masks.device)
        return self.inverse(z)

    def training_step(self, batch, batch_idx):
        return -self.log_prob(batch[0]).mean()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class FlowFamily:
    """The ``Family`` interface around ``CouplingFlow``: ``fit`` trains a fresh flow by MLE.

    Each fit is a new model (like each generation of an LLM), seeded by a counter so a run is
    deterministic. ``steps`` minibatches of ``batch_size`` points, drawn with replacement.
    """

    def __init__(self, steps: int = 400, batch_size: int = 256, seed: int = 0, **flow_kw):
        self.steps = check_int(steps, "steps", 1)
        self.batch_size = check_int(batch_size, "batch_size", 1)
        self.seed, self.flow_kw, self._fits = seed, flow_kw, 0

    def fit(self, x: torch.Tensor) -> CouplingFlow:
        if not isinstance(x, torch.Tensor) or x.ndim != 2 or len(x) < 2:
            raise ValueError(f"x must be a tensor of shape (m, d) with m >= 2, got {getattr(x, 'shape', x)}")
        from torch.utils.data import DataLoader, RandomSampler, TensorDataset

        torch.manual_seed(self.seed + 1000 * self._fits)
        self._fits += 1
        flow = CouplingFlow(dim=x.shape[1], **self.flow_kw)
        x = x.float()
        sampler = RandomSampler(range(len(x)), replacement=True, num_samples=cap(self.steps) * self.batch_size)
        loader = DataLoader(TensorDataset(x), batch_size=self.batch_size, sampler=sampler)
        make_trainer(1).fit(flow, loader)
        return flow.cpu().eval()  # later sampling and evaluation happen on the CPU

    def sample(self, theta: CouplingFlow, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        return theta.sample(check_int(n, "n", 1), generator)


# --- Appendix G: the paper's own experiment, families with a closed-form MLE ---------------------

CLOSED_FORM_FAMILIES = ("gaussian", "exponential", "beta")


def _check_family(family: str) -> str:
    if family not in CLOSED_FORM_FAMILIES:
        raise ValueError(f"family must be one of {CLOSED_FORM_FAMILIES}, got {family!r}")
    return family


def _dim(family: str) -> int:
    """Parameters of a closed-form family: (μ, σ) for the Gaussian, one otherwise."""
    return 2 if family == "gaussian" else 1


def _check_theta0(family: str, theta0) -> np.ndarray:
    d = _dim(family)
    what = "(mu, sigma) with sigma > 0" if d == 2 else "one positive parameter"
    try:
        theta0 = np.asarray(theta0, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"theta0 must be {what} for family {family!r}, got {theta0!r}") from None
    if theta0.shape != (d,) or not np.isfinite(theta0).all() or theta0[-1] <= 0:
        raise ValueError(f"theta0 must be {what} for family {family!r}, got {theta0.tolist()}")
    return theta0


def _sufficient_stats(family: str, x: np.ndarray) -> np.ndarray:
    """Sums over the sample axis that determine the MLE: (Σx, Σx²), Σx or Σ log x → ``(..., k)``."""
    if family == "gaussian":
        return np.stack([x.sum(-1), (x * x).sum(-1)], -1)
    return (x if family == "exponential" else np.log(x)).sum(-1)[..., None]


def _mle_from_stats(family: str, m: int, s: np.ndarray) -> np.ndarray:
    """The closed-form MLE from ``m`` samples' sufficient statistics ``s`` → θ ``(..., d)``."""
    if family == "gaussian":  # μ̂ = mean, σ̂ = sqrt(mean of squares − μ̂²) (divide by m: the MLE)
        mu = s[..., 0] / m
        return np.stack([mu, np.sqrt(np.maximum(s[..., 1] / m - mu**2, 0.0))], -1)
    if family == "exponential":  # p(x; λ) = λ e^{−λx}: λ̂ = m / Σx
        return m / s
    return -m / s  # beta, p(x; θ) = θ x^{θ−1} on (0, 1): θ̂ = −m / Σ log x


def closed_form_mle(family: str, x) -> np.ndarray:
    """The exact MLE of one of Appendix G's families on the samples ``x (..., N)`` (last axis).

    - ``"gaussian"``: θ = (μ, σ), the mean and the standard deviation (divided by ``N``);
    - ``"exponential"``: θ = λ, the rate of p(x; λ) = λ e^{−λx}, λ̂ = N / Σx;
    - ``"beta"``: θ of p(x; θ) = θ x^{θ−1} on (0, 1] (Beta(θ, 1)), θ̂ = −N / Σ log x.

    Returns ``(..., d)`` with ``d = 2`` for the Gaussian and 1 otherwise.
    """
    _check_family(family)
    x = np.asarray(x, dtype=float)
    low = 2 if family == "gaussian" else 1
    if x.ndim == 0 or x.shape[-1] < low:
        raise ValueError(f"x must have at least {low} sample(s) on its last axis for family "
                         f"{family!r}, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("x must be finite")
    if family == "exponential" and not (x > 0).all():
        raise ValueError("x must be positive for family 'exponential'")
    if family == "beta" and not ((x > 0) & (x <= 1)).all():
        raise ValueError("x must lie in (0, 1] for family 'beta'")
    s = _sufficient_stats(family, x)
    if family == "beta" and not (s < 0).all():
        raise ValueError("x must not be all ones for family 'beta' (the MLE would be infinite)")
    return _mle_from_stats(family, x.shape[-1], s)


def _sample_closed_form(family: str, theta: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points from each θ in ``theta (..., d)`` → ``(..., n)``."""
    shape = (*theta.shape[:-1], n)
    if family == "gaussian":
        return theta[..., :1] + theta[..., 1:] * rng.standard_normal(shape)
    if family == "exponential":
        return rng.standard_exponential(shape) / theta
    return (1.0 - rng.random(shape)) ** (1.0 / theta)  # inverse CDF of F(x) = x^θ, U in (0, 1]


def _iterate_closed_form(family: str, theta0, n: int, T: int, R: int, seed: int,
                         fit: Callable[[int, np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """Algorithm 1 on sufficient statistics: ``fit(m, stats, θ(t))`` → θ(t+1) ``(R, d)``."""
    _check_family(family)
    theta0 = _check_theta0(family, theta0)
    n, T, R = check_int(n, "n", 2), check_int(T, "T", 1), check_int(R, "R", 1)
    R = cap(R)  # NEURIPS25_SMOKE=1: two runs, every generation
    rng = np.random.default_rng(seed)
    theta = np.broadcast_to(theta0, (R, theta0.size))
    stats = 0.0
    out = np.empty((T, R, theta0.size))
    for t in range(T):
        stats = stats + _sufficient_stats(family, _sample_closed_form(family, theta, n, rng))
        theta = out[t] = fit((t + 1) * n, stats, theta)
    return out


def closed_form_iterations(family: str, theta0, n: int, T: int, R: int, seed: int = 0) -> np.ndarray:
    """``R`` independent runs of Algorithm 1 with the exact MLE of ``family`` (Appendix G).

    θ(0) = ``theta0``; generation ``t`` draws ``n`` points from p_θ(t) and θ(t+1) is the closed-form
    MLE (``closed_form_mle``) on all samples of generations 0..t. Only the sufficient statistics of
    the growing training set are kept, so a generation costs O(n R). Returns θ(1..T) as ``(T, R, d)``.
    """
    return _iterate_closed_form(family, theta0, n, T, R, seed,
                                lambda m, s, prev: _mle_from_stats(family, m, s))


def mean_error(theta, theta0) -> np.ndarray:
    """Appendix G's error curve: the mean over the runs of ‖θ(t) − θ0‖, θ ``(T, R, d)`` → ``(T,)``."""
    theta, theta0 = np.asarray(theta, dtype=float), np.asarray(theta0, dtype=float).reshape(-1)
    if theta.ndim != 3 or theta.shape[-1] != theta0.size:
        raise ValueError(f"theta must be (T, R, {theta0.size}) for a theta0 of {theta0.size} number(s), "
                         f"got shape {theta.shape}")
    return np.linalg.norm(theta - theta0, axis=-1).mean(1)


def neg_log_lik(family: str, theta, m: int, s, grad: bool = False):
    """−log-likelihood of ``m`` samples with sufficient statistics ``s`` (``_sufficient_stats``).

    The same function of θ as the sum over the samples: N(μ, σ²): m log σ + Σ(x − μ)²/(2σ²) + m/2
    log 2π; rate λ: −m log λ + λΣx; Beta θx^{θ−1}: −m log θ − (θ − 1)Σ log x. Outside the parameter
    space (σ, λ, θ ≤ 0) it is ``nan``, which is what an unconstrained optimiser meets there.
    ``grad=True`` also returns the gradient in θ (``(value, array of d)``, scipy's ``jac=True``).
    """
    _check_family(family)
    m = check_int(m, "m")
    d = _dim(family)
    theta, s = np.asarray(theta, dtype=float).reshape(-1), np.asarray(s, dtype=float).reshape(-1)
    if theta.shape != (d,) or s.shape != (d,):
        raise ValueError(f"theta and s must each hold {d} number(s) for family {family!r}, got "
                         f"{theta.tolist()} and {s.tolist()}")
    with np.errstate(invalid="ignore", divide="ignore"):
        if family == "gaussian":
            (mu, sigma), q = theta, s[1] - 2 * theta[0] * s[0] + m * theta[0] ** 2  # Σ(x − μ)²
            f = m * np.log(sigma) + q / (2 * sigma**2) + 0.5 * m * math.log(2 * math.pi)
            g = [(m * mu - s[0]) / sigma**2, m / sigma - q / sigma**3]
        elif family == "exponential":
            f, g = -m * np.log(theta[0]) + theta[0] * s[0], [-m / theta[0] + s[0]]
        else:
            f, g = -m * np.log(theta[0]) - (theta[0] - 1) * s[0], [-m / theta[0] - s[0]]
    return (float(f), np.array(g, dtype=float)) if grad else float(f)


class OptimizedIterations(NamedTuple):
    theta: np.ndarray  # (T, R, d): θ(1..T) found by scipy.optimize.minimize
    exact: np.ndarray  # (T, R, d): the closed-form MLE on the same accumulated samples
    failed: np.ndarray  # (T, R): the optimiser reported no success


def optimized_iterations(family: str, theta0, n: int, T: int, R: int, seed: int = 0,
                         bounded: bool = True, gradient: bool = True) -> OptimizedIterations:
    """Appendix G's second arm: Algorithm 1 with the MLE found by ``scipy.optimize.minimize``.

    Each generation minimises ``neg_log_lik`` on all accumulated samples, started from the previous
    estimate θ(t). ``bounded=True`` keeps σ, λ, θ ≥ 1e-12 (scipy then uses L-BFGS-B); ``False``
    runs scipy's default unconstrained BFGS, which can step to θ ≤ 0, where the objective is
    ``nan``; such a run is frozen where it left (no further optimiser calls on an undefined
    objective). ``gradient=True`` passes the analytic gradient (three times faster); without it scipy
    takes finite differences, as the paper presumably did: both reach the same optimum. The paper
    does not give its start, bounds or method. The samples follow the same random stream as
    ``closed_form_iterations`` with the same seed for as long as the two arms agree.
    """
    from scipy.optimize import minimize

    for name, flag in (("bounded", bounded), ("gradient", gradient)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {flag!r}")
    bounds = None
    if bounded:
        bounds = [(None, None)] * (_dim(family) - 1) + [(1e-12, None)]  # the last one is σ, λ or θ
    exact, failed = [], []

    def fit(m: int, s: np.ndarray, prev: np.ndarray) -> np.ndarray:
        exact.append(_mle_from_stats(family, m, s))
        new, bad = np.empty_like(prev), np.zeros(len(prev), dtype=bool)
        for r in range(len(prev)):
            if not np.isfinite(neg_log_lik(family, prev[r], m, s[r])):  # left the space earlier:
                new[r], bad[r] = prev[r], True  # the likelihood stays undefined, the run stays out
                continue
            res = minimize(lambda th, r=r: neg_log_lik(family, th, m, s[r], gradient), prev[r],
                           jac=gradient, bounds=bounds)
            new[r], bad[r] = res.x, not res.success
        failed.append(bad)
        return new

    with np.errstate(all="ignore"):  # unbounded runs that left the parameter space sample garbage
        theta = _iterate_closed_form(family, theta0, n, T, R, seed, fit)
    return OptimizedIterations(theta, np.stack(exact), np.stack(failed))
