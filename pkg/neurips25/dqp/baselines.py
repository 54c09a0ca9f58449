"""Baselines dQP is compared with: the paper's own baselines OptNet (``qpth``) and QPLayer
(``proxsuite``), cvxpylayers, and a full-KKT implicit-differentiation stand-in.

``qpth_solve`` is OptNet itself (Amos & Kolter, 2017): qpth's batched dense primal-dual interior-point
forward and its dense KKT backward. ``qplayer_solve`` is QPLayer (Bambade et al., 2024): ProxQP's dense
augmented-Lagrangian forward and its backward. ``kkt_solve`` is *not* qpth: its forward pass is the
same black-box solver as dQP's, and only its backward differs — it differentiates the full, dense KKT
conditions with every inequality (OptNet eq. 6) instead of the reduced system on the active set.

qpth 0.0.18 declares ``numpy<2`` but runs unchanged with NumPy 2 and torch 2.x on the CPU (its dense
path uses only torch; the sparse path it never takes here needs CUDA). It cannot be a dependency of this
package (pip would downgrade NumPy), so it is optional: ``pip install --no-deps qpth==0.0.18``.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import torch

from .core import SOLVER_OPTIONS, available_solvers

__all__ = ["kkt_solve", "cvxpy_qp_layer", "cvxpy_projection_layer", "qpth_solve", "qplayer_solve",
           "have_qpth", "have_qplayer"]

# cvxpylayers 1.2's diffcp interface calls np.array(copy=False)-style on objects without the NumPy-2
# ``copy`` keyword; harmless, and it would otherwise print in every forward and backward pass.
warnings.filterwarnings("ignore", message=r".*__array__ implementation doesn't accept a copy keyword",
                        category=DeprecationWarning)


class _FullKKT(torch.autograd.Function):
    @staticmethod
    def forward(ctx, solver, P, q, A, b, C, d):
        import qpsolvers

        Pn, qn, An, bn, Cn, dn = (x.detach().cpu().numpy() for x in (P, q, A, b, C, d))
        Pn = (Pn + Pn.T) / 2
        csc = sp.csc_matrix
        eq = (csc(An), bn) if An.shape[0] else (None, None)
        sol = qpsolvers.solve_problem(qpsolvers.Problem(csc(Pn), qn, csc(Cn), dn, *eq), solver=solver,
                                      **SOLVER_OPTIONS.get(solver, {}))
        if not sol.found:
            raise ValueError(f"solver {solver!r} found no solution: the QP is infeasible or unbounded")
        z, mu = sol.x, np.maximum(sol.z, 0.0)
        lam = sol.y if An.shape[0] else np.zeros(0)
        n, m, p = z.shape[0], Cn.shape[0], An.shape[0]
        # Differential of the KKT conditions (OptNet eq. 6), dense, all m inequalities included.
        K = np.block([
            [Pn, Cn.T, An.T],
            [mu[:, None] * Cn, np.diag(Cn @ z - dn), np.zeros((m, p))],
            [An, np.zeros((p, m)), np.zeros((p, p))],
        ])
        ctx.save_for_backward(*(torch.as_tensor(v) for v in (z, lam, mu)))
        ctx.K, ctx.sizes = K, (n, m, p)
        return torch.as_tensor(z, dtype=torch.float64)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gz):
        z, lam, mu = (t.numpy() for t in ctx.saved_tensors)
        n, m, p = ctx.sizes
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sla.LinAlgWarning)
            v = sla.solve(ctx.K.T, np.concatenate([gz.numpy(), np.zeros(m + p)]))
        vz, vm, vl = v[:n], v[n:n + m], v[n + m:]
        t = lambda x: torch.as_tensor(x, dtype=torch.float64)
        return (None, t(-0.5 * (np.outer(vz, z) + np.outer(z, vz))), t(-vz),
                t(-(np.outer(lam, vz) + np.outer(vl, z))), t(vl),
                t(-(np.outer(mu, vz) + np.outer(mu * vm, z))), t(mu * vm))


def kkt_solve(P, q, A, b, C, d, solver: str = "clarabel") -> torch.Tensor:
    """z*(P, q, A, b, C, d) with gradients from the full dense KKT system (unbatched, dense only)."""
    if solver not in available_solvers():
        raise ValueError(f"solver must be one of {available_solvers()}, got {solver!r}")
    args = [P, q, A, b, C, d]
    if not all(isinstance(x, torch.Tensor) for x in args):
        raise TypeError("kkt_solve takes dense torch tensors P, q, A, b, C, d (use zero-row A, C if absent)")
    return _FullKKT.apply(solver, *(x.double() for x in args))


def cvxpy_qp_layer(P: np.ndarray, m: int, p: int):
    """A cvxpylayers layer for the QP with constant P and parameters (q, A, b, C, d); blocks with zero
    rows (m = 0 or p = 0) are left out, and so are their parameters in the layer's call."""
    import cvxpy as cp
    from cvxpylayers.torch import CvxpyLayer

    n = P.shape[0]
    z = cp.Variable(n)
    q = cp.Parameter(n)
    params, cons = [q], []
    if p:
        A, b = cp.Parameter((p, n)), cp.Parameter(p)
        params += [A, b]
        cons.append(A @ z == b)
    if m:
        C, d = cp.Parameter((m, n)), cp.Parameter(m)
        params += [C, d]
        cons.append(C @ z <= d)
    obj = cp.Minimize(0.5 * cp.quad_form(z, cp.psd_wrap((P + P.T) / 2)) + q @ z)
    return CvxpyLayer(cp.Problem(obj, cons), parameters=params, variables=[z])


def cvxpy_projection_layer(kind: str, n: int):
    """A cvxpylayers layer for min ½‖z − x‖² over the simplex or the monotone chain (parameter x)."""
    import cvxpy as cp
    from cvxpylayers.torch import CvxpyLayer

    z, x = cp.Variable(n), cp.Parameter(n)
    if kind == "simplex":
        cons = [cp.sum(z) == 1, z >= 0]
    elif kind == "chain":
        cons = [z[:-1] <= z[1:]]
    else:
        raise ValueError(f"kind must be 'simplex' or 'chain', got {kind!r}")
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(z - x)), cons)
    return CvxpyLayer(prob, parameters=[x], variables=[z])


def have_qpth() -> bool:
    """Whether OptNet's ``qpth`` is importable (optional: ``pip install --no-deps qpth==0.0.18``)."""
    try:
        import qpth.qp  # noqa: F401
    except ImportError:
        return False
    return True


def have_qplayer() -> bool:
    """Whether QPLayer (``proxsuite.torch``) is importable (installed with the ``opt`` extra)."""
    try:
        import proxsuite.torch.qplayer  # noqa: F401
    except ImportError:
        return False
    return True


def _dense_args(P, q, A, b, C, d):
    args = [P, q, A, b, C, d]
    if not all(isinstance(x, torch.Tensor) for x in args):
        raise TypeError("P, q, A, b, C, d must be dense torch tensors (zero-row A, C if absent)")
    n = q.shape[-1]
    for name, M, v in (("A", A, b), ("C", C, d)):
        if M.ndim != 2 or M.shape[1] != n or v.shape != (M.shape[0],):
            raise ValueError(f"{name} must be (rows, {n}) with a matching right-hand side")
    return [x.double() for x in args]


def qpth_solve(P, q, A, b, C, d, max_iter: int = 20, eps: float = 1e-12, duals: bool = False):
    """z*(P, q, A, b, C, d) from OptNet's ``qpth.qp.QPFunction`` (dense, unbatched here).

    qpth requires P positive definite (a Cholesky factorisation) and runs a fixed budget of
    interior-point iterations (``max_iter``, qpth's default 20). With ``duals`` it returns
    ``(z, lam, mu)``: qpth keeps its multipliers on the autograd node (the paper's authors patched
    qpth to return them; reading them off the node is the same numbers)."""
    from qpth.qp import QPFunction

    P, q, A, b, C, d = _dense_args(P, q, A, b, C, d)
    e = torch.empty(0, dtype=torch.float64)
    eq = (A, b) if A.shape[0] else (e, e)
    ineq = (C, d) if C.shape[0] else (torch.zeros(1, q.shape[-1], dtype=torch.float64),
                                       torch.ones(1, dtype=torch.float64))  # qpth needs a row
    z = QPFunction(verbose=-1, maxIter=max_iter, eps=eps)(P, q, *ineq, *eq)
    if not duals:
        return z[0]
    node = z.grad_fn
    lam = node.nus[0].detach() if A.shape[0] else e
    return z[0], lam, node.lams[0, :C.shape[0]].detach()


_BIG = 1e20  # ProxQP's "no bound"


def qplayer_solve(P, q, A, b, C, d, eps: float = 1e-9, max_iter: int = 1000, duals: bool = False):
    """z*(P, q, A, b, C, d) from QPLayer (``proxsuite.torch.qplayer.QPFunction``, dense).

    Inequalities Cz <= d are passed as -inf <= Cz <= d. QPLayer's backward solves its own
    (regularised) KKT system to tolerance ``eps_backward = 1e-4`` and returns float32 gradients.
    With ``duals`` it returns ``(z, lam, mu)``."""
    from proxsuite.torch.qplayer import QPFunction

    P, q, A, b, C, d = _dense_args(P, q, A, b, C, d)
    e = torch.empty(0, dtype=torch.float64)
    eq = (A, b) if A.shape[0] else (e, e)
    m = C.shape[0]
    if not m:  # QPLayer 0.8 fails without an inequality row: add 0·z <= 1
        C, d = torch.zeros(1, q.shape[-1], dtype=torch.float64), torch.ones(1, dtype=torch.float64)
    z, y, w = QPFunction(eps=eps, maxIter=max_iter)(P, q, *eq, C, torch.full_like(d, -_BIG), d)
    if not duals:
        return z[0]
    return z[0], (y[0].detach() if A.shape[0] else e), w[0, :m].detach()
