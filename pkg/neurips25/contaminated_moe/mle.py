"""The MLE: a float64 L-BFGS LightningModule, and batched damped Newton for rate sweeps."""
from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F

from ..runtime import cap, lightning_module, make_trainer, single_thread
from .model import _LOG2PI, PretrainedExpert, _as_f64, _check_real, _check_theta, neg_log_likelihood, unpack

# --- the MLE as a Lightning module ---------------------------------------------------------------



class ContaminatedMoEMLE(lightning_module()):
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
        make_trainer(cap(epochs), precision="64-true").fit(model, loader)
    return model.theta.detach().clone()


# --- the MLE by batched damped Newton (for rate sweeps over many repetitions) ---------------------

def _log_parts(s, m, v, y, log_f0):
    """a = log(w1 N(y | m, e^v)) and b = log(w0 f0(y)) per sample, w1 = σ(s): ℓ = logaddexp(a, b)."""
    a = -F.softplus(-s) - 0.5 * (_LOG2PI + v + (y - m) ** 2 / v.exp())
    return a, -F.softplus(s) + log_f0


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
    a, b = _log_parts(s, m, v, y, expert.log_prob_at(y, expert.mean(x)))
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


#: Samples per block in ``nll_grad_hess``: the per-sample 3×3 blocks of a block stay in cache
#: (2.4× faster than one pass at n = 2·10⁵ on a loaded 2-core CPU; the sums agree to 1e-13).
BLOCK = 16_384


def nll_grad_hess(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                  expert: PretrainedExpert) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Average NLL, its gradient and its exact Hessian in θ, per repetition (analytic, batched).

    The sums over the n samples run over blocks of ``BLOCK`` samples (memory and speed at n = 10⁶).
    """
    theta = _check_theta(theta, expert.d)
    x, y = _as_f64(x, "x"), _as_f64(y, "y")
    n, d = x.shape[-2], expert.d
    if n < 1:
        raise ValueError("x and y must hold at least one sample (n >= 1)")
    idx = [slice(0, d + 1), slice(d + 1, 2 * d + 1), slice(2 * d + 1, 2 * d + 2)]
    total = torch.zeros(theta.shape[:-1], dtype=torch.float64, device=theta.device)
    grad = torch.zeros(theta.shape, dtype=torch.float64, device=theta.device)
    hess = torch.zeros(*theta.shape, theta.shape[-1], dtype=torch.float64, device=theta.device)
    for start in range(0, n, BLOCK):
        xb, yb = x[..., start:start + BLOCK, :], y[..., start:start + BLOCK]
        ell, gq, hq = _local_derivatives(theta, xb, yb, expert)
        ones = torch.ones_like(xb[..., :1])
        feats = [torch.cat([xb, ones], dim=-1), xb, ones]
        total -= ell.sum(dim=-1)
        for i in range(3):
            grad[..., idx[i]] -= torch.einsum("...ni,...n->...i", feats[i], gq[..., i])
            for j in range(i, 3):
                hess[..., idx[i], idx[j]] -= torch.einsum("...ni,...n,...nj->...ij", feats[i],
                                                          hq[..., i, j], feats[j])
    for i in range(3):  # the lower blocks by symmetry
        for j in range(i + 1, 3):
            hess[..., idx[j], idx[i]] = hess[..., idx[i], idx[j]].transpose(-1, -2)
    return total / n, grad / n, hess / n


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
    tol, tau_max = _check_real(tol, "tol"), _check_real(tau_max, "tau_max")
    R, p = theta.shape
    lam = torch.full((R,), 1e-3, dtype=torch.float64, device=theta.device)
    done = torch.zeros(R, dtype=torch.bool, device=theta.device)
    for _ in range(cap(max_iter)):
        act = (~done).nonzero()[:, 0]  # converged repetitions are not recomputed
        xa, ya = (x, y) if len(act) == R else (x[act], y[act])
        loss, g, H = nll_grad_hess(theta[act], xa, ya, expert)
        scale = H.diagonal(dim1=-2, dim2=-1).abs().clamp_min(1e-12)
        for _ in range(30):  # raise λ until every damped Hessian is positive definite
            A = H + lam[act, None, None] * torch.diag_embed(scale)
            L_chol, info = torch.linalg.cholesky_ex(A)
            bad = info > 0
            if not bool(bad.any()):
                break
            lam[act] = torch.where(bad, lam[act] * 10, lam[act])
        step = -torch.cholesky_solve(g[..., None], L_chol)[..., 0]
        now_done = -(g * step).sum(-1) / 2 < tol  # the Newton decrement
        done[act] = now_done
        if bool(done.all()):
            break
        trial = theta[act] + step
        finite = torch.isfinite(trial).all(-1)  # a failed solve is rejected, not evaluated
        trial = torch.where(finite[:, None], trial, theta[act])
        t = unpack(trial)
        inside = ((t["beta"].abs() <= 10).all(-1) & (t["eta"].abs() <= 10).all(-1)
                  & (t["tau"].abs() <= tau_max) & ((t["log_nu"] - math.log(expert.nu0)).abs() <= 8))
        with torch.no_grad():
            new_loss = neg_log_likelihood(trial, xa, ya, expert)
        accept = (new_loss <= loss) & torch.isfinite(new_loss) & inside & finite & ~now_done
        theta[act] = torch.where(accept[:, None], trial, theta[act])
        lam[act] = torch.where(accept, (lam[act] / 4).clamp_min(1e-12), lam[act] * 4)
    return theta, done


# --- the MLE by EM, stopped as MoE codes usually stop it (the paper's §4 estimator) ---------------

def _weighted_newton_gate(w, feats, r, steps):
    """M-step of the gate: a few Newton steps of max_w Σ r log σ(s) + (1−r) log σ(−s), s = feats·w."""
    for _ in range(steps):
        s = torch.einsum("...ni,...i->...n", feats, w)
        p = torch.sigmoid(s)
        g = torch.einsum("...ni,...n->...i", feats, r - p)
        H = torch.einsum("...ni,...n,...nj->...ij", feats, p * (1 - p), feats)
        H = H + 1e-10 * torch.eye(H.shape[-1], dtype=H.dtype, device=H.device)
        w = w + torch.linalg.solve(H, g[..., None])[..., 0]
    return w


@single_thread()
def fit_em(x: torch.Tensor, y: torch.Tensor, expert: PretrainedExpert, theta_init: torch.Tensor,
           rtol: float = 1e-6, max_iter: int = 2000,
           m_steps: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """EM for eq. (1), stopped when the relative change of the log-likelihood falls below ``rtol``.

    The usual EM for a mixture of experts (and the stopping rule of common MoE codes, e.g. R's
    ``meteorits``: |ℓ_t − ℓ_{t−1}| / |ℓ_{t−1}| ≤ 10⁻⁶). E-step: the prompt's responsibility r_i.
    M-step, ``m_steps`` Newton steps each: the gate (β, τ) by weighted logistic regression on r, the
    prompt's η by weighted Gauss–Newton least squares, then ν = Σ r (y − tanh(ηᵀx))² / Σ r in closed
    form. ``x`` (R, n, d), ``y`` (R, n), ``theta_init`` (R, 2d+2); each repetition stops on its own.
    Returns (θ̂, number of EM iterations per repetition).
    """
    theta = _check_theta(theta_init, expert.d).detach().clone()
    if theta.ndim != 2 or x.ndim != 3 or x.shape[0] != theta.shape[0]:
        raise ValueError(f"expected theta_init (R, p) and x (R, n, d) with the same R, got "
                         f"{tuple(theta.shape)} and {tuple(x.shape)}")
    if not (isinstance(rtol, float) and rtol > 0):
        raise ValueError(f"rtol must be a float > 0, got {rtol!r}")
    R, d = theta.shape[0], expert.d
    ones = torch.ones_like(x[..., :1])
    gate_feats = torch.cat([x, ones], dim=-1)
    log_f0 = expert.log_prob_at(y, expert.mean(x))
    prev = torch.full((R,), float("nan"), dtype=torch.float64)
    iters = torch.zeros(R, dtype=torch.long)
    active = torch.ones(R, dtype=torch.bool)
    for _ in range(cap(max_iter)):
        act = active.nonzero()[:, 0]
        th, xa, ya, fa, la = theta[act], x[act], y[act], gate_feats[act], log_f0[act]
        g = unpack(th)
        s = torch.einsum("...ni,...i->...n", fa, th[..., :d + 1])
        m = torch.tanh(torch.einsum("...nd,...d->...n", xa, g["eta"]))
        a, b = _log_parts(s, m, g["log_nu"][..., None], ya, la)
        ll = torch.logaddexp(a, b).sum(-1)
        stop = (ll - prev[act]).abs() <= rtol * prev[act].abs()
        prev[act] = ll
        if bool(stop.any()):
            active[act[stop]] = False
            keep = ~stop
            act, th, xa, ya, fa, a, b = act[keep], th[keep], xa[keep], ya[keep], fa[keep], a[keep], b[keep]
            if len(act) == 0:
                break
        iters[act] += 1
        r = torch.sigmoid(a - b)  # E-step
        w = _weighted_newton_gate(th[..., :d + 1], fa, r, m_steps)
        eta = unpack(th)["eta"]
        for _ in range(m_steps):  # weighted Gauss–Newton for η
            m = torch.tanh(torch.einsum("...nd,...d->...n", xa, eta))
            J = (1 - m ** 2)[..., None] * xa
            JtJ = torch.einsum("...ni,...n,...nj->...ij", J, r, J)
            Jtr = torch.einsum("...ni,...n->...i", J, r * (ya - m))
            eta = eta + torch.linalg.solve(JtJ, Jtr[..., None])[..., 0]
        m = torch.tanh(torch.einsum("...nd,...d->...n", xa, eta))
        nu = (r * (ya - m) ** 2).sum(-1) / r.sum(-1)
        theta[act] = torch.cat([w, eta, nu.log()[..., None]], dim=-1)
    return theta, iters
