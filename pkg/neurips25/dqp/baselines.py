"""Baselines dQP is compared with: full-KKT implicit differentiation (OptNet-style) and cvxpylayers.

``kkt_solve`` is *not* qpth: its forward pass is the same black-box solver as dQP's, and only its
backward differs — it differentiates the full, dense KKT conditions with every inequality
(Amos & Kolter, 2017, eq. 6) instead of the reduced system on the active set.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import torch

from .core import SOLVER_OPTIONS, available_solvers

__all__ = ["kkt_solve", "cvxpy_qp_layer", "cvxpy_projection_layer"]

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
    """A cvxpylayers layer for the QP with constant P and parameters (q, A, b, C, d)."""
    import cvxpy as cp
    from cvxpylayers.torch import CvxpyLayer

    n = P.shape[0]
    z = cp.Variable(n)
    q, A, b, C, d = cp.Parameter(n), cp.Parameter((p, n)), cp.Parameter(p), cp.Parameter((m, n)), cp.Parameter(m)
    obj = cp.Minimize(0.5 * cp.quad_form(z, cp.psd_wrap((P + P.T) / 2)) + q @ z)
    prob = cp.Problem(obj, [A @ z == b, C @ z <= d])
    return CvxpyLayer(prob, parameters=[q, A, b, C, d], variables=[z])


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
