"""Softmax-contaminated mixture of experts: MLE rates with and without distinguishability.

Yan, Nguyen, Le, Akbarian, Ho & Rinaldo, "On Minimax Estimation of Parameters in
Softmax-Contaminated Mixture of Experts", NeurIPS 2025 (arXiv 2505.18455).

The model (eq. (1) of the paper): a frozen pre-trained expert ``f0`` and a trainable Gaussian
prompt expert, mixed by an input-dependent softmax (here: sigmoid) gate,

    p_G(y|x) = 1/(1+e^{βᵀx+τ}) · f0(y | h0(x,η0), ν0) + e^{βᵀx+τ}/(1+e^{βᵀx+τ}) · N(y | h(x,η), ν),

with ``h(x, η) = tanh(ηᵀx)`` and ν a *variance*. Unknown: ``G = (β, τ, η, ν)``, packed into one
vector ``θ = [β (d), τ, η (d), log ν]`` (log-variance parameterisation) with optional leading
batch dimensions, one per independent repetition.

Contents
- ``PretrainedExpert``: the frozen ``f0`` (Gaussian or Laplace), ``pack``/``unpack``, ``paper_setting``.
- ``log_density`` / ``neg_log_likelihood`` / ``sample``: the model (logsumexp mixture, batched).
- ``ContaminatedMoEMLE``: the MLE as a full-batch float64 L-BFGS ``LightningModule``.
- ``fit_mle``: the same MLE by batched damped Newton over many repetitions at once (rate sweeps).
- ``hellinger_error``, ``parameter_errors``, ``rate_experiment``, ``fit_slope``: Table 1 / §4.
- ``distinguishability_rank`` / ``is_distinguishable``: a numerical rank test of Definition 1.
- ``fisher_information``: the per-sample Fisher information, for asymptotic error predictions.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .runtime import make_trainer, single_thread

__all__ = [
    "FAMILIES", "SETTINGS", "THEORY_SLOPES", "PretrainedExpert", "pack", "unpack", "paper_setting",
    "log_density", "neg_log_likelihood", "sample", "ContaminatedMoEMLE", "fit_with_lightning",
    "fit_mle", "nll_grad_hess", "parameter_errors", "hellinger_error", "rate_experiment", "fit_slope",
    "distinguishability_rank", "is_distinguishable", "fisher_information", "asymptotic_sd",
]

FAMILIES = ("gaussian", "laplace")
SETTINGS = ("distinguishable", "nondist_eta", "nondist_nu")
# Table 1 with Δ ∝ n^{-1/8}: e^τ error n^{-1/2}Δ^{-2}, the others n^{-1/2}Δ^{-1}.
THEORY_SLOPES = {
    "distinguishable": {"beta": -0.5, "exp_tau": -0.5, "eta": -0.5, "nu": -0.5},
    "nondist_eta": {"beta": -0.375, "exp_tau": -0.25, "eta": -0.375, "nu": -0.375},
    "nondist_nu": {"beta": -0.375, "exp_tau": -0.25, "eta": -0.375, "nu": -0.375},
}
PARAMS = ("beta", "exp_tau", "eta", "nu")
_LOG2PI = math.log(2 * math.pi)


def _as_f64(t: Any, name: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
    return t.to(torch.float64)


def _check_pos_int(value: Any, name: str, low: int = 1) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


# --- the frozen pre-trained expert and the parameter vector ----------------------------------------

@dataclass(frozen=True)
class PretrainedExpert:
    """The known expert ``f0(y | tanh(η0ᵀx), ν0)``; ``ν0`` is its variance (Laplace scale √(ν0/2))."""

    family: str
    eta0: torch.Tensor
    nu0: float

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}")
        eta0 = _as_f64(self.eta0, "eta0")
        if eta0.ndim != 1 or eta0.numel() == 0:
            raise ValueError(f"eta0 must be a non-empty 1-D tensor, got shape {tuple(eta0.shape)}")
        if not isinstance(self.nu0, (int, float)) or not math.isfinite(self.nu0) or self.nu0 <= 0:
            raise ValueError(f"nu0 must be a finite variance > 0, got {self.nu0!r}")
        object.__setattr__(self, "eta0", eta0)

    @property
    def d(self) -> int:
        return self.eta0.numel()

    def mean(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ self.eta0.to(x.device))

    def log_prob_at(self, y: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
        """log f0(y | mean, ν0), broadcasting ``y`` against ``mean``."""
        if self.family == "gaussian":
            return -0.5 * (_LOG2PI + math.log(self.nu0) + (y - mean) ** 2 / self.nu0)
        b = math.sqrt(self.nu0 / 2)  # Laplace scale with variance ν0
        return -math.log(2 * b) - (y - mean).abs() / b

    def sample_at(self, mean: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        if self.family == "gaussian":
            noise = torch.randn(mean.shape, generator=generator, dtype=mean.dtype)
            return mean + math.sqrt(self.nu0) * noise
        u = torch.rand(mean.shape, generator=generator, dtype=mean.dtype) - 0.5
        b = math.sqrt(self.nu0 / 2)
        return mean - b * torch.sign(u) * torch.log1p(-2 * u.abs())  # inverse-CDF Laplace draw


def pack(beta: torch.Tensor, tau: Any, eta: torch.Tensor, nu: Any) -> torch.Tensor:
    """θ = [β, τ, η, log ν] (float64), batched over any leading dimensions of β and η."""
    beta, eta = _as_f64(beta, "beta"), _as_f64(eta, "eta")
    if beta.shape != eta.shape or beta.ndim < 1:
        raise ValueError(f"beta and eta must have the same shape (..., d), got {tuple(beta.shape)} "
                         f"and {tuple(eta.shape)}")
    tau = torch.as_tensor(tau, dtype=torch.float64).expand(beta.shape[:-1])
    nu = torch.as_tensor(nu, dtype=torch.float64).expand(beta.shape[:-1])
    if not bool(torch.all(nu > 0)) or not bool(torch.all(torch.isfinite(nu))):
        raise ValueError(f"nu must be a finite variance > 0, got {nu}")
    return torch.cat([beta, tau[..., None], eta, nu.log()[..., None]], dim=-1)


def unpack(theta: torch.Tensor) -> dict[str, torch.Tensor]:
    """The parts of θ: β (…, d), τ (…), η (…, d), ν (…) and log ν (…)."""
    p = theta.shape[-1]
    if p < 4 or p % 2:
        raise ValueError(f"theta must have last dimension 2d+2 (d >= 1), got {p}")
    d = (p - 2) // 2
    return {"beta": theta[..., :d], "tau": theta[..., d], "eta": theta[..., d + 1:2 * d + 1],
            "log_nu": theta[..., -1], "nu": theta[..., -1].exp()}


def _check_theta(theta: Any, d: int) -> torch.Tensor:
    theta = _as_f64(theta, "theta")
    if theta.ndim < 1 or theta.shape[-1] != 2 * d + 2:
        raise ValueError(f"theta must have shape (..., 2d+2) = (..., {2 * d + 2}) for d={d}, "
                         f"got {tuple(theta.shape)}")
    return theta


def paper_setting(name: str, n: int, d: int = 8, delta: float | None = None,
                  f0_family: str | None = None) -> tuple[PretrainedExpert, torch.Tensor]:
    """(f0, θ*) for the §4 experiments: X ~ N(0, I_d), η0 = e1, ν0 = 0.001, β* = 1/√d, τ* = 1.

    - ``distinguishable``: f0 Laplace, η* = −e1, ν* = 0.001.
    - ``nondist_eta`` (i): both Gaussian, η* = e1(1 + Δ) with Δ = n^{-1/8}.
    - ``nondist_nu`` (ii): both Gaussian, η* = e1, ν* = ν0(1 + Δ).
    ``delta`` overrides Δ = n^{-1/8} (used to study a fixed overlap); ``f0_family`` swaps the
    family of f0 (e.g. a Laplace f0 in the "nondist" geometry, which is then distinguishable).
    """
    if name not in SETTINGS:
        raise ValueError(f"name must be one of {SETTINGS}, got {name!r}")
    n, d = _check_pos_int(n, "n"), _check_pos_int(d, "d")
    delta = n ** (-1 / 8) if delta is None else float(delta)
    e1 = torch.zeros(d, dtype=torch.float64)
    e1[0] = 1.0
    beta = torch.full((d,), 1 / math.sqrt(d), dtype=torch.float64)
    nu0 = 1e-3
    family = f0_family or ("laplace" if name == "distinguishable" else "gaussian")
    expert = PretrainedExpert(family, e1, nu0)
    if name == "distinguishable":
        return expert, pack(beta, 1.0, -e1, nu0)
    if name == "nondist_eta":
        return expert, pack(beta, 1.0, e1 * (1 + delta), nu0)
    return expert, pack(beta, 1.0, e1, nu0 * (1 + delta))


# --- the model -----------------------------------------------------------------------------------

def _mixture_log_pdf(y, s, m0, m1, log_nu, expert: PretrainedExpert):
    """log[(1-w) f0(y|m0) + w N(y|m1, ν)] with w = sigmoid(s), all terms in log space."""
    log_f0 = expert.log_prob_at(y, m0)
    log_f = -0.5 * (_LOG2PI + log_nu + (y - m1) ** 2 / log_nu.exp())
    return torch.logaddexp(-F.softplus(s) + log_f0, -F.softplus(-s) + log_f)


def log_density(y: torch.Tensor, x: torch.Tensor, theta: torch.Tensor,
                expert: PretrainedExpert) -> torch.Tensor:
    """log p_G(y|x) of eq. (1); ``x`` (…, n, d), ``y`` (…, n), ``θ`` (…, 2d+2) → (…, n)."""
    x, y = _as_f64(x, "x"), _as_f64(y, "y")
    if x.ndim < 2 or x.shape[-1] != expert.d:
        raise ValueError(f"x must have shape (..., n, d={expert.d}), got {tuple(x.shape)}")
    if y.shape != x.shape[:-1]:
        raise ValueError(f"y must have shape {tuple(x.shape[:-1])} (x without d), got {tuple(y.shape)}")
    theta = _check_theta(theta, expert.d)
    g = unpack(theta)
    s = torch.einsum("...nd,...d->...n", x, g["beta"]) + g["tau"][..., None]
    m1 = torch.tanh(torch.einsum("...nd,...d->...n", x, g["eta"]))
    return _mixture_log_pdf(y, s, expert.mean(x), m1, g["log_nu"][..., None], expert)


def neg_log_likelihood(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                       expert: PretrainedExpert) -> torch.Tensor:
    """Average negative log-likelihood −(1/n) Σ log p_G(y_i|x_i), one value per repetition."""
    return -log_density(y, x, theta, expert).mean(dim=-1)


def sample(n: int, theta: torch.Tensor, expert: PretrainedExpert,
           generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw X ~ N(0, I_d), then Y | X from eq. (1); θ (…, 2d+2) gives x (…, n, d), y (…, n)."""
    n = _check_pos_int(n, "n")
    theta = _check_theta(theta, expert.d)
    g = unpack(theta)
    batch = theta.shape[:-1]
    x = torch.randn(*batch, n, expert.d, generator=generator, dtype=torch.float64)
    s = torch.einsum("...nd,...d->...n", x, g["beta"]) + g["tau"][..., None]
    from_prompt = torch.rand(s.shape, generator=generator, dtype=torch.float64) < torch.sigmoid(s)
    m1 = torch.tanh(torch.einsum("...nd,...d->...n", x, g["eta"]))
    y_prompt = m1 + g["nu"][..., None].sqrt() * torch.randn(s.shape, generator=generator,
                                                            dtype=torch.float64)
    y0 = expert.sample_at(expert.mean(x), generator)
    return x, torch.where(from_prompt, y_prompt, y0)


# --- the MLE as a Lightning module ---------------------------------------------------------------

def _lightning_module():
    import lightning as L

    return L.LightningModule


class ContaminatedMoEMLE(_lightning_module()):
    """Maximum likelihood for eq. (1): full-batch L-BFGS (strong Wolfe) in float64.

    The parameter is the packed vector θ = [β, τ, η, log ν]; ``theta_init`` is the start (the
    paper initialises near the truth). Train with ``make_trainer(epochs, precision="64-true")``
    on a loader that yields the whole data set as one batch (see ``fit_with_lightning``).
    """

    def __init__(self, family: str, eta0: list[float], nu0: float, theta_init: list[float],
                 max_iter: int = 50):
        super().__init__()
        self.save_hyperparameters()
        self.expert = PretrainedExpert(family, torch.tensor(eta0, dtype=torch.float64), nu0)
        self.theta = torch.nn.Parameter(_check_theta(torch.tensor(theta_init, dtype=torch.float64),
                                                     self.expert.d).clone())

    def training_step(self, batch, batch_idx):
        x, y = batch
        return neg_log_likelihood(self.theta, x, y, self.expert)

    def configure_optimizers(self):
        return torch.optim.LBFGS([self.theta], lr=1.0, max_iter=self.hparams.max_iter,
                                 tolerance_grad=1e-12, tolerance_change=1e-14,
                                 history_size=50, line_search_fn="strong_wolfe")


@single_thread()
def fit_with_lightning(x: torch.Tensor, y: torch.Tensor, expert: PretrainedExpert,
                       theta_init: torch.Tensor, epochs: int = 10,
                       max_iter: int = 50) -> torch.Tensor:
    """Fit one data set with ``ContaminatedMoEMLE`` through a quiet Lightning ``Trainer``."""
    x, y = _as_f64(x, "x"), _as_f64(y, "y")
    if x.ndim != 2 or y.shape != x.shape[:1]:
        raise ValueError(f"x must be (n, d) and y (n,), got {tuple(x.shape)} and {tuple(y.shape)}")
    model = ContaminatedMoEMLE(expert.family, expert.eta0.tolist(), expert.nu0,
                               _check_theta(theta_init, expert.d).tolist(), max_iter=max_iter)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y),
                                         batch_size=len(x), shuffle=False)
    with warnings.catch_warnings():
        # one full batch per epoch is intended here; Lightning warns that the loader is small.
        warnings.filterwarnings("ignore", message=r".*number of training batches.*")
        make_trainer(epochs, precision="64-true").fit(model, loader)
    return model.theta.detach().clone()


# --- the MLE by batched damped Newton (for rate sweeps over many repetitions) ---------------------

def _local_derivatives(theta, x, y, expert):
    """Per-sample log-likelihood ℓ(s, t, v) with its gradient and Hessian in q = (s, t, v).

    s = βᵀx + τ, t = ηᵀx and v = log ν are *linear* in θ, so ∇_θℓ = Jᵀ∇_qℓ and ∇²_θℓ = Jᵀ∇²_qℓ J:
    the exact Hessian needs only these 3×3 blocks. With a = log(w1 N), b = log(w0 f0), r = σ(a−b)
    (the prompt's responsibility): ∇ℓ = r∇a + (1−r)∇b, ∇²ℓ = r∇²a + (1−r)∇²b + r(1−r)DDᵀ, D = ∇a−∇b.
    """
    g = unpack(theta)
    s = torch.einsum("...nd,...d->...n", x, g["beta"]) + g["tau"][..., None]
    m = torch.tanh(torch.einsum("...nd,...d->...n", x, g["eta"]))
    v = g["log_nu"][..., None]
    nu = v.exp()
    u = y - m
    c = 1 - m ** 2  # dm/dt
    a = -F.softplus(-s) - 0.5 * (_LOG2PI + v + u ** 2 / nu)
    b = -F.softplus(s) + expert.log_prob_at(y, expert.mean(x))
    ell = torch.logaddexp(a, b)
    r = torch.sigmoid(a - b)
    w1 = torch.sigmoid(s)
    w0w1 = w1 * (1 - w1)
    da_t, da_v = u * c / nu, 0.5 * (u ** 2 / nu - 1)
    grad = torch.stack([r - w1, r * da_t, r * da_v], dim=-1)
    D = torch.stack([torch.ones_like(s), da_t, da_v], dim=-1)
    hess = (r * (1 - r))[..., None, None] * D[..., :, None] * D[..., None, :]
    hess[..., 0, 0] -= w0w1
    hess[..., 1, 1] += r * (-(c ** 2) / nu - 2 * m * c * u / nu)
    hess[..., 1, 2] += -r * u * c / nu
    hess[..., 2, 1] += -r * u * c / nu
    hess[..., 2, 2] += -r * u ** 2 / (2 * nu)
    return ell, grad, hess


def nll_grad_hess(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                  expert: PretrainedExpert) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Average NLL, its gradient and its exact Hessian in θ, per repetition (analytic, batched)."""
    theta = _check_theta(theta, expert.d)
    ell, gq, hq = _local_derivatives(theta, _as_f64(x, "x"), _as_f64(y, "y"), expert)
    n, d = x.shape[-2], expert.d
    feats = [torch.cat([x, torch.ones_like(x[..., :1])], dim=-1), x, torch.ones_like(x[..., :1])]
    idx = [slice(0, d + 1), slice(d + 1, 2 * d + 1), slice(2 * d + 1, 2 * d + 2)]
    grad = torch.zeros(theta.shape, dtype=torch.float64)
    hess = torch.zeros(*theta.shape, theta.shape[-1], dtype=torch.float64)
    for i in range(3):
        grad[..., idx[i]] = -torch.einsum("...ni,...n->...i", feats[i], gq[..., i]) / n
        for j in range(i, 3):
            blk = -torch.einsum("...ni,...n,...nj->...ij", feats[i], hq[..., i, j], feats[j]) / n
            hess[..., idx[i], idx[j]] = blk
            hess[..., idx[j], idx[i]] = blk.transpose(-1, -2)
    return -ell.mean(dim=-1), grad, hess


@single_thread()
def fit_mle(x: torch.Tensor, y: torch.Tensor, expert: PretrainedExpert, theta_init: torch.Tensor,
            max_iter: int = 60, tol: float = 1e-13,
            tau_max: float = 8.0) -> tuple[torch.Tensor, torch.Tensor]:
    """The MLE of every repetition at once: Levenberg–Marquardt-damped Newton on θ.

    ``x`` (R, n, d), ``y`` (R, n), ``theta_init`` (R, 2d+2). Each repetition keeps its own damping
    λ (raised ×4 on a rejected step, lowered ÷4 on an accepted one) and stops once its Newton
    decrement gᵀH⁻¹g/2 falls below ``tol``. As in the theory, Θ is compact: steps that leave
    the box |β_j|, |η_j| ≤ 10, |τ| ≤ ``tau_max``, |log ν − log ν0| ≤ 8 are rejected.
    Returns (θ̂, converged mask).
    """
    theta = _check_theta(theta_init, expert.d).detach().clone()
    if theta.ndim != 2 or x.ndim != 3 or x.shape[0] != theta.shape[0]:
        raise ValueError(f"expected theta_init (R, p) and x (R, n, d) with the same R, got "
                         f"{tuple(theta.shape)} and {tuple(x.shape)}")
    R, p = theta.shape
    lam = torch.full((R,), 1e-3, dtype=torch.float64)
    done = torch.zeros(R, dtype=torch.bool)
    for _ in range(max_iter):
        loss, g, H = nll_grad_hess(theta, x, y, expert)
        scale = H.diagonal(dim1=-2, dim2=-1).abs().clamp_min(1e-12)
        for _ in range(30):  # raise λ until every damped Hessian is positive definite
            A = H + lam[:, None, None] * torch.diag_embed(scale)
            L_chol, info = torch.linalg.cholesky_ex(A)
            bad = info > 0
            if not bool(bad.any()):
                break
            lam = torch.where(bad, lam * 10, lam)
        step = -torch.cholesky_solve(g[..., None], L_chol)[..., 0]
        decrement = -(g * step).sum(-1) / 2
        done = done | (decrement < tol)
        if bool(done.all()):
            break
        trial = theta + step
        t = unpack(trial)
        inside = ((t["beta"].abs() <= 10).all(-1) & (t["eta"].abs() <= 10).all(-1)
                  & (t["tau"].abs() <= tau_max) & ((t["log_nu"] - math.log(expert.nu0)).abs() <= 8))
        with torch.no_grad():
            new_loss = neg_log_likelihood(trial, x, y, expert)
        accept = (new_loss <= loss) & torch.isfinite(new_loss) & inside & ~done
        theta = torch.where(accept[:, None], trial, theta)
        lam = torch.where(accept, (lam / 4).clamp_min(1e-12), lam * 4)
    return theta, done


# --- errors, rates, slopes -----------------------------------------------------------------------

def parameter_errors(theta_hat: torch.Tensor, theta_star: torch.Tensor) -> dict[str, torch.Tensor]:
    """‖β̂−β*‖, |e^τ̂ − e^τ*|, ‖η̂−η*‖, |ν̂−ν*| (the losses of Table 1), per repetition."""
    a, b = unpack(theta_hat), unpack(theta_star)
    return {"beta": (a["beta"] - b["beta"]).norm(dim=-1),
            "exp_tau": (a["tau"].exp() - b["tau"].exp()).abs(),
            "eta": (a["eta"] - b["eta"]).norm(dim=-1),
            "nu": (a["nu"] - b["nu"]).abs()}


@single_thread()
def hellinger_error(theta_hat: torch.Tensor, theta_star: torch.Tensor, expert: PretrainedExpert,
                    n_x: int = 400, n_y: int = 1401, seed: int = 0) -> torch.Tensor:
    """E_X[h(p_Ĝ(·|X), p_G*(·|X))] with h² = ½∫(√p − √q)² dy, per repetition of ``theta_hat``.

    The X-expectation is a Monte-Carlo average over ``n_x`` fixed draws; the y-integral is a
    trapezoid rule on [−1.5, 1.5] (the tanh means lie in [−1, 1], the noise s.d. is ~0.03).
    """
    theta_hat = _check_theta(theta_hat, expert.d)
    theta_star = _check_theta(theta_star, expert.d)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n_x, expert.d, generator=gen, dtype=torch.float64)
    yg = torch.linspace(-1.5, 1.5, n_y, dtype=torch.float64)
    m0 = expert.mean(x)[:, None]

    def log_p(theta):
        g = unpack(theta)
        s = (x @ g["beta"][..., None])  # (…, n_x, 1)
        s = s + g["tau"][..., None, None]
        m1 = torch.tanh(x @ g["eta"][..., None])
        return _mixture_log_pdf(yg, s, m0, m1, g["log_nu"][..., None, None], expert)

    root_star = (0.5 * log_p(theta_star)).exp()
    out = []
    for th in theta_hat.reshape(-1, theta_hat.shape[-1]):  # one repetition at a time: memory
        diff2 = ((0.5 * log_p(th)).exp() - root_star) ** 2
        h2 = 0.5 * torch.trapezoid(diff2, yg, dim=-1)
        out.append(h2.clamp_min(0).sqrt().mean())
    return torch.stack(out).reshape(theta_hat.shape[:-1])


@single_thread()
def rate_experiment(setting: str, ns: list[int], reps: int, seed: int = 0, d: int = 8,
                    init_noise: float = 0.05, n_x: int = 300) -> dict[str, Any]:
    """§4: for each n, draw ``reps`` data sets from G*(n), fit all by ``fit_mle`` and record errors.

    Returns ``{"ns", "errors": {param: (len(ns), reps)}, "hellinger": (len(ns), reps),
    "converged": fraction}`` as nested lists (JSON-ready).
    """
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")
    if not ns or any(not isinstance(n, (int, np.integer)) or n < 10 for n in ns):
        raise ValueError(f"ns must be a non-empty list of ints >= 10, got {ns!r}")
    reps = _check_pos_int(reps, "reps")
    errors = {k: [] for k in PARAMS}
    hell, conv = [], []
    for n in ns:
        expert, theta_star = paper_setting(setting, int(n), d)
        gen = torch.Generator().manual_seed(seed * 1_000_003 + int(n))  # keyed by n: subsets agree
        star = theta_star.expand(reps, -1)
        x, y = sample(int(n), star, expert, gen)
        theta0 = star + init_noise * torch.randn(star.shape, generator=gen, dtype=torch.float64)
        theta_hat, done = fit_mle(x, y, expert, theta0)
        for k, v in parameter_errors(theta_hat, theta_star).items():
            errors[k].append(v.tolist())
        hell.append(hellinger_error(theta_hat, theta_star, expert, n_x=n_x, seed=seed).tolist())
        conv.append(done.double().mean().item())
    return {"setting": setting, "ns": [int(n) for n in ns], "reps": reps, "errors": errors,
            "hellinger": hell, "converged": float(np.mean(conv))}


def fit_slope(ns, errors, level: float = 0.95, stat: str = "mean") -> dict[str, float]:
    """OLS slope of log(mean error over repetitions) on log n, with a t-based confidence interval.

    ``errors`` is (len(ns), reps) or (len(ns),) of per-repetition errors; ``stat="median"`` uses
    the median over repetitions (robust to the rare fit that runs to the edge of Θ).
    """
    if stat not in ("mean", "median"):
        raise ValueError(f"stat must be 'mean' or 'median', got {stat!r}")
    from scipy import stats

    ns = np.asarray(ns, dtype=float)
    err = np.asarray(errors, dtype=float)
    if err.ndim == 2:
        err = err.mean(axis=1) if stat == "mean" else np.median(err, axis=1)
    if ns.ndim != 1 or len(ns) < 3 or err.shape != ns.shape:
        raise ValueError(f"need >= 3 sample sizes and matching errors, got ns {ns.shape}, "
                         f"errors {np.shape(errors)}")
    if not np.all(err > 0) or not np.all(ns > 0):
        raise ValueError("ns and errors must be positive to take logs")
    res = stats.linregress(np.log(ns), np.log(err))
    half = stats.t.ppf(0.5 + level / 2, len(ns) - 2) * res.stderr
    return {"slope": res.slope, "intercept": res.intercept, "lo": res.slope - half,
            "hi": res.slope + half, "stderr": res.stderr}


# --- Definition 1: distinguishability as a numerical rank test -----------------------------------

def distinguishability_rank(family: str, mean: float = 0.0, nu: float = 1.0, mean0: float = 0.0,
                            nu0: float = 1.0, n_y: int = 2001) -> tuple[int, np.ndarray]:
    """Rank of {f0, f, ∂f/∂m, ∂f/∂ν} as functions of y (Definition 1 at one point).

    ``f0 = family(·|mean0, nu0)`` (variance ``nu0``) and ``f = N(·|mean, nu)``; the η-derivatives
    of f are ∂f/∂m · ∂h/∂η, so at fixed x they span the same function as ∂f/∂m. The four functions
    are sampled on a y grid (L² weights) and the singular values, divided by the largest, are
    returned; a value below ~1e-8 means a vanishing non-trivial linear combination.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    if nu <= 0 or nu0 <= 0:
        raise ValueError(f"nu and nu0 must be variances > 0, got {nu}, {nu0}")
    width = 8 * math.sqrt(max(nu, nu0)) + abs(mean - mean0)
    y = torch.linspace(min(mean, mean0) - width, max(mean, mean0) + width, n_y, dtype=torch.float64)
    expert = PretrainedExpert(family, torch.ones(1, dtype=torch.float64), float(nu0))
    f0 = expert.log_prob_at(y, torch.tensor(mean0, dtype=torch.float64)).exp()
    f = torch.exp(-0.5 * (_LOG2PI + math.log(nu) + (y - mean) ** 2 / nu))
    df_m = f * (y - mean) / nu  # ∂f/∂m
    df_v = 0.5 * f * ((y - mean) ** 2 / nu ** 2 - 1 / nu)  # ∂f/∂ν
    M = torch.stack([f0, f, df_m, df_v], dim=1) * math.sqrt((y[1] - y[0]).item())
    sv = torch.linalg.svdvals(M).numpy()
    sv = sv / sv[0]
    return int((sv > 1e-8).sum()), sv


def is_distinguishable(family: str, nu0: float = 1.0, n_grid: int = 5) -> bool:
    """Definition 1 over a grid of prompt parameters (m, ν) that includes f0's own (0, ν0)."""
    means = np.linspace(-1.0, 1.0, n_grid)
    nus = nu0 * np.array([0.5, 1.0, 2.0])
    return all(distinguishability_rank(family, float(m), float(v), 0.0, nu0)[0] == 4
               for m in means for v in nus)


@single_thread()
def fisher_information(theta: torch.Tensor, expert: PretrainedExpert, n_mc: int = 20_000,
                       seed: int = 0) -> torch.Tensor:
    """Per-sample Fisher information E[∇log p ∇log pᵀ] in θ (Monte Carlo over (X, Y) ~ p_θ)."""
    theta = _check_theta(theta, expert.d)
    if theta.ndim != 1:
        raise ValueError(f"theta must be one parameter vector (2d+2,), got {tuple(theta.shape)}")
    gen = torch.Generator().manual_seed(seed)
    x, y = sample(n_mc, theta, expert, gen)

    def logp(th, xi, yi):
        return log_density(yi[None], xi[None], th, expert)[0]

    scores = torch.func.vmap(torch.func.grad(logp), in_dims=(None, 0, 0))(theta, x, y)
    return scores.T @ scores / n_mc


def asymptotic_sd(theta: torch.Tensor, expert: PretrainedExpert, n_mc: int = 20_000,
                  seed: int = 0) -> dict[str, float]:
    """√n × the asymptotic s.d. of each Table-1 error, from the inverse Fisher information C = I⁻¹.

    Delta method: e^τ → e^τ √C_ττ, ν → ν √C_vv; vectors β, η → √tr C (≈ E‖error‖·√n).
    """
    C = torch.linalg.inv(fisher_information(theta, expert, n_mc, seed))
    d, g = expert.d, unpack(theta)
    return {"beta": C[:d, :d].trace().sqrt().item(),
            "exp_tau": (g["tau"].exp() * C[d, d].sqrt()).item(),
            "eta": C[d + 1:2 * d + 1, d + 1:2 * d + 1].trace().sqrt().item(),
            "nu": (g["nu"] * C[-1, -1].sqrt()).item()}


def _main() -> None:  # python -m neurips25.contaminated_moe
    import argparse

    from .results import save_results

    ap = argparse.ArgumentParser(description="Rate sweeps of §4 (stored for the chapter).")
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-min", type=float, default=1e3)
    ap.add_argument("--n-max", type=float, default=3.2e4)
    ap.add_argument("--points", type=int, default=6)
    args = ap.parse_args()
    ns = [int(round(v)) for v in np.geomspace(args.n_min, args.n_max, args.points)]
    data = {}
    for setting in SETTINGS:
        out = rate_experiment(setting, ns, args.reps, seed=args.seed)
        for stat in ("mean", "median"):
            out[f"slopes_{stat}"] = {k: fit_slope(ns, out["errors"][k], stat=stat) for k in PARAMS}
            out[f"slopes_{stat}"]["hellinger"] = fit_slope(ns, out["hellinger"], stat=stat)
        data[setting] = out
        print(setting, {k: round(v["slope"], 3) for k, v in out["slopes_mean"].items()}, flush=True)
    cmd = (f"python -m neurips25.contaminated_moe --reps {args.reps} --seed {args.seed} "
           f"--n-min {args.n_min:g} --n-max {args.n_max:g} --points {args.points}")
    print(save_results("contaminated_moe", data, cmd, args.seed))


if __name__ == "__main__":
    _main()
