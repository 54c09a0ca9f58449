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
- ``fit_em``: EM stopped on a relative log-likelihood tolerance (how MoE codes fit it; §4 uses EM).
- ``hellinger_error``, ``parameter_errors``, ``rate_experiment``, ``fit_slope``: Table 1 / §4.
- ``distinguishability_rank`` / ``is_distinguishable``: a numerical rank test of Definition 1.
- ``fisher_information``: the per-sample Fisher information, for asymptotic error predictions.

Modules: ``model`` (the density), ``mle`` (the two estimators), ``rates`` (errors, rates, Definition 1,
Fisher information); ``python -m neurips25.contaminated_moe`` regenerates the stored rate sweeps.
"""
from .mle import ContaminatedMoEMLE, fit_em, fit_mle, fit_with_lightning, nll_grad_hess
from .model import (
    FAMILIES,
    GATES,
    PARAMS,
    SETTINGS,
    THEORY_SLOPES,
    PretrainedExpert,
    log_density,
    neg_log_likelihood,
    pack,
    paper_setting,
    sample,
    unpack,
)
from .rates import (
    asymptotic_sd,
    distinguishability_rank,
    fisher_information,
    fit_slope,
    hellinger_error,
    is_distinguishable,
    mle_errors,
    parameter_errors,
    rate_experiment,
)

__all__ = [
    "FAMILIES", "GATES", "SETTINGS", "THEORY_SLOPES", "PARAMS", "PretrainedExpert", "pack", "unpack", "paper_setting",
    "log_density", "neg_log_likelihood", "sample", "ContaminatedMoEMLE", "fit_with_lightning",
    "fit_mle", "fit_em", "nll_grad_hess", "parameter_errors", "hellinger_error", "rate_experiment", "fit_slope",
    "distinguishability_rank", "is_distinguishable", "fisher_information", "asymptotic_sd", "mle_errors",
]
