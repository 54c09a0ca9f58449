"""Robustness checks: a small Maros–Meszaros-style set of classic QPs built in code, degenerate,
ill-conditioned and weakly-active QPs, KKT residuals, and the loose-solver stress test of active-set
identification.

The paper's robustness headline is on the 138-problem Maros–Meszaros collection (129 convex QPs
solved by dQP vs 77 by QPLayer and 38 by OptNet). That collection is not available offline; the
Hock–Schittkowski problems below belong to it and are written out from their published definitions
(objective, constraints, known optimum f*), the rest are constructed to hit the failure modes the
collection is known for: singular P, linearly dependent active constraints, bad conditioning and
weakly active constraints.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
import torch

from ..runtime import check_int
from .core import dqp_solve

__all__ = ["classic_qps", "kkt_residuals", "run_dqp", "baseline_solves", "loose_solver_stress",
           "hard_qps", "protocol_solves", "protocol_table", "PAPER_PROTOCOL",
           "LOOSE_OPTIONS", "weakly_active_qp"]

NAMES = ("P", "q", "A", "b", "C", "d")

# The backends' own default tolerances (qpsolvers passes these through): what a user gets without
# tuning. dQP's SOLVER_OPTIONS tighten them; the stress test undoes that.
LOOSE_OPTIONS = {
    "osqp": dict(eps_abs=1e-3, eps_rel=1e-3, polishing=False, max_iter=4000),
    "scs": dict(eps_abs=1e-4, eps_rel=1e-4, max_iters=100_000),
}


def _t(x) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def _qp(P, q, A=None, b=None, C=None, d=None, f_star=None, const=0.0, x_star=None, note=""):
    n = len(q)
    A = np.zeros((0, n)) if A is None else np.atleast_2d(A)
    C = np.zeros((0, n)) if C is None else np.atleast_2d(C)
    b = np.zeros(0) if b is None else np.asarray(b, float)
    d = np.zeros(0) if d is None else np.asarray(d, float)
    return dict(P=_t(P), q=_t(q), A=_t(A), b=_t(b), C=_t(C), d=_t(d), f_star=f_star, const=const,
                x_star=None if x_star is None else _t(x_star), note=note)


def _box(n, lo, hi):
    """Rows of lo <= x <= hi as C x <= d (skipping infinite bounds)."""
    C, d = [], []
    for i in range(n):
        e = np.eye(n)[i]
        if lo[i] is not None:
            C.append(-e)
            d.append(-lo[i])
        if hi[i] is not None:
            C.append(e)
            d.append(hi[i])
    return np.array(C), np.array(d)


def weakly_active_qp(n: int = 6, seed: int = 0) -> dict:
    """A planted QP whose first inequality is *weakly* active: tight (C_0 z* = d_0) with multiplier 0.
    The solution map has a kink there: the derivative w.r.t. d_0 jumps between 0 (row dropped) and the
    equality-constrained value (row kept)."""
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    P = M @ M.T / n + np.eye(n)
    C = rng.standard_normal((3, n))
    z = rng.standard_normal(n)
    mu = np.array([0.0, 0.7, 0.0])  # row 0 weakly active, row 1 strongly active, row 2 inactive
    d = C @ z + np.array([0.0, 0.0, 0.5])
    q = -(P @ z + C.T @ mu)
    return _qp(P, q, C=C, d=d, x_star=z, note="row 0 tight with zero multiplier")


def classic_qps(seed: int = 0) -> dict[str, dict]:
    """Classic and constructed QPs, each ``dict(P, q, A, b, C, d, f_star, const, x_star, note)``.

    ``f_star`` is the published optimum of ½xᵀPx + qᵀx + const (Hock & Schittkowski 1981; all of these
    HS problems are in the Maros–Meszaros set)."""
    out = {}
    C, d = _box(2, [2, -50], [50, 50])
    out["HS21"] = _qp(np.diag([0.02, 2.0]), [0, 0], C=np.vstack([[-10, 1], C]), d=np.r_[-10, d],
                      f_star=-99.96, const=-100.0, x_star=[2, 0], note="bounds + 1 row")
    C, d = _box(3, [0, 0, 0], [None] * 3)
    out["HS35"] = _qp([[4, 2, 2], [2, 4, 0], [2, 0, 2]], [-8, -6, -4], C=np.vstack([[1, 1, 2], C]),
                      d=np.r_[3, d], f_star=1 / 9, const=9.0, x_star=[4 / 3, 7 / 9, 4 / 9],
                      note="x >= 0 + 1 row")
    Pa = np.array([[2, 0, -1, 0], [0, 1, 0, 0], [-1, 0, 2, 1], [0, 0, 1, 1.0]])
    C, d = _box(4, [0] * 4, [None] * 4)
    out["HS76"] = _qp(Pa, [-1, -3, 1, -1],
                      C=np.vstack([[1, 2, 1, 1], [3, 1, 2, -1], [0, -1, -4, 0], C]),
                      d=np.r_[5, 4, -1.5, d], f_star=-4.681818181818182,
                      x_star=[3 / 11, 23 / 11, 0, 6 / 11], note="x >= 0 + 3 rows")
    # HS51/52/53: sums of squares with a singular Hessian, equality constrained.
    B = np.array([[1, 3, 0, 0, 0], [0, 0, 1, 1, -2], [0, 1, 0, 0, -1.0]])

    def sq(rows, consts):  # Σ (r_i·x − c_i)²  ->  P = 2 RᵀR, q = −2 Rᵀc, const = Σ c_i²
        R, c = np.array(rows, float), np.array(consts, float)
        return 2 * R.T @ R, -2 * R.T @ c, float(c @ c)

    rows = [[1, -1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1]]
    P51, q51, c51 = sq(rows, [0, 2, 1, 1])
    out["HS51"] = _qp(P51, q51, A=B, b=[4, 0, 0], f_star=0.0, const=c51, x_star=[1] * 5,
                      note="singular P, 3 equalities")
    P52, q52, c52 = sq([[4, -1, 0, 0, 0]] + rows[1:], [0, 2, 1, 1])
    out["HS52"] = _qp(P52, q52, A=B, b=[0, 0, 0], f_star=1859 / 349, const=c52,
                      note="singular P, 3 equalities")
    C, d = _box(5, [-10] * 5, [10] * 5)
    out["HS53"] = _qp(P51, q51, A=B, b=[0, 0, 0], C=C, d=d, f_star=176 / 43, const=c51,
                      note="singular P, equalities + box")
    # Degenerate: every box row of a projection repeated 3 times -> 6 active rows for n = 2
    # (more active constraints than unknowns, linearly dependent: LICQ fails, K_J singular).
    C, d = _box(2, [-1, -1], [1, 1])
    out["DEGEN"] = _qp(np.eye(2), [-2, -3], C=np.vstack([C] * 3), d=np.tile(d, 3), x_star=[1, 1],
                       note="active rows duplicated x3 (LICQ fails)")
    # Ill-conditioned: cond(P) = 1e8, random constraints with a planted active set.
    rng = np.random.default_rng(seed)
    n = 20
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    P = Q @ np.diag(np.logspace(0, 8, n)) @ Q.T
    Cm = rng.standard_normal((15, n))
    z = rng.standard_normal(n)
    mu = np.r_[rng.uniform(0.1, 1, 5), np.zeros(10)]
    dd = Cm @ z + np.r_[np.zeros(5), rng.uniform(0.1, 1, 10)]
    out["ILLCOND"] = _qp((P + P.T) / 2, -(P @ z + Cm.T @ mu), C=Cm, d=dd, x_star=z,
                         note="cond(P) = 1e8, 5 of 15 rows active")
    out["WEAK"] = weakly_active_qp(seed=seed)
    # Nearly an LP: tiny curvature, the solution sits at a vertex of a random polytope.
    n = 10
    Cm = np.vstack([rng.standard_normal((30, n)), np.eye(n), -np.eye(n)])
    out["NEARLP"] = _qp(1e-6 * np.eye(n), rng.standard_normal(n), C=Cm,
                        d=np.r_[np.abs(rng.standard_normal(30)) + 0.1, np.full(2 * n, 5.0)],
                        note="P = 1e-6 I: a vertex solution")
    return out


def kkt_residuals(qp: dict, z, lam, mu) -> dict[str, float]:
    """Primal feasibility, stationarity, complementarity and dual feasibility (∞-norms)."""
    P, q, A, b, C, d = (qp[k].numpy() for k in NAMES)
    z, lam, mu = (np.asarray(v, dtype=np.float64) for v in (z, lam, mu))
    lam = lam if lam.size else np.zeros(0)
    mu = mu if mu.size else np.zeros(0)
    r = C @ z - d
    return dict(
        primal=float(max(np.abs(A @ z - b).max(initial=0), np.maximum(r, 0).max(initial=0))),
        dual=float(np.abs(P @ z + q + A.T @ lam + C.T @ mu).max()),
        compl=float(np.abs(mu * r).max(initial=0)),
        mu_min=float(mu.min(initial=0)),
    )


def run_dqp(qp: dict, solver: str = "clarabel", **kw) -> dict:
    """Forward + backward with dQP; times, KKT residuals, objective error and the gradient of ⟨g, z⟩."""
    args = [qp[k].clone().requires_grad_(True) for k in NAMES]
    m_eq, m_in = qp["A"].shape[0], qp["C"].shape[0]
    pass_args = [args[0], args[1], *(args[2:4] if m_eq else (None, None)),
                 *(args[4:6] if m_in else (None, None))]
    t0 = time.perf_counter()
    res = dqp_solve(*pass_args, solver=solver, check_psd=True, **kw)
    t1 = time.perf_counter()
    g = torch.linspace(-1, 1, len(qp["q"]), dtype=torch.float64)
    grads = torch.autograd.grad((g * res.z).sum(), [a for a in pass_args if a is not None],
                                allow_unused=True)
    t2 = time.perf_counter()
    z = res.z.detach().numpy()
    P, q = qp["P"].numpy(), qp["q"].numpy()
    f = 0.5 * z @ P @ z + q @ z + qp["const"]
    out = dict(t_fwd=t1 - t0, t_bwd=t2 - t1, z=z, f=f, lstsq=bool(res.lstsq), refined=int(res.refined),
               active=res.active.numpy(), grad_q=grads[1].numpy(),
               **kkt_residuals(qp, z, res.lam.detach().numpy(), res.mu.detach().numpy()))
    out["f_err"] = None if qp["f_star"] is None else abs(f - qp["f_star"]) / max(1.0, abs(qp["f_star"]))
    out["finite"] = all(gr is None or bool(torch.isfinite(gr).all()) for gr in grads)
    return out


def baseline_solves(qp: dict, method: str, z_ref: np.ndarray, grad_ref: np.ndarray,
                    tol: float = 1e-4) -> dict:
    """Run one baseline layer on ``qp``: solved = no error, z within ``tol`` of the reference (relative
    to 1 + |z_ref|), and a finite gradient; also the gradient's relative distance to dQP's."""
    from . import baselines

    f = {"qpth": baselines.qpth_solve, "qplayer": baselines.qplayer_solve,
         "full_kkt": baselines.kkt_solve}.get(method)
    args = [qp[k].clone().requires_grad_(True) for k in NAMES]
    g = torch.linspace(-1, 1, len(qp["q"]), dtype=torch.float64)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if method == "cvxpylayers":
                m_in, m_eq = qp["C"].shape[0], qp["A"].shape[0]
                layer = baselines.cvxpy_qp_layer(qp["P"].numpy(), m_in, m_eq)
                z = layer(args[1], *(args[2:4] if m_eq else ()), *(args[4:6] if m_in else ()))[0]
            else:
                z = f(*args)
            gq = torch.autograd.grad((g * z).sum(), args[1])[0].detach().numpy()
        z = z.detach().numpy()
    except Exception as e:  # noqa: BLE001 - a baseline failing is the measurement
        return dict(solved=False, error=type(e).__name__ + ": " + str(e).split("\n")[0][:80],
                    z_err=np.inf, grad_err=np.inf)
    z_err = float(np.abs(z - z_ref).max() / (1 + np.abs(z_ref).max()))
    grad_err = float(np.abs(gq - grad_ref).max() / (1 + np.abs(grad_ref).max()))
    ok = bool(np.isfinite(z).all() and np.isfinite(gq).all() and z_err < tol)
    return dict(solved=ok, error="" if ok else f"z off by {z_err:.1e}", z_err=z_err, grad_err=grad_err)


def loose_solver_stress(margins, seeds, solver: str = "osqp", eps_active: float = 1e-6,
                        max_refine: int = 25, n: int = 30, m: int = 40, p: int = 5,
                        n_active: int = 10) -> dict:
    """Active-set identification from a solver run at its *default* (loose) tolerance.

    Planted QPs whose strongly active multipliers and inactive slacks are both >= ``margin``; dQP
    thresholds the loose solver's z at ``eps_active`` and refines. Returns, per margin, the fraction of
    seeds whose active set is exactly the planted one and the worst relative error (max over all six
    data arguments) of dQP's gradient of ⟨g, z⟩ against the exact derivative of the planted QP,
    :func:`~neurips25.dqp.problems.planted_gradient`: one dense solve of the KKT system of the planted
    z*, duals and active set, with neither a solver nor dQP's backward pass."""
    from .problems import planted_gradient, planted_qp

    out = {}
    for margin in margins:
        right, errs, refined = [], [], []
        for s in seeds:
            qp = planted_qp(n, m, p, n_active, seed=s, margin=float(margin))
            g = torch.randn(n, generator=torch.Generator().manual_seed(1000 + s), dtype=torch.float64)
            args = [qp[k].clone().requires_grad_(True) for k in NAMES]
            g_ref = planted_gradient(qp, g)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = dqp_solve(*args, solver=solver, eps_active=eps_active, max_refine=max_refine,
                                **LOOSE_OPTIONS[solver])
            gr = torch.autograd.grad((g * res.z).sum(), args)
            right.append(bool((res.active == qp["active"]).all()))
            refined.append(int(res.refined))
            errs.append(max(float((a - b).abs().max() / (1 + b.abs().max())) for a, b in zip(gr, g_ref)))
        out[float(margin)] = dict(right=float(np.mean(right)), worst_grad_err=float(max(errs)),
                                  refined=float(np.mean(refined)))
    return out


# --- The paper's robustness protocol (official experiments/mega_test/mega_exp.py + exp_utils.py) ---
# Every layer runs at eps = 1e-6 (QPLayer with maxIter = 100, structural_feasibility=True; OptNet at
# its default 20 iterations); a method *solves* a problem when forward and backward (x.backward of a
# ones vector) finish without an exception or NaN within the time limit (800 s) and four absolute
# ∞-norms of its own primal-dual output are <= success_thr = 1: equality residual, inequality
# residual, dual residual ‖Px + q + Aᵀλ + Cᵀμ‖ and duality gap |xᵀPx + qᵀx + bᵀλ + dᵀμ|. Problems
# without inequalities are skipped. dQP runs as "dQP_best": the best forward solver per problem.
PAPER_PROTOCOL = dict(eps=1e-6, qplayer_max_iter=100, success_thr=1.0)
DQP_SOLVER_ORDER = ("clarabel", "highs", "osqp", "scs")


def hard_qps(seed: int = 0, n: int = 12) -> dict[str, dict]:
    """Five seeded QPs with the features that make Maros–Meszaros hard for dense layers.

    BIGBND: 6 zero-curvature (free) directions held only by |x_i| <= 1e6 bounds and 4 general rows
    (large bound magnitudes, singular P); RANKEQ: 5 equalities of rank 3 (a row repeated and a sum
    of two rows: LICQ fails); LP: P = 0 with a vertex solution; SCALED: cond(P) = 1e10 and rows
    scaled from 1e-3 to 1e3 with a planted active set; BIGLP: an LP with costs ~1e3 and bounds 1e4
    (the large data magnitudes of Maros–Meszaros)."""
    n = check_int(n, "n", 7)
    rng = np.random.default_rng(seed)
    out = {}
    k = 6
    M = rng.standard_normal((n - k, n - k))
    P = np.zeros((n, n))
    P[k:, k:] = M @ M.T / n + np.eye(n - k)
    Cb, db = _box(n, [-1e6] * n, [1e6] * n)
    G = rng.standard_normal((4, n))
    out["BIGBND"] = _qp(P, rng.standard_normal(n), C=np.vstack([G, Cb]),
                        d=np.r_[1e3 * np.abs(rng.standard_normal(4)), db],
                        note="P singular (6 free directions), bounds 1e6")
    A0 = rng.standard_normal((3, n))
    A = np.vstack([A0, A0[0], A0[1] + A0[2]])
    z0 = rng.standard_normal(n)
    M = rng.standard_normal((n, n))
    Cm = rng.standard_normal((8, n))
    out["RANKEQ"] = _qp(M @ M.T / n + 1e-3 * np.eye(n), rng.standard_normal(n), A=A, b=A @ z0, C=Cm,
                        d=Cm @ z0 + np.r_[np.zeros(3), rng.uniform(0.1, 1, 5)],
                        note="5 equalities of rank 3 (LICQ fails)")
    Cm = np.vstack([rng.standard_normal((20, n)), np.eye(n), -np.eye(n)])
    out["LP"] = _qp(np.zeros((n, n)), rng.standard_normal(n), C=Cm,
                    d=np.r_[np.abs(rng.standard_normal(20)) + 0.1, np.full(2 * n, 10.0)],
                    note="P = 0: a linear program")
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    P = Q @ np.diag(np.logspace(-4, 6, n)) @ Q.T
    S = np.logspace(-3, 3, 10)
    Cm = S[:, None] * rng.standard_normal((10, n))
    z = rng.standard_normal(n)
    mu = np.r_[rng.uniform(0.1, 1, 4), np.zeros(6)]
    out["SCALED"] = _qp((P + P.T) / 2, -(P @ z + Cm.T @ mu), C=Cm,
                        d=Cm @ z + S * np.r_[np.zeros(4), rng.uniform(0.1, 1, 6)], x_star=z,
                        note="cond(P) = 1e10, rows scaled 1e-3..1e3")
    Cb, db = _box(n, [-1e4] * n, [1e4] * n)
    G = rng.standard_normal((20, n))
    out["BIGLP"] = _qp(np.zeros((n, n)), 1e3 * rng.standard_normal(n), C=np.vstack([G, Cb]),
                       d=np.r_[10 * np.abs(rng.standard_normal(20)) + 1, db],
                       note="P = 0, costs 1e3, bounds 1e4")
    return out


def _protocol_run(qp: dict, method: str, solver: str = "clarabel") -> dict:
    """One layer's forward + backward on ``qp`` at the paper's settings; its own primal-dual output."""
    from . import baselines

    eps = PAPER_PROTOCOL["eps"]
    args = [qp[k].clone().requires_grad_(True) for k in NAMES]
    P, q, A, b, C, d = args
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "dqp":
            eq = (A, b) if A.shape[0] else (None, None)
            res = dqp_solve(P, q, *eq, C, d, solver=solver)
            z, lam, mu = res.z, res.lam.detach(), res.mu.detach()
        elif method == "qpth":
            z, lam, mu = baselines.qpth_solve(*args, eps=eps, duals=True)
        elif method == "qplayer":
            z, lam, mu = baselines.qplayer_solve(*args, eps=eps, duals=True,
                                                 max_iter=PAPER_PROTOCOL["qplayer_max_iter"])
        else:
            raise ValueError(f"method must be 'dqp', 'qpth' or 'qplayer', got {method!r}")
        z.sum().backward()
    return dict(z=z.detach().numpy(), lam=lam.numpy(), mu=mu.numpy(),
                grad_finite=all(a.grad is None or bool(torch.isfinite(a.grad).all()) for a in args))


def protocol_solves(qp: dict, method: str, solvers=DQP_SOLVER_ORDER) -> dict:
    """Score ``method`` on ``qp`` by the paper's criterion (see ``PAPER_PROTOCOL``).

    For ``method = 'dqp'`` the forward solvers in ``solvers`` are tried in order and the first that
    passes is kept (the paper's dQP_best); ``solver`` in the result names it."""
    if method not in ("dqp", "qpth", "qplayer"):
        raise ValueError(f"method must be 'dqp', 'qpth' or 'qplayer', got {method!r}")
    if qp["C"].shape[0] == 0:
        raise ValueError("qp has no inequalities: the paper's protocol skips such problems")
    thr = PAPER_PROTOCOL["success_thr"]
    out = {}
    for solver in (solvers if method == "dqp" else (None,)):
        try:
            r = _protocol_run(qp, method, solver)
        except Exception as e:  # noqa: BLE001 - a layer failing is the measurement
            msg = " ".join(str(e).split())  # qpth's messages span lines
            out = dict(solved=False, solver=solver, error=f"{type(e).__name__}: {msg}"[:70])
            continue
        z, lam, mu = r["z"], r["lam"], r["mu"]
        ok = bool(np.isfinite(z).all() and np.isfinite(mu).all() and np.isfinite(lam).all())
        res = kkt_residuals(qp, z, lam, mu) if ok else dict(primal=np.inf, dual=np.inf)
        P, q, A, b, C, d = (qp[k].numpy() for k in NAMES)
        gap = float(abs(z @ P @ z + q @ z + b @ lam + d @ mu)) if ok else np.inf
        worst = max(res["primal"], res["dual"], gap)
        out = dict(solved=bool(ok and r["grad_finite"] and worst <= thr), solver=solver,
                   primal=res["primal"], dual=res["dual"], gap=gap,
                   error="" if ok and worst <= thr else f"residual {worst:.1e}")
        if out["solved"]:
            break
    return out


def protocol_table(seeds, methods=("dqp", "qplayer", "qpth")) -> dict:
    """Solved counts by the paper's criterion over the classic problems with inequalities (seed
    independent) plus ``hard_qps(seed)``, per seed: ``{seed: {"problems": {...}, "solved": {...}}}``."""
    if not len(seeds):
        raise ValueError("seeds must be a non-empty sequence")
    out = {}
    for s in seeds:
        qps = {k: v for k, v in classic_qps(seed=s).items() if v["C"].shape[0]}
        qps.update(hard_qps(seed=s))
        probs = {name: {m: protocol_solves(qp, m) for m in methods} for name, qp in qps.items()}
        out[s] = dict(problems=probs, solved={m: sum(p[m]["solved"] for p in probs.values())
                                              for m in methods})
    return out
