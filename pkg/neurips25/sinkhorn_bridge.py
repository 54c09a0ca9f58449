"""Sinkhorn bridges from two samples (Maeda, Yao & Nitanda, NeurIPS 2025).

Schrödinger bridge (SB) between μ and ν with reference dX = √ε dB, estimated from samples
X_1..X_m ~ μ and Y_1..Y_n ~ ν by plugging the k-th log-domain Sinkhorn potential g^(k) into the
SB drift (the *Sinkhorn bridge* of Pooladian & Niles-Weed, 2024):

    b^(k)(z, t) = ( Σ_j γ_j Y_j / Σ_j γ_j − z ) / (1 − t),
    γ_j = exp( [ g^(k)(Y_j) − ‖Y_j − z‖² / (2(1 − t)) ] / ε ).

Contents: log-domain Sinkhorn (batched torch; checked against POT), the plug-in drift, an
Euler–Maruyama sampler, the closed-form Gaussian→Gaussian SB (exact ground truth), the integrated
drift error (the Girsanov/Pinsker bound on TV²), and the regression form (Alg. 1) as a Lightning
module. The estimators are closed-form computations, so they stay plain functions; only the neural
drift, which is *learned*, is a ``LightningModule``.

``python -m neurips25.sinkhorn_bridge`` regenerates ``notebooks/results/sinkhorn_bridge.json``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from .nn import TimeConditionedMLP
from .runtime import check_int, lightning_module

__all__ = [
    "sinkhorn_potentials", "sinkhorn_coupling", "sinkhorn_drift", "effective_targets", "SinkhornBridge",
    "euler_maruyama", "GaussianSB", "integrated_drift_error", "gauss_legendre_times",
    "bridge_matching_loss",
    "BridgeMatching", "coupling_pairs", "sinkhorn_divergence", "statistical_sweep", "neural_k_sweep",
    "plugin_k_sweep",
]

Drift = Callable[[torch.Tensor, float], torch.Tensor]


# --- input checks ------------------------------------------------------------------------------

def _check_eps(eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")
    return float(eps)


def _check_t(t, name: str = "t") -> float:
    t = float(t)
    if not 0.0 <= t < 1.0:
        raise ValueError(f"{name} must lie in [0, 1) (the drift is singular at t = 1), got {t}")
    return t


def _check_points(P, name: str) -> torch.Tensor:
    if not isinstance(P, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(P).__name__}")
    if P.ndim < 2 or P.shape[-2] < 1 or P.shape[-1] < 1 or not P.is_floating_point():
        raise ValueError(f"{name} must be a float tensor of points (..., N, d), got shape {tuple(P.shape)}")
    if not torch.isfinite(P).all():
        raise ValueError(f"{name} contains NaN or inf")
    return P


def _check_pair(X, Y) -> tuple[torch.Tensor, torch.Tensor]:
    X, Y = _check_points(X, "X"), _check_points(Y, "Y")
    if X.shape[-1] != Y.shape[-1]:
        raise ValueError(f"X and Y must have the same dimension d, got {X.shape[-1]} and {Y.shape[-1]}")
    if X.shape[:-2] != Y.shape[:-2]:
        raise ValueError(f"X and Y must have the same batch shape, got {tuple(X.shape[:-2])} and {tuple(Y.shape[:-2])}")
    return X, Y


# --- Sinkhorn in the log domain ----------------------------------------------------------------

def _cost(X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """c(x, y) = ½‖x − y‖² for all pairs, (..., m, n)."""
    sq = (X * X).sum(-1)[..., :, None] + (Y * Y).sum(-1)[..., None, :] - 2 * X @ Y.transpose(-1, -2)
    return 0.5 * sq.clamp_min(0)


def sinkhorn_potentials(X: torch.Tensor, Y: torch.Tensor, eps: float, n_iter: int | None = None, *,
                        tol: float = 1e-6, max_iter: int = 10_000, record: Sequence[int] = ()):
    """Entropic potentials (f, g) after ``n_iter`` log-domain Sinkhorn iterations.

    Uniform weights on X (..., m, d) and Y (..., n, d); leading batch dimensions are independent
    problems. The plan is π_ij = exp((f_i + g_j − ½‖X_i − Y_j‖²)/ε) / (mn). Convention: g^(0) = 0 and
    iteration k is f^(k) = T_μ(g^(k−1)), g^(k) = T_ν(f^(k)) with the soft c-transforms

        T_μ(g)_i = −ε log (1/n) Σ_j exp((g_j − c_ij)/ε),   T_ν(f)_j = −ε log (1/m) Σ_i exp((f_i − c_ij)/ε).

    The returned f is T_μ(g^(k)), so π^(k) has exactly the μ-marginal — the coupling of the k-th
    Sinkhorn bridge, which starts from μ. ``n_iter=None`` iterates until the μ-marginal error
    (ℓ¹) is below ``tol`` (k = ∞). With ``record=(k1, k2, ...)`` also returns ``{k: g^(k)}``.
    Computed in the dtype of X (pass float64 for small ε), on its device.
    """
    from .runtime import cap

    X, Y = _check_pair(X, Y)
    eps = _check_eps(eps)
    if n_iter is not None and (not isinstance(n_iter, int) or isinstance(n_iter, bool) or n_iter < 0):
        raise ValueError(f"n_iter must be a non-negative int or None (run to convergence), got {n_iter!r}")
    if not tol > 0:
        raise ValueError(f"tol must be positive, got {tol}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}")
    Y = Y.to(X.dtype)
    C = _cost(X, Y)
    log_m, log_n = math.log(X.shape[-2]), math.log(Y.shape[-2])
    T_mu = lambda g: -eps * (torch.logsumexp((g[..., None, :] - C) / eps, -1) - log_n)
    T_nu = lambda f: -eps * (torch.logsumexp((f[..., :, None] - C) / eps, -2) - log_m)

    g = torch.zeros(Y.shape[:-1], dtype=X.dtype, device=X.device)
    f = T_mu(g)
    history = {0: g} if 0 in record else {}
    # under NEURIPS25_SMOKE=1 the run-to-convergence loop stops after 50 iterations (runtime.cap)
    n_max = cap(max_iter, 50) if n_iter is None else n_iter
    for k in range(1, n_max + 1):
        g = T_nu(f)
        f_next = T_mu(g)
        if k in record:
            history[k] = g
        if n_iter is None:
            # row sums of π(f^(k), g^(k)) are exp((f^(k) − f^(k+1))/ε)/m
            err = (torch.exp((f - f_next) / eps) - 1).abs().mean(-1).max()
            f = f_next
            if err < tol:
                break
        else:
            f = f_next
    return (f, g, history) if record else (f, g)


def sinkhorn_coupling(X: torch.Tensor, Y: torch.Tensor, f: torch.Tensor, g: torch.Tensor, eps: float) -> torch.Tensor:
    """The plan π_ij = exp((f_i + g_j − c_ij)/ε)/(mn), shape (..., m, n)."""
    X, Y = _check_pair(X, Y)
    eps = _check_eps(eps)
    if f.shape != X.shape[:-1] or g.shape != Y.shape[:-1]:
        raise ValueError(f"f and g must have shapes {tuple(X.shape[:-1])} and {tuple(Y.shape[:-1])}, "
                         f"got {tuple(f.shape)} and {tuple(g.shape)}")
    logp = (f[..., :, None] + g[..., None, :] - _cost(X, Y)) / eps
    return torch.exp(logp - math.log(X.shape[-2] * Y.shape[-2]))


# --- the plug-in drift and the SDE -------------------------------------------------------------

def _drift_logits(z: torch.Tensor, t, Y: torch.Tensor, g: torch.Tensor, eps: float):
    """Checked inputs and the logits of the drift's softmax over the targets, (..., B, n); also Y
    (in z's dtype) and 1 − t."""
    z, Y = _check_points(z, "z"), _check_points(Y, "Y")
    if z.shape[-1] != Y.shape[-1]:
        raise ValueError(f"z and Y must have the same dimension d, got {z.shape[-1]} and {Y.shape[-1]}")
    if g.shape != Y.shape[:-1]:
        raise ValueError(f"g must have shape {tuple(Y.shape[:-1])} (one value per Y_j), got {tuple(g.shape)}")
    if not torch.isfinite(g).all():
        raise ValueError("g must be finite (a NaN or inf potential would give a NaN drift)")
    t, eps = _check_t(t), _check_eps(eps)
    Y, g = Y.to(z.dtype), g.to(z.dtype)
    s = 1.0 - t
    logits = (g[..., None, :] + (z @ Y.transpose(-1, -2) - 0.5 * (Y * Y).sum(-1)[..., None, :]) / s) / eps
    return logits, Y, s


def sinkhorn_drift(z: torch.Tensor, t, Y: torch.Tensor, g: torch.Tensor, eps: float) -> torch.Tensor:
    """Sinkhorn-bridge drift b(z, t) = (Σ_j γ_j Y_j / Σ_j γ_j − z)/(1 − t) (Pooladian & Niles-Weed).

    z (B, d) or (..., B, d); Y (..., n, d) with potential g (..., n); t a float in [0, 1). The
    ‖z‖² part of ‖Y_j − z‖² is the same for all j and cancels in the softmax, so the logits are
    (g_j + (⟨z, Y_j⟩ − ½‖Y_j‖²)/(1 − t))/ε — a matrix product, no (B, n, d) tensor.
    """
    logits, Y, s = _drift_logits(z, t, Y, g, eps)
    w = torch.softmax(logits, dim=-1)                      # γ_j / Σ γ, shape (..., B, n)
    return (w @ Y - z) / s


def effective_targets(z: torch.Tensor, t, Y: torch.Tensor, g: torch.Tensor, eps: float) -> torch.Tensor:
    """Effective number of targets 1/Σ_j w_j² behind the drift at (z, t), w_j = γ_j / Σ γ (the
    softmax of ``sinkhorn_drift``), shape (..., B). It lies in [1, n]: the drift averages the targets
    Y_j, and this counts how many of them it really averages (few near t = 1)."""
    logits, _, _ = _drift_logits(z, t, Y, g, eps)
    return 1.0 / (torch.softmax(logits, dim=-1) ** 2).sum(-1)


@dataclass
class SinkhornBridge:
    """The k-th Sinkhorn bridge fitted on samples: ``SinkhornBridge.fit(X, Y, eps, k).drift(z, t)``."""

    Y: torch.Tensor
    g: torch.Tensor
    eps: float
    n_iter: int | None = None

    @classmethod
    def fit(cls, X: torch.Tensor, Y: torch.Tensor, eps: float, n_iter: int | None = None, **kw) -> SinkhornBridge:
        _, g = sinkhorn_potentials(X, Y, eps, n_iter, **kw)
        return cls(Y, g, float(eps), n_iter)

    def drift(self, z: torch.Tensor, t) -> torch.Tensor:
        return sinkhorn_drift(z, t, self.Y, self.g, self.eps)

    def effective_targets(self, z: torch.Tensor, t) -> torch.Tensor:
        return effective_targets(z, t, self.Y, self.g, self.eps)

    __call__ = drift


@torch.no_grad()
def euler_maruyama(drift: Drift, x0: torch.Tensor, eps: float, tau: float = 0.95, n_steps: int = 100,
                   seed: int = 0, return_path: bool = False, predict_endpoint: bool = False):
    """Simulate dX_t = b(X_t, t) dt + √ε dB_t on [0, τ] from x0 (B, d) with the Euler–Maruyama scheme.

    ``predict_endpoint=True`` appends the step X̂_1 = X_τ + (1 − τ) b(X_τ, τ) = E[X_1 | X_τ] (exact for
    the exact drift, which is b(x, t) = (E[X_1 | X_t = x] − x)/(1 − t)). Returns X_τ (or X̂_1), or the
    path (n_steps + 1 [+1], B, d) with ``return_path=True``.
    """
    x0 = _check_points(x0, "x0")
    eps, tau = _check_eps(eps), _check_t(tau, "tau")
    n_steps = check_int(n_steps, "n_steps")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    h = tau / n_steps
    x, path = x0, [x0]
    for i in range(n_steps):
        noise = torch.randn(x.shape, generator=gen, dtype=x.dtype).to(x.device)
        x = x + drift(x, i * h) * h + math.sqrt(eps * h) * noise
        path.append(x)
    if predict_endpoint:
        x = x + (1 - tau) * drift(x, tau)
        path.append(x)
    return torch.stack(path) if return_path else x


# --- exact ground truth: the Gaussian Schrödinger bridge ----------------------------------------

def _sym_sqrt(A: torch.Tensor) -> torch.Tensor:
    lam, Q = torch.linalg.eigh(A)
    return (Q * lam.clamp_min(0).sqrt()) @ Q.T


@dataclass
class GaussianSB:
    """Closed-form SB between N(m0, Σ0) and N(m1, Σ1) for the reference dX = √ε dB.

    The static coupling is Gaussian with cross-covariance (Janati et al. 2020; Bunne et al. 2023)

        D = (4 Σ0^½ Σ1 Σ0^½ + ε² I)^½,   C = Cov(X0, X1) = ½ (Σ0^½ D Σ0^−½ − ε I),

    which solves the first-order condition ε Σ0⁻¹ C = Σ1 − Cᵀ Σ0⁻¹ C. The bridge is the mixture of
    Brownian bridges X_t = (1 − t)X0 + tX1 + √(εt(1 − t)) Z, so
    Σ_t = (1 − t)²Σ0 + t²Σ1 + t(1 − t)(C + Cᵀ + εI), and its (Markov) drift is
    b*(x, t) = (E[X1 | X_t = x] − x)/(1 − t) = (m1 + ((1 − t)Cᵀ + tΣ1) Σ_t⁻¹ (x − m_t) − x)/(1 − t).
    """

    Sigma0: torch.Tensor
    Sigma1: torch.Tensor
    eps: float
    m0: torch.Tensor | None = None
    m1: torch.Tensor | None = None

    def __post_init__(self):
        self.eps = _check_eps(self.eps)
        S0 = torch.as_tensor(self.Sigma0, dtype=torch.float64)
        S1 = torch.as_tensor(self.Sigma1, dtype=torch.float64)
        if S0.ndim != 2 or S0.shape[0] != S0.shape[1] or S1.shape != S0.shape:
            raise ValueError(f"Sigma0 and Sigma1 must be square (d, d) of one size, got "
                             f"{tuple(S0.shape)} and {tuple(S1.shape)}")
        for name, S in (("Sigma0", S0), ("Sigma1", S1)):
            if not torch.allclose(S, S.T, atol=1e-10) or torch.linalg.eigvalsh(S).min() <= 0:
                raise ValueError(f"{name} must be symmetric positive definite")
        d = S0.shape[0]
        self.d = d
        self.Sigma0, self.Sigma1 = S0, S1
        self.m0 = torch.zeros(d, dtype=torch.float64) if self.m0 is None else torch.as_tensor(self.m0, dtype=torch.float64)
        self.m1 = torch.zeros(d, dtype=torch.float64) if self.m1 is None else torch.as_tensor(self.m1, dtype=torch.float64)
        if self.m0.shape != (d,) or self.m1.shape != (d,):
            raise ValueError(f"m0 and m1 must have shape ({d},)")
        I = torch.eye(d, dtype=torch.float64)
        R = _sym_sqrt(S0)
        D = _sym_sqrt(4 * R @ S1 @ R + self.eps**2 * I)
        self.C = 0.5 * (R @ D @ torch.linalg.inv(R) - self.eps * I)

    def mean(self, t: float) -> torch.Tensor:
        return (1 - t) * self.m0 + t * self.m1

    def cov(self, t: float) -> torch.Tensor:
        C, I = self.C, torch.eye(self.d, dtype=torch.float64)
        return (1 - t) ** 2 * self.Sigma0 + t**2 * self.Sigma1 + t * (1 - t) * (C + C.T + self.eps * I)

    def drift(self, x: torch.Tensor, t) -> torch.Tensor:
        t = _check_t(t)
        A = ((1 - t) * self.C.T + t * self.Sigma1) @ torch.linalg.inv(self.cov(t))   # Cov(X1, X_t) Σ_t⁻¹
        A, m1, mt = A.to(x), self.m1.to(x), self.mean(t).to(x)
        return (m1 + (x - mt) @ A.T - x) / (1 - t)

    __call__ = drift

    def sample(self, t: float, n: int, seed: int = 0) -> torch.Tensor:
        """n exact samples of the marginal X_t ~ N(m_t, Σ_t), float64."""
        L = torch.linalg.cholesky(self.cov(t))
        z = torch.randn(n, self.d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        return self.mean(t) + z @ L.T


def integrated_drift_error(drift_hat: Drift, sb: GaussianSB, tau: float = 0.9, n_t: int = 12,
                           n_mc: int = 1000, seed: int = 0, reference: Drift | None = None,
                           device=None, per_node: bool = False) -> torch.Tensor:
    """∫_0^τ E_{X_t ~ P*_t} ‖b*(X_t, t) − b̂(X_t, t)‖² dt by Gauss–Legendre in t and Monte Carlo in X_t.

    By Girsanov KL(P*|P̂) on [0, τ] is this integral / (2ε), and Pinsker gives TV² ≤ KL/2. The same
    samples are used for every estimator (common random numbers). ``reference`` replaces b* (e.g. by
    b^(∞) to isolate the algorithmic error). ``drift_hat`` may return a batch (..., n_mc, d): the
    result then has shape (...). The samples X_t are drawn on the CPU and moved to ``device`` (where
    ``drift_hat`` computes; default CPU); the result lives there too. With ``per_node=True`` the
    result is (n_t, ...): the quadrature terms w_i (τ/2) E‖b* − b̂‖²(t_i), which sum to the integral
    (the nodes are ``gauss_legendre_times(tau, n_t)``) — where in time the error sits.
    """
    tau = _check_t(tau, "tau")
    if tau == 0:
        raise ValueError("tau must be positive")
    _, weights = np.polynomial.legendre.leggauss(n_t)
    ref = sb.drift if reference is None else reference
    total, terms = 0.0, []
    for i, (t, w) in enumerate(zip(gauss_legendre_times(tau, n_t), weights)):
        z = sb.sample(t, n_mc, seed=seed * 1000 + i).to(device)
        err = ((drift_hat(z, t) - ref(z, t)) ** 2).sum(-1).mean(-1)
        total = total + float(w) * tau / 2 * err
        terms.append(torch.as_tensor(float(w) * tau / 2 * err, device=device))
    return torch.stack(terms) if per_node else torch.as_tensor(total, device=device)


def gauss_legendre_times(tau: float = 0.9, n_t: int = 12) -> list[float]:
    """The times t_i on [0, τ] at which ``integrated_drift_error`` evaluates the drift error."""
    tau = _check_t(tau, "tau")
    nodes, _ = np.polynomial.legendre.leggauss(n_t)
    return [float(tau * (u + 1) / 2) for u in nodes]


# --- the regression form (Alg. 1) and its Lightning module -------------------------------------

def bridge_matching_loss(v: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], x0: torch.Tensor,
                         x1: torch.Tensor, eps: float, tau: float) -> torch.Tensor:
    """Alg. 1 ([SF]²M-style bridge matching): E‖v(x_t, t) − (x1 − x_t)/(1 − t)‖², (x0, x1) ~ π,
    t ~ U[0, τ], x_t = (1 − t)x0 + t x1 + √(εt(1 − t)) ξ. Its minimiser is the drift of the bridge
    built on π — the k-th Sinkhorn bridge when π = π^(k) (Props. 1–2)."""
    if x0.shape != x1.shape:
        raise ValueError(f"x0 and x1 must have the same shape, got {tuple(x0.shape)} and {tuple(x1.shape)}")
    # eps < 0 makes the noise scale √(εt(1 − t)) NaN and τ ≥ 1 reaches the singular 1/(1 − t);
    # τ = 0 is legal (t ≡ 0, no division by zero)
    eps, tau = _check_eps(eps), _check_t(tau, "tau")
    t = tau * torch.rand(x0.shape[0], 1, dtype=x0.dtype, device=x0.device)
    xt = (1 - t) * x0 + t * x1 + torch.sqrt(eps * t * (1 - t)) * torch.randn_like(x0)
    target = (x1 - xt) / (1 - t)
    return ((v(xt, t[:, 0]) - target) ** 2).sum(-1).mean()


def coupling_pairs(X: torch.Tensor, Y: torch.Tensor, pi: torch.Tensor | None, n_pairs: int,
                   seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n_pairs`` draws (X_i, Y_j) ~ π (m, n); ``pi=None`` is the independent coupling μ_m ⊗ ν_n."""
    X, Y = _check_pair(X, Y)
    m, n = X.shape[-2], Y.shape[-2]
    if pi is None:
        pi = torch.full((m, n), 1.0 / (m * n), dtype=torch.float64)
    if pi.shape != (m, n) or (pi < 0).any():
        raise ValueError(f"pi must be a non-negative ({m}, {n}) plan, got shape {tuple(pi.shape)}")
    gen = torch.Generator().manual_seed(seed)
    idx = torch.multinomial(pi.flatten().double().cpu(), n_pairs, replacement=True, generator=gen)
    return X[(idx // n).to(X.device)], Y[(idx % n).to(Y.device)]




class BridgeMatching(lightning_module()):
    """Neural drift b_θ(x, t) trained by ``bridge_matching_loss`` on pairs from a coupling."""

    def __init__(self, dim: int = 2, eps: float = 0.1, tau: float = 0.98, hidden: Sequence[int] = (64, 64, 64),
                 lr: float = 3e-3, time_dim: int = 16):
        super().__init__()
        _check_eps(eps)
        _check_t(tau, "tau")
        self.save_hyperparameters()
        self.net = TimeConditionedMLP(dim, tuple(hidden), time_dim=time_dim)

    def forward(self, x: torch.Tensor, t) -> torch.Tensor:
        return self.net(x, t)

    def training_step(self, batch, batch_idx):
        x0, x1 = batch
        loss = bridge_matching_loss(self.net, x0, x1, self.hparams.eps, self.hparams.tau)
        self.log("train_loss", loss, prog_bar=False)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, self.trainer.estimated_stepping_batches))
        return [opt], [{"scheduler": sched, "interval": "step"}]


# --- sample quality ----------------------------------------------------------------------------

def sinkhorn_divergence(A: torch.Tensor, B: torch.Tensor, reg: float = 0.05) -> float:
    """Debiased Sinkhorn divergence S(A, B) = W(A, B) − ½W(A, A) − ½W(B, B), squared-Euclidean cost (POT)."""
    import ot

    A, B = _check_pair(A, B)
    reg = _check_eps(reg)
    a = A.detach().cpu().double().numpy()
    b = B.detach().cpu().double().numpy()
    return float(ot.bregman.empirical_sinkhorn_divergence(a, b, reg, numIterMax=5000, warn=False))


# --- sweeps behind the stored results ----------------------------------------------------------

def _check_sizes(v, name: str) -> list[int]:
    if isinstance(v, (int, np.integer)) or not hasattr(v, "__len__") or len(v) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of sample sizes, got {v!r}")
    out = []
    for x in v:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 2:
            raise ValueError(f"{name} must hold ints >= 2, got {x!r}")
        out.append(int(x))
    return out


def statistical_sweep(ns: Sequence[int], trials: int, eps: float = 0.25, d: int = 3, tau: float = 0.9,
                      n_t: int = 12, n_mc: int = 1000, seed: int = 0, ms: Sequence[int] | None = None,
                      device=None, per_t: bool = False) -> dict:
    """Integrated drift error of the converged Sinkhorn bridge (k = ∞) against the exact Gaussian SB,
    μ = N(0, I), ν = N(0, B) with B a fixed random SPD matrix, m source and n target samples.

    ``ms=None`` uses m = n; otherwise ``ms[i]`` source samples go with ``ns[i]`` target samples (to
    separate the 1/m and 1/n terms, hold one side fixed and large). Trials are batched; the samples are
    drawn on the CPU (the same numbers on every device) and the Sinkhorn fits and drift errors run on
    ``device`` (default CPU).
    Returns {"m": [...], "n": [...], "err": [[trial errors] per size], ...}; with ``per_t=True`` also
    ``"t"`` (the quadrature times) and ``"err_t"`` (per size, per trial, the quadrature terms, which
    sum to ``err``; the ``err`` values are the same as without it).
    """
    from .data import random_spd
    from .runtime import cap

    ns = _check_sizes(ns, "ns")
    ms = ns if ms is None else _check_sizes(ms, "ms")
    if len(ms) != len(ns):
        raise ValueError(f"ms and ns must have the same length, got {len(ms)} and {len(ns)}")
    trials = check_int(trials, "trials")
    d = check_int(d, "d")
    eps = _check_eps(eps)
    trials = cap(trials)  # bounded under NEURIPS25_SMOKE=1
    sb = GaussianSB(torch.eye(d, dtype=torch.float64), random_spd(d, seed=seed, eig_range=(0.25, 2.0)), eps)
    L1 = torch.linalg.cholesky(sb.Sigma1)
    errs, errs_t = [], []
    for m, n in zip(ms, ns):
        gen = torch.Generator().manual_seed(seed * 7919 + n if m == n else seed * 7919 + 100_003 * m + n)
        X = torch.randn(trials, m, d, generator=gen, dtype=torch.float64)
        Y = torch.randn(trials, n, d, generator=gen, dtype=torch.float64) @ L1.T
        bridge = SinkhornBridge.fit(X.to(device), Y.to(device), eps)
        if per_t:
            terms = integrated_drift_error(bridge.drift, sb, tau, n_t, n_mc, seed=seed, device=device,
                                           per_node=True)
            total = 0.0
            for term in terms:  # summed in the same order as the integral itself: identical values
                total = total + term
            errs.append(total.tolist())
            errs_t.append(terms.T.tolist())  # (trials, n_t)
        else:
            errs.append(integrated_drift_error(bridge.drift, sb, tau, n_t, n_mc, seed=seed,
                                               device=device).tolist())
    out = {"m": ms, "n": ns, "err": errs, "eps": eps, "d": d, "tau": tau, "n_t": n_t, "n_mc": n_mc,
           "trials": trials}
    if per_t:
        out.update(t=gauss_legendre_times(tau, n_t), err_t=errs_t)
    return out


def _moons_data(seed: int, n: int, n_eval: int, dev) -> tuple[torch.Tensor, ...]:
    """The k-sweeps' data of ``seed``: n sources (8 Gaussians) and n targets (moons) on ``dev``, two
    held-out n_eval-samples of the moons (the test set and, for the noise floor, another one) and
    n_eval fresh sources on ``dev``; float64."""
    from .data import toy_2d

    X0 = toy_2d("8gaussians", n, seed=100 * seed, dtype=torch.float64).to(dev)
    X1 = toy_2d("moons", n, seed=100 * seed + 1, dtype=torch.float64).to(dev)
    X1_test = toy_2d("moons", n_eval, seed=100 * seed + 11, dtype=torch.float64)
    X1_other = toy_2d("moons", n_eval, seed=100 * seed + 12, dtype=torch.float64)
    src_fresh = toy_2d("8gaussians", n_eval, seed=100 * seed + 21, dtype=torch.float64).to(dev)
    return X0, X1, X1_test, X1_other, src_fresh


def _simulate(drift: Drift, x: torch.Tensor, eps: float, tau: float) -> torch.Tensor:
    """Every bridge of the k-sweeps, plug-in or neural, is simulated the same way: 100 Euler-Maruyama
    steps to ``tau``, one noise seed, the endpoint predicted from there."""
    return euler_maruyama(drift, x, eps, tau=tau, n_steps=100, seed=3, predict_endpoint=True)


def plugin_k_sweep(ks: Sequence[int | None] = (1, 5, 10, None), seed: int = 0, n: int = 512,
                   eps: float = 0.1, tau: float = 0.98, n_eval: int = 500, reg: float = 0.1) -> dict:
    """The plug-in bridges b^(k) of :func:`neural_k_sweep` alone (no training, so cheap enough for many
    seeds): per k in ``ks`` (``None`` = converged) the Sinkhorn divergence of X̂_1, simulated from
    ``n_eval`` *fresh* sources, to the held-out moons (``S_plugin_fresh``; the same data, SDE and score
    as :func:`neural_k_sweep` with ``fresh=True``, whose values it repeats)."""
    eps, tau = _check_eps(eps), _check_t(tau, "tau")
    if not 2 <= n_eval <= n:
        raise ValueError(f"n_eval must lie in [2, n = {n}], got {n_eval!r}")
    X0, X1, X1_test, _, src_fresh = _moons_data(seed, n, n_eval, torch.device("cpu"))
    out: dict = {"k": list(ks), "S_plugin_fresh": [], "seed": seed, "n": n, "eps": eps}
    for k in ks:
        x = _simulate(SinkhornBridge.fit(X0, X1, eps, k), src_fresh, eps, tau)
        out["S_plugin_fresh"].append(sinkhorn_divergence(x, X1_test, reg=reg))
    return out


def neural_k_sweep(ks: Sequence[int | None] = (1, 5, 10, None), seed: int = 0, n: int = 512,
                   eps: float = 0.1, tau: float = 0.98, steps: int = 600, batch: int = 256,
                   hidden: Sequence[int] = (64, 64, 64), lr: float = 3e-3, n_eval: int = 500,
                   reg: float = 0.1, independent: bool = True, keep_samples: bool = False,
                   fresh: bool = False, device=None) -> dict:
    """8 Gaussians → moons: neural bridges (Alg. 1) trained on π^(k) for each k in ``ks``
    (``None`` = converged), and the plug-in bridges b^(k) themselves.

    Per k it returns the Sinkhorn divergence (blur ``reg``) of X̂_1 to ``n_eval`` held-out moons,
    simulated from the first ``n_eval`` *training* sources (``S_neural``, ``S_plugin``), and the total
    variation between the second marginal of π^(k) and ν_n (``tv_marginal``), which is what finite k
    gets wrong. ``S_floor`` is S between two independent ``n_eval``-samples of the moons (the metric's
    noise floor). With ``fresh=True`` every bridge is also simulated from ``n_eval`` *fresh* source
    samples (8 Gaussians, data seed ``100 * seed + 21``), scored the same way (``S_neural_fresh``,
    ``S_plugin_fresh``, ``S_independent_fresh``); this adds the 1/m error of the source sample.
    Seeds shift the data, the pairs and the network initialisation. With
    ``keep_samples=True`` also ``samples``: {name: X̂_1} and the data ``X0``, ``X1``, ``X1_test``.
    Data are drawn on the CPU; Sinkhorn, the networks' training and both SDE simulations run on
    ``device`` (default CPU); samples come back to the CPU for the divergence (POT).
    """
    from torch.utils.data import DataLoader, TensorDataset

    from .runtime import cap, make_trainer, seed_everything

    eps, tau = _check_eps(eps), _check_t(tau, "tau")
    steps = check_int(steps, "steps")
    if not 2 <= n_eval <= n:
        raise ValueError(f"n_eval must lie in [2, n = {n}], got {n_eval!r}")
    dev = torch.device("cpu") if device is None else torch.device(device)
    X0, X1, X1_test, X1_other, src_fresh = _moons_data(seed, n, n_eval, dev)
    S = lambda A: sinkhorn_divergence(A, X1_test, reg=reg)
    sample = lambda drift, x: _simulate(drift, x, eps, tau)  # noqa: E731
    src = X0[:n_eval]
    out: dict = {"k": [], "S_neural": [], "S_plugin": [], "tv_marginal": [], "seed": seed, "steps": steps,
                 "eps": eps, "n": n, "S_floor": S(X1_other)}
    runs = [(k, "k") for k in ks] + ([(None, "independent")] if independent else [])
    for i, (k, kind) in enumerate(runs):
        if kind == "independent":
            pi = None
        else:
            f, g = sinkhorn_potentials(X0, X1, eps, k)
            pi = sinkhorn_coupling(X0, X1, f, g, eps)
            plug = lambda z, t, g=g: sinkhorn_drift(z, t, X1, g, eps)
            x_plug = sample(plug, src)
            if fresh:
                x_plug_f = sample(plug, src_fresh)
        seed_everything(seed)
        x0, x1 = coupling_pairs(X0, X1, pi, cap(steps) * batch, seed=1000 * seed + i)  # cap: smoke runs
        loader = DataLoader(TensorDataset(x0.float(), x1.float()), batch_size=batch, shuffle=False)
        model = BridgeMatching(dim=2, eps=eps, tau=tau, hidden=tuple(hidden), lr=lr)
        make_trainer(1, accelerator=dev.type).fit(model, loader)
        model = model.to(dev).eval()  # Lightning hands the model back on the CPU
        x_nn = sample(model, src.float()).cpu()
        if keep_samples:
            out.setdefault("samples", {})["independent" if kind == "independent" else k] = x_nn.numpy()
        if fresh:
            x_nn_f = sample(model, src_fresh.float()).cpu()
        if kind == "independent":
            out["S_independent"] = S(x_nn)
            if fresh:
                out["S_independent_fresh"] = S(x_nn_f)
            continue
        out["k"].append(k)
        out["S_neural"].append(S(x_nn))
        out["S_plugin"].append(S(x_plug))
        if fresh:
            out.setdefault("S_neural_fresh", []).append(S(x_nn_f))
            out.setdefault("S_plugin_fresh", []).append(S(x_plug_f.cpu()))
        out["tv_marginal"].append(0.5 * float((pi.sum(0) - 1.0 / n).abs().sum()))
    if keep_samples:
        out.update(X0=X0.cpu().numpy(), X1=X1.cpu().numpy(), X1_test=X1_test.numpy())
    return out


# The stored sweeps, by scale. ``small`` is exactly what produced notebooks/results/sinkhorn_bridge.json
# (``python -m neurips25.sinkhorn_bridge`` reproduces it); ``full`` moves towards the paper, whose
# Gaussian experiment is μ = N(0, I₃), ν = N(0, B) at ε = 0.1 with m = n up to 1,000 (full: the paper's
# ε = 0.1, m = n up to 6,400, 20 trials), and whose 8 Gaussians → moons experiment trains neural drifts
# at k = 1, 5, 10 (full: 5 seeds, n = 2,048 samples a side, 2,000 and 5,000 steps). Each part records
# its own command.
SWEEP = {
    "small": {
        "m_eq_n": dict(ns=[50, 100, 200, 400, 800, 1600], trials=10, eps=0.25),
        "vary_m": dict(ns=[25, 50, 100, 200, 400], trials=6, eps=0.25, fixed=800),
        "vary_n": dict(ns=[25, 50, 100, 200, 400], trials=6, eps=0.25, fixed=800),
        # the extension (4x larger sizes; per-time error terms stored): does the 1/n term steepen?
        "m_eq_n_ext": dict(ns=[50, 100, 200, 400, 800, 1600, 3200], trials=10, eps=0.25, per_t=True),
        "vary_m_3200": dict(ns=[25, 50, 100, 200, 400, 800], trials=10, eps=0.25, fixed=3200,
                            per_t=True),
        "vary_n_3200": dict(ns=[25, 50, 100, 200, 400, 800], trials=10, eps=0.25, fixed=3200,
                            per_t=True),
        "neural": dict(seeds=[0, 1, 2], steps=600, n=512),
        "neural_2000": dict(seeds=[0, 1, 2], steps=2000, n=512),
        # near convergence (within ~0.003 of the plug-in bridge), also scored from fresh sources
        "neural_5000": dict(seeds=[0, 1, 2], steps=5000, n=512, fresh=True),
        # four times the samples a side: does the fresh-source k = 5 -> 10 reversal shrink with n?
        "neural_5000_n2048": dict(seeds=[0, 1, 2], steps=5000, n=2048, fresh=True),
        # the plug-in bridges alone (no training) over 40 fresh seeds and three n: is their fresh-source
        # k = 5 -> 10 reversal real, and does it fade with n? (~35 CPU-minutes, most of it at n = 2048)
        "plugin_fresh": dict(seeds=list(range(3, 43)), ns=[512, 1024, 2048]),
    },
    "full": {
        "m_eq_n": dict(ns=[50, 100, 200, 400, 800, 1600, 3200, 6400], trials=20, eps=0.1),
        "vary_m": dict(ns=[25, 50, 100, 200, 400, 800], trials=20, eps=0.1, fixed=3200),
        "vary_n": dict(ns=[25, 50, 100, 200, 400, 800], trials=20, eps=0.1, fixed=3200),
        "neural": dict(seeds=[0, 1, 2, 3, 4], steps=2000, n=2048),
        "neural_5000": dict(seeds=[0, 1, 2, 3, 4], steps=5000, n=2048, fresh=True),
    },
}


def run_part(part: str, cfg: dict, seed: int = 0, device=None, name: str | None = None) -> dict:
    """One entry of ``SWEEP[scale]``: a statistical sweep (``part`` = ``m_eq_n``, ``vary_m``,
    ``vary_n``), a neural k-sweep (``neural``) or the plug-in bridges alone (``plugin``); ``name`` is the entry's key (default ``part``; e.g.
    ``vary_n_3200``), which its recorded command names. Seeds, sizes and steps are bounded by
    ``runtime.cap`` under ``NEURIPS25_SMOKE=1``."""
    from .runtime import cap

    name = part if name is None else name

    if part == "plugin":
        seeds, ns = cfg["seeds"][: cap(len(cfg["seeds"]), 1)], [cap(n, 256) for n in cfg["ns"]]
        res = {"runs": [plugin_k_sweep(seed=s, n=n, n_eval=min(500, n)) for n in ns for s in seeds]}
        res["command"] = (f"python -m neurips25.sinkhorn_bridge --part {name} --seeds {' '.join(map(str, seeds))}"
                          f" --ns {' '.join(map(str, ns))}")
        return res
    if part.startswith("neural"):
        seeds = cfg["seeds"][: cap(len(cfg["seeds"]), 1)]
        n = cap(cfg["n"], 256)  # samples per side, bounded under NEURIPS25_SMOKE=1
        fresh = bool(cfg.get("fresh", False))
        res = {"runs": [neural_k_sweep(seed=s, steps=cfg["steps"], n=n, n_eval=min(500, n), fresh=fresh,
                                       device=device) for s in seeds]}
        # a part named only by its steps ("neural_2000") is rerun as --part neural --steps; others by name
        flag = "neural" if name == "neural" or name.removeprefix("neural_").isdigit() else name
        res["command"] = (f"python -m neurips25.sinkhorn_bridge --part {flag} --seeds {' '.join(map(str, seeds))}"
                          f" --steps {cfg['steps']}" + (f" --n {cfg['n']}" if cfg["n"] != 512 else "")
                          + (" --fresh" if fresh else ""))
        return res
    ns = cfg["ns"][: cap(len(cfg["ns"]))]
    ms = None
    if part == "vary_m":
        ms, ns = ns, [cfg["fixed"]] * len(ns)
    elif part == "vary_n":
        ms = [cfg["fixed"]] * len(ns)
    res = statistical_sweep(ns, cap(cfg["trials"]), eps=cfg["eps"], seed=seed, ms=ms, device=device,
                            per_t=cfg.get("per_t", False))
    sizes = ms if part == "vary_m" else ns
    cmd = (f"python -m neurips25.sinkhorn_bridge --part {name} --ns {' '.join(map(str, sizes))}"
           f" --trials {cfg['trials']} --eps {cfg['eps']} --seed {seed}")
    res["command"] = cmd + (f" --fixed {cfg['fixed']}" if part in ("vary_m", "vary_n") else "")
    return res


def main(argv: Sequence[str] | None = None) -> None:
    import argparse
    import json

    from .results import add_scale_arguments, load_results, results_path, save_results
    from .runtime import device as pick_device

    p = argparse.ArgumentParser(description="Sweeps of the Sinkhorn-bridge chapter (stored results). "
                                "Settings: SWEEP[--scale]; the flags below override them.")
    add_scale_arguments(p)
    p.add_argument("--part", default="all",
                   help=f"all, or one of the parts of SWEEP (small: {', '.join(SWEEP['small'])}; "
                        f"full: {', '.join(SWEEP['full'])}); a neural part with --steps is stored as "
                        "neural_<steps> unless its steps are the scale's default")
    p.add_argument("--ns", type=int, nargs="+", help="sizes of the m = n sweep, or of the varying side")
    p.add_argument("--fixed", type=int, help="size of the fixed side (vary_m, vary_n)")
    p.add_argument("--trials", type=int)
    p.add_argument("--eps", type=float)
    p.add_argument("--seeds", type=int, nargs="+", help="neural part")
    p.add_argument("--steps", type=int, help="neural part")
    p.add_argument("--n", type=int, help="neural part: samples per side")
    p.add_argument("--fresh", action="store_true",
                   help="neural part: also score every bridge from fresh source samples")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    sweep = SWEEP[a.scale]
    parts = list(sweep) if a.part == "all" else [a.part]
    path = a.out if a.out is not None else results_path("sinkhorn_bridge", a.scale)
    data = load_results("sinkhorn_bridge", path=path)["data"] if path.exists() else {}
    dev = pick_device()
    for part in parts:
        base = next((b for b in ("m_eq_n", "vary_m", "vary_n", "neural", "plugin") if part.startswith(b)), None)
        if base is None or (base != "neural" and part not in sweep):
            raise SystemExit(f"--part must be all or one of {sorted(sweep)}, got {part!r}")
        cfg = dict(sweep.get(part, sweep[next(k for k in sweep if k.startswith(base))]))
        if base == "neural":
            cfg.setdefault("fresh", False)
        over = {"ns": a.ns, "fixed": a.fixed, "trials": a.trials, "eps": a.eps, "seeds": a.seeds,
                "steps": a.steps, "n": a.n, "fresh": a.fresh or None}
        cfg.update({k: v for k, v in over.items() if v is not None and k in cfg})
        res = run_part(base, cfg, a.seed, dev, name=part)
        if base == "neural" and part == "neural" and a.steps is not None and a.steps != sweep["neural"]["steps"]:
            part = f"neural_{a.steps}"
        data[part] = res
        print(part, json.dumps(res)[:300], flush=True)
    full = f"python -m neurips25.sinkhorn_bridge --scale {a.scale} --part all (each part records its own command)"
    print(save_results("sinkhorn_bridge", data, full, a.seed, path=a.out, scale=a.scale))


if __name__ == "__main__":
    main()
