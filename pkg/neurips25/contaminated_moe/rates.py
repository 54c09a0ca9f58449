"""Errors, rates and slopes (Table 1, §4), Definition 1 as a rank test, Fisher information."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..runtime import check_int, single_thread
from .mle import fit_mle
from .model import (
    _LOG2PI,
    FAMILIES,
    PARAMS,
    SETTINGS,
    PretrainedExpert,
    _check_theta,
    _mixture_log_pdf,
    log_density,
    paper_setting,
    sample,
    unpack,
)

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
    reps = check_int(reps, "reps")
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


@single_thread()
def mle_errors(setting: str, n: int, reps: int, seed: int = 0, delta: float | None = None,
               f0_family: str | None = None, tau_max: float = 8.0, chunk: int = 4,
               init_noise: float = 0.05, gate: str = "paper",
               delta_scale: float = 1.0) -> dict[str, Any]:
    """Fit ``reps`` data sets of size ``n`` from ``paper_setting(setting, n, …)`` (``delta``,
    ``f0_family``, ``gate`` and ``delta_scale`` are passed on).

    Like one ``n`` of ``rate_experiment`` without the Hellinger integral, fitted ``chunk``
    repetitions at a time so that ``n = 10⁶`` fits in memory, and with the box bound ``tau_max``
    exposed. Returns per-repetition errors, the converged mask, τ̂ and whether it ended on the box
    (steps that leave the box are rejected, so a fit pushed outwards creeps up to the bound and
    may stop just inside it: ``tau_hat`` tells how close).
    """
    reps, n, chunk = check_int(reps, "reps"), check_int(n, "n", 10), check_int(chunk, "chunk")
    if not tau_max > 0:
        raise ValueError(f"tau_max must be > 0, got {tau_max!r}")
    expert, theta_star = paper_setting(setting, n, delta=delta, f0_family=f0_family, gate=gate,
                                       delta_scale=delta_scale)
    gen = torch.Generator().manual_seed(seed * 1_000_003 + n + 17)
    errs, conv, tau_hat = {k: [] for k in PARAMS}, [], []
    for start in range(0, reps, chunk):
        star = theta_star.expand(min(chunk, reps - start), -1)
        x, y = sample(n, star, expert, gen)
        theta0 = star + init_noise * torch.randn(star.shape, generator=gen, dtype=torch.float64)
        theta_hat, done = fit_mle(x, y, expert, theta0, tau_max=tau_max)
        for k, v in parameter_errors(theta_hat, theta_star).items():
            errs[k] += v.tolist()
        conv += done.tolist()
        tau_hat += unpack(theta_hat)["tau"].tolist()
    edge = [abs(t) >= tau_max - 1e-6 for t in tau_hat]
    return {"setting": setting, "n": n, "reps": reps, "delta": delta, "f0_family": f0_family,
            "gate": gate, "delta_scale": delta_scale, "tau_max": tau_max,
            "errors": errs, "converged": conv, "at_tau_bound": edge, "tau_hat": tau_hat}


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

    def logp(th, xi, yi):  # x, y come from ``sample``: finite, and batched under vmap
        return log_density(yi[None], xi[None], th, expert, check_data=False)[0]

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
