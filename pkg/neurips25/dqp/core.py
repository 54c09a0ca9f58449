"""dQP: differentiate any QP solver through the reduced KKT system of its active set.

The QP (paper, eq. 1) is

    min_z ½ zᵀPz + qᵀz   s.t.   Az = b,   Cz ≤ d,

with Lagrangian ½zᵀPz + qᵀz + λᵀ(Az − b) + μᵀ(Cz − d), μ ≥ 0. Once the active set
J = {j : (Cz* − d)_j ≥ −ε_J} is known, the QP is locally the equality-constrained problem with rows
A and C_J, so the solution *and* its derivative come from one symmetric linear system (paper §4):

    K_J [z; λ; μ_J] = [−q; b; d_J],   K_J = [[P, Aᵀ, C_Jᵀ], [A, 0, 0], [C_J, 0, 0]].

The forward pass calls any solver (through ``qpsolvers``) only to find J; the backward pass solves
K_J w = ∂L/∂[z; λ; μ_J] with the factorisation already made in the forward pass.
"""
from __future__ import annotations

import dataclasses
import functools
import numbers
import os
import sys
import warnings
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch

from ..runtime import check_int

__all__ = ["SOLVER_OPTIONS", "available_solvers", "active_set", "QPResult", "dqp_solve", "DQPLayer"]

# High-accuracy settings per backend: dQP re-solves the reduced KKT system, so the solver only has
# to be accurate enough to classify constraints as active or not.
SOLVER_OPTIONS: dict[str, dict[str, Any]] = {
    "osqp": dict(eps_abs=1e-7, eps_rel=1e-7, polishing=True, max_iter=50_000, raise_error=False),
    "clarabel": dict(tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10),
    "highs": dict(output_flag=False),
    "scs": dict(eps_abs=1e-9, eps_rel=1e-9, max_iters=100_000),
}


@functools.cache
def _silence_highs_banner() -> None:
    """HiGHS prints a copyright banner to the C-level stdout the first time a ``Highs`` object is
    built in a process, whatever its ``output_flag``; build that first one with fd 1 sent to devnull."""
    import highspy

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def available_solvers() -> list[str]:
    """The QP backends installed here that dQP knows tolerances for (a subset of qpsolvers')."""
    import qpsolvers

    return [s for s in SOLVER_OPTIONS if s in qpsolvers.available_solvers]


def active_set(C, d, z, eps: float = 1e-6) -> np.ndarray:
    """J as a boolean mask: rows with row-normalised residual (C_j z − d_j)/‖C_j‖ ≥ −eps (§4.1).

    A negative ``eps`` selects the rows violated by more than |eps| (the refinement step uses it)."""
    # a NaN in z, d or eps makes every comparison False: all rows would silently be inactive
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not np.isfinite(eps):
        raise ValueError(f"eps must be a finite number, got {eps!r}")
    if C is None:
        return np.zeros(0, dtype=bool)
    z, d = np.asarray(z, dtype=np.float64), np.asarray(d, dtype=np.float64)
    if not np.all(np.isfinite(z)):
        raise ValueError("z must be finite (no NaN/inf)")
    if not np.all(np.isfinite(d)):
        raise ValueError("d must be finite (no NaN/inf)")
    r = np.asarray(C @ z).ravel() - d.ravel()
    norms = np.sqrt(np.asarray(C.multiply(C).sum(1)).ravel()) if sp.issparse(C) else np.linalg.norm(C, axis=1)
    return r / np.maximum(norms, 1e-300) >= -eps


class _KKTFactor:
    """One factorisation of K = [[P, Gᵀ], [G, 0]] (G = [A; C_J]) reused for forward and backward.

    Sparse problems use SuperLU; dense ones LAPACK's LU. When K is singular (more active rows than
    unknowns, or linearly dependent active rows) we fall back to the minimum-norm least-squares
    solution and set ``lstsq`` instead of warning.
    """

    def __init__(self, P, G, sparse: bool):
        n, k = P.shape[0], G.shape[0]
        self.lstsq = k > n
        if sparse:
            self.K = sp.bmat([[sp.csc_matrix(P), sp.csc_matrix(G).T], [sp.csc_matrix(G), None]],
                             format="csc") if k else sp.csc_matrix(P)
        else:
            self.K = np.block([[P, G.T], [G, np.zeros((k, k))]]) if k else np.asarray(P)
        self.sparse = sparse
        if not self.lstsq:
            try:
                if sparse:
                    self.lu = spla.splu(self.K)
                else:
                    with warnings.catch_warnings():
                        warnings.simplefilter("error", sla.LinAlgWarning)
                        self.lu = sla.lu_factor(self.K, check_finite=False)
                    u = np.abs(np.diag(self.lu[0]))
                    self.lstsq = bool(u.min() <= 1e-13 * max(u.max(), 1.0))
            except (RuntimeError, sla.LinAlgWarning):
                self.lstsq = True

    def solve(self, r: np.ndarray) -> np.ndarray:
        if self.lstsq:
            K = self.K.toarray() if self.sparse else self.K
            return np.linalg.lstsq(K, r, rcond=None)[0]
        return self.lu.solve(r) if self.sparse else sla.lu_solve(self.lu, r, check_finite=False)


def _rows(M, mask):
    return M[np.flatnonzero(mask)] if sp.issparse(M) else M[mask]


def _solve_one(P, q, A, b, C, d, opts: _Options) -> dict[str, Any]:
    """Forward pass for one QP: black-box solve → active set → reduced KKT solve (+ refinement)."""
    import qpsolvers

    n = q.shape[0]
    P = (P + P.T) / 2  # only the symmetric part of P enters the QP
    if opts.sparse:  # one format for the solver and for the KKT assembly
        P = sp.csc_matrix(P)
        A, C = (None if M is None else sp.csr_matrix(M) for M in (A, C))
    kw = {**SOLVER_OPTIONS.get(opts.solver, {}), **opts.solver_options}
    csc = lambda M: None if M is None else sp.csc_matrix(M)  # every backend here is a sparse solver
    problem = qpsolvers.Problem(csc(P), q, csc(C), d, csc(A), b)
    if opts.solver == "highs":
        _silence_highs_banner()
    with warnings.catch_warnings():  # failure is reported below as a ValueError instead
        warnings.filterwarnings("ignore", message=r".*terminated with status", category=UserWarning)
        sol = qpsolvers.solve_problem(problem, solver=opts.solver, **kw)
    if not sol.found or sol.x is None or not np.all(np.isfinite(sol.x)):
        raise ValueError(f"solver {opts.solver!r} found no solution: the QP is infeasible or unbounded "
                         "(check that the constraints Az = b, Cz <= d can be met)")
    z_solver = np.asarray(sol.x, dtype=np.float64)
    J = active_set(C, d, z_solver, opts.eps_active)
    p = 0 if A is None else A.shape[0]
    converged = C is None
    for it in range(opts.max_refine + 1):
        blocks = [M for M in (A, None if C is None else _rows(C, J)) if M is not None]
        if opts.sparse:
            G = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, n))
        else:
            G = np.vstack(blocks) if blocks else np.zeros((0, n))
        fac = _KKTFactor(P, G, opts.sparse)
        rhs = np.concatenate([-q] + ([b] if A is not None else []) + ([d[J]] if C is not None else []))
        y = fac.solve(rhs)
        z, lam, mu_J = y[:n], y[n:n + p], y[n + p:]
        if C is None:
            break
        # Active-set refinement (App. D): J is right iff mu_J >= 0 and z is feasible. Otherwise drop
        # the rows with negative multipliers and add the violated rows, and re-solve (a primal-dual
        # active-set step; with a loose forward solver it can take ~10 steps, each one KKT solve).
        idx = np.flatnonzero(J)
        drop = idx[mu_J < -1e-9 * max(1.0, np.abs(mu_J).max(initial=0.0))]
        add = ~J & active_set(C, d, z, -opts.eps_active)  # strictly violated beyond eps
        if drop.size == 0 and not add.any():
            converged = True
            break
        if it == opts.max_refine:
            break
        J = J.copy()
        J[drop] = False
        J |= add
    mu = np.zeros(0 if C is None else C.shape[0])
    if C is not None:
        mu[J] = mu_J
    return dict(z=z, lam=lam, mu=mu, J=J, fac=fac, lstsq=fac.lstsq, refined=it, converged=converged,
                solver_gap=float(np.abs(z - z_solver).max()))


@dataclasses.dataclass
class _Options:
    solver: str
    eps_active: float
    max_refine: int
    solver_options: dict
    sparse: bool
    consts: dict  # scipy-sparse matrices passed as constants, by name
    batch: int | None = None
    infos: list | None = None


def _item(name: str, X, i: int, opts: _Options):
    if name in opts.consts:
        return opts.consts[name]
    if X is None:
        return None
    X = X.detach().cpu().numpy()
    return X[i] if X.ndim == _NDIM[name] + 1 else X


_NDIM = {"P": 2, "q": 1, "A": 2, "b": 1, "C": 2, "d": 1}


class _DQPFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, opts: _Options, P, q, A, b, C, d):
        args = dict(P=P, q=q, A=A, b=b, C=C, d=d)
        B = opts.batch or 1
        infos = [_solve_one(*(_item(k, v, i, opts) for k, v in args.items()), opts) for i in range(B)]
        opts.infos = infos
        ctx.opts, ctx.infos = opts, infos
        ctx.shapes = {k: (None if v is None else v.shape) for k, v in args.items()}
        ctx.device = q.device
        out = [torch.as_tensor(np.stack([f[k] for f in infos]), dtype=torch.float64, device=q.device)
               for k in ("z", "lam", "mu")]
        if opts.batch is None:
            out = [o[0] for o in out]
        return tuple(out)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gz, glam, gmu):
        opts, infos = ctx.opts, ctx.infos
        names = ("P", "q", "A", "b", "C", "d")
        need = dict(zip(names, ctx.needs_input_grad[1:]))
        grads: dict[str, list] = {k: [] for k in names}
        for i, f in enumerate(infos):
            g = [x if opts.batch is None else x[i] for x in (gz, glam, gmu)]
            g = [x.detach().cpu().numpy() for x in g]
            J = f["J"]
            z, lam, mu_J = f["z"], f["lam"], f["mu"][J]
            n, p = z.shape[0], lam.shape[0]
            # One solve with the forward factorisation: K_J w = ∂L/∂[z; λ; μ_J]  (K_J symmetric).
            w = f["fac"].solve(np.concatenate([g[0], g[1], g[2][J]]))
            wz, wl, wm = w[:n], w[n:n + p], w[n + p:]
            # Only the requested gradients: the dense outer products are O(n²) (or O(mn)).
            if need["q"]:
                grads["q"].append(-wz)
            if need["P"]:
                grads["P"].append(-0.5 * (np.outer(wz, z) + np.outer(z, wz)))
            if need["b"]:
                grads["b"].append(wl)
            if need["A"]:
                grads["A"].append(-(np.outer(lam, wz) + np.outer(wl, z)))
            m = f["mu"].shape[0]
            if need["d"]:
                gd = np.zeros(m)
                gd[J] = wm
                grads["d"].append(gd)
            if need["C"]:
                gC = np.zeros((m, n))
                gC[J] = -(np.outer(mu_J, wz) + np.outer(wm, z))
                grads["C"].append(gC)
        out = []
        for k in names:
            shape = ctx.shapes[k]
            if not need[k] or shape is None:
                out.append(None)
                continue
            G = np.stack(grads[k])
            G = G.sum(0) if len(shape) == _NDIM[k] else G  # unbatched argument: sum over the batch
            out.append(torch.as_tensor(G, dtype=torch.float64, device=ctx.device))
        return (None, *out)


@dataclasses.dataclass
class QPResult:
    """The solution of a (batch of) QP(s) and what dQP found on the way.

    ``z``, ``lam`` (equality duals) and ``mu`` (inequality duals, 0 off the active set) are
    differentiable; ``active`` is the active set J; ``lstsq`` flags degenerate problems solved by
    least squares; ``solver_gap`` is max|z_dQP − z_solver|, how far the reduced-KKT solution moved
    the black-box solver's answer; ``refined`` counts refinement steps and ``converged`` is False
    when refinement stopped (``max_refine``) before J passed the KKT check (μ_J ≥ 0, Cz ≤ d).
    """

    z: torch.Tensor
    lam: torch.Tensor
    mu: torch.Tensor
    active: torch.Tensor
    lstsq: np.ndarray
    solver_gap: np.ndarray
    refined: np.ndarray
    converged: np.ndarray


def _check_arg(name: str, X, n: int | None, rows: int | None):
    """Validate one QP argument; returns (tensor or sparse, batch size or None, rows)."""
    nd = _NDIM[name]
    if sp.issparse(X):
        if name not in ("P", "A", "C"):
            raise TypeError(f"{name} must be a torch.Tensor (only P, A, C may be scipy.sparse), got sparse")
        return sp.csc_matrix(X, dtype=np.float64), None, X.shape[0]
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(X).__name__}")
    if not X.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {X.dtype}")
    if X.ndim not in (nd, nd + 1):
        raise ValueError(f"{name} must have {nd} dims (or {nd + 1} with a leading batch dim), "
                         f"got shape {tuple(X.shape)}")
    if not torch.isfinite(X).all():
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return X.double(), (X.shape[0] if X.ndim == nd + 1 else None), X.shape[-nd]


def dqp_solve(P, q, A=None, b=None, C=None, d=None, *, solver: str = "clarabel", eps_active: float = 1e-6,
              max_refine: int = 25, check_psd: bool = True, **solver_options) -> QPResult:
    """Solve min ½zᵀPz + qᵀz s.t. Az = b, Cz ≤ d with any ``qpsolvers`` backend, differentiably.

    Tensors may carry a leading batch dimension (all batched arguments must share it; unbatched
    ones are shared by the batch and receive summed gradients). P, A, C may also be
    ``scipy.sparse`` matrices: then they are constants (no gradient) and the reduced KKT system is
    factorised sparsely. Everything is computed in float64.
    """
    if solver not in available_solvers():
        raise ValueError(f"solver must be one of {available_solvers()}, got {solver!r}")
    if not (isinstance(eps_active, float) and eps_active > 0):
        raise ValueError(f"eps_active must be a positive float, got {eps_active!r}")
    max_refine = check_int(max_refine, "max_refine", 0)
    if (A is None) != (b is None):
        raise ValueError("A and b must be given together (equality constraints Az = b)")
    if (C is None) != (d is None):
        raise ValueError("C and d must be given together (inequality constraints Cz <= d)")
    args = dict(P=P, q=q, A=A, b=b, C=C, d=d)
    checked, batches = {}, {}
    for k, v in args.items():
        if v is None:
            checked[k] = None
            continue
        checked[k], bs, _ = _check_arg(k, v, None, None)
        if bs is not None:
            batches[k] = bs
    if len(set(batches.values())) > 1:
        raise ValueError(f"batched arguments must share one batch size, got {batches}")
    n = checked["q"].shape[-1]
    if n < 1:
        raise ValueError("q must have at least one entry (a QP in zero unknowns)")

    def cols(k):
        v = checked[k]
        return v.shape[-1]

    def nrows(k):
        v = checked[k]
        return v.shape[0] if sp.issparse(v) else v.shape[-2 if _NDIM[k] == 2 else -1]

    if cols("P") != n or nrows("P") != n:
        raise ValueError(f"P must be ({n}, {n}) to match q of length {n}, got {tuple(checked['P'].shape)}")
    for M, v in (("A", "b"), ("C", "d")):
        if checked[M] is not None:
            if cols(M) != n:
                raise ValueError(f"{M} must have {n} columns to match q, got shape {tuple(checked[M].shape)}")
            if nrows(M) != nrows(v):
                raise ValueError(f"{v} must have {nrows(M)} entries (rows of {M}), got {nrows(v)}")
    if check_psd:
        Ps = checked["P"]
        if sp.issparse(Ps):
            Pd = Ps.toarray() if n <= 2000 else None
            ok = Pd is None or np.linalg.eigvalsh((Pd + Pd.T) / 2).min() >= -1e-10 * max(1.0, abs(Pd).max())
        else:
            Pt = Ps.detach()
            ev = torch.linalg.eigvalsh((Pt + Pt.mT) / 2)
            ok = bool((ev.min(-1).values >= -1e-10 * Pt.abs().amax().clamp(min=1.0)).all())
        if not ok:
            raise ValueError("P must be positive semidefinite (the QP must be convex); "
                             "its smallest eigenvalue is negative")
    consts = {k: v for k, v in checked.items() if v is not None and sp.issparse(v)}
    opts = _Options(solver=solver, eps_active=eps_active, max_refine=int(max_refine),
                    solver_options=solver_options, sparse=bool(consts), consts=consts,
                    batch=next(iter(batches.values()), None))
    tens = {k: (None if (v is None or k in consts) else v) for k, v in checked.items()}
    z, lam, mu = _DQPFunction.apply(opts, *tens.values())
    infos = opts.infos
    stack = (lambda a: a[0]) if opts.batch is None else np.stack
    active = torch.as_tensor(stack([f["J"] for f in infos]), device=z.device)
    return QPResult(z=z, lam=lam, mu=mu, active=active, lstsq=stack([f["lstsq"] for f in infos]),
                    solver_gap=stack([f["solver_gap"] for f in infos]),
                    refined=stack([f["refined"] for f in infos]),
                    converged=stack([f["converged"] for f in infos]))


class DQPLayer(torch.nn.Module):
    """``dqp_solve`` as a module: fixes the solver and tolerances, returns the solution z.

    Constant scipy-sparse matrices (e.g. a projection's constraint matrix) can be stored on the
    layer and are used whenever the corresponding forward argument is omitted.
    """

    def __init__(self, solver: str = "clarabel", eps_active: float = 1e-6, **constants):
        super().__init__()
        if solver not in available_solvers():
            raise ValueError(f"solver must be one of {available_solvers()}, got {solver!r}")
        unknown = set(constants) - set(_NDIM)
        if unknown:
            raise ValueError(f"constants must be among {sorted(_NDIM)}, got {sorted(unknown)}")
        self.solver, self.eps_active, self.constants = solver, eps_active, constants
        self.last: QPResult | None = None

    def forward(self, P=None, q=None, A=None, b=None, C=None, d=None) -> torch.Tensor:
        given = dict(P=P, q=q, A=A, b=b, C=C, d=d)
        args = {k: (self.constants.get(k) if v is None else v) for k, v in given.items()}
        if args["q"] is None or args["P"] is None:
            raise ValueError("P and q are required (as arguments or layer constants)")
        self.last = dqp_solve(**args, solver=self.solver, eps_active=self.eps_active, check_psd=False)
        return self.last.z
