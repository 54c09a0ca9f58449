"""The model: the frozen expert f0, the parameter vector θ and the density (eq. (1))."""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from ..runtime import check_int

FAMILIES = ("gaussian", "laplace")
SETTINGS = ("distinguishable", "nondist_eta", "nondist_nu")
#: The gate of G*: the paper's β* = 1/√d, or β* = 0 (an input-independent weight).
GATES = ("paper", "constant")
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
    if not bool(torch.isfinite(theta).all()):
        raise ValueError("theta must be finite (NaN or inf in the parameter vector)")
    return theta


def _check_real(value: Any, name: str, low: float = 0.0, strict: bool = True) -> float:
    """A finite real number > ``low`` (``strict``) or >= ``low``; bools are not numbers here."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value)
            or (value <= low if strict else value < low)):
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} {low}, got {value!r}")
    return float(value)


def paper_setting(name: str, n: int, d: int = 8, delta: float | None = None,
                  f0_family: str | None = None, gate: str = "paper",
                  delta_scale: float = 1.0) -> tuple[PretrainedExpert, torch.Tensor]:
    """(f0, θ*) for the §4 experiments: X ~ N(0, I_d), η0 = e1, ν0 = 0.001, β* = 1/√d, τ* = 1.

    - ``distinguishable``: f0 Laplace, η* = −e1, ν* = 0.001.
    - ``nondist_eta`` (i): both Gaussian, η* = e1(1 + Δ) with Δ = n^{-1/8}.
    - ``nondist_nu`` (ii): both Gaussian, η* = e1, ν* = ν0(1 + Δ). (The paper's text prints
      η* = −e1 here; then ‖η* − η0‖ = 2 and the prompt never approaches f0, so we read it as η0.)
    ``delta`` overrides Δ = n^{-1/8} (used to study a fixed overlap); ``delta_scale`` c gives
    Δ = c·n^{-1/8} (still the paper's "O(n^{-1/8}) perturbation"); ``f0_family`` swaps the family
    of f0 (e.g. a Laplace f0 in the "nondist" geometry, which is then distinguishable);
    ``gate="constant"`` sets β* = 0, an input-independent gate (Table 1's worst case, where
    sd(e^τ̂) ∝ Δ^{-2}; with the paper's β* it is ∝ Δ^{-1} as Δ → 0).
    """
    if name not in SETTINGS:
        raise ValueError(f"name must be one of {SETTINGS}, got {name!r}")
    if gate not in GATES:
        raise ValueError(f"gate must be one of {GATES}, got {gate!r}")
    delta_scale = _check_real(delta_scale, "delta_scale")
    n, d = check_int(n, "n"), check_int(d, "d")
    # Δ is a relative perturbation: Δ < 0 flips or shrinks η*/ν* towards 0 (ν* = 0 at Δ = −1)
    delta = delta_scale * n ** (-1 / 8) if delta is None else _check_real(delta, "delta", strict=False)
    e1 = torch.zeros(d, dtype=torch.float64)
    e1[0] = 1.0
    beta = torch.full((d,), 1 / math.sqrt(d) if gate == "paper" else 0.0, dtype=torch.float64)
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
                expert: PretrainedExpert, *, check_data: bool = True) -> torch.Tensor:
    """log p_G(y|x) of eq. (1); ``x`` (…, n, d), ``y`` (…, n), ``θ`` (…, 2d+2) → (…, n).

    ``check_data=False`` skips the finiteness check of x and y (a data-dependent branch, which
    ``torch.func.vmap`` cannot trace when the data are batched)."""
    x, y = _as_f64(x, "x"), _as_f64(y, "y")
    if x.ndim < 2 or x.shape[-1] != expert.d:
        raise ValueError(f"x must have shape (..., n, d={expert.d}), got {tuple(x.shape)}")
    if y.shape != x.shape[:-1]:
        raise ValueError(f"y must have shape {tuple(x.shape[:-1])} (x without d), got {tuple(y.shape)}")
    if check_data and not (bool(torch.isfinite(x).all()) and bool(torch.isfinite(y).all())):
        raise ValueError("x and y must be finite (NaN or inf in the data)")
    theta = _check_theta(theta, expert.d)
    g = unpack(theta)
    s = torch.einsum("...nd,...d->...n", x, g["beta"]) + g["tau"][..., None]
    m1 = torch.tanh(torch.einsum("...nd,...d->...n", x, g["eta"]))
    return _mixture_log_pdf(y, s, expert.mean(x), m1, g["log_nu"][..., None], expert)


def neg_log_likelihood(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                       expert: PretrainedExpert) -> torch.Tensor:
    """Average negative log-likelihood −(1/n) Σ log p_G(y_i|x_i), one value per repetition."""
    logp = log_density(y, x, theta, expert)
    if logp.shape[-1] == 0:
        raise ValueError("x and y must hold at least one sample (n >= 1): the mean of none is NaN")
    return -logp.mean(dim=-1)


def sample(n: int, theta: torch.Tensor, expert: PretrainedExpert,
           generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw X ~ N(0, I_d), then Y | X from eq. (1); θ (…, 2d+2) gives x (…, n, d), y (…, n)."""
    n = check_int(n, "n")
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
