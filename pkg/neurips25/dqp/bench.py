"""Scaling benchmark (paper §5.2): forward + backward time of a projection layer versus n.

Methods, all timed on the same problem instance in one process, BLAS limited to one thread:
  ``dqp``         — OSQP forward, sparse reduced-KKT (SuperLU) solve and backward (this chapter);
  ``full_kkt``    — OSQP forward, dense full-KKT backward (OptNet-style, ``baselines.kkt_solve``);
  ``cvxpylayers`` — cvxpylayers 1.x with its default diffcp/SCS pipeline and default tolerances
                    (layer construction, a one-off canonicalisation, is excluded from the time).

Run ``python -m neurips25.dqp`` to regenerate ``notebooks/results/dqp.json``.
"""
from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np
import torch

from .baselines import cvxpy_projection_layer, kkt_solve
from .problems import project, projection_constraints

__all__ = ["METHODS", "make_layer", "time_fwd_bwd", "benchmark", "main"]

METHODS = ("dqp", "full_kkt", "cvxpylayers")


def make_layer(method: str, kind: str, n: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """x ↦ projection of x for one method (constructed once, outside the timed region)."""
    if method == "dqp":
        return lambda x: project(x, kind)
    if method == "full_kkt":
        cons = projection_constraints(kind, n)
        t = lambda M: torch.as_tensor(M.toarray(), dtype=torch.float64)
        P, C, d = t(cons["P"]), t(cons["C"]), cons["d"]
        A = t(cons["A"]) if "A" in cons else torch.zeros(0, n, dtype=torch.float64)
        b = cons.get("b", torch.zeros(0, dtype=torch.float64))
        return lambda x: kkt_solve(P, -x, A, b, C, d)
    if method == "cvxpylayers":
        layer = cvxpy_projection_layer(kind, n)
        return lambda x: layer(x)[0]
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def time_fwd_bwd(layer: Callable, x: torch.Tensor, g: torch.Tensor, repeats: int = 3) -> float:
    """Best-of-``repeats`` wall time (s) of z = layer(x) and the backward of ⟨g, z⟩ (best-of damps
    the noise of a shared machine)."""
    best = float("inf")
    for _ in range(repeats):
        xr = x.detach().clone().requires_grad_(True)
        t0 = time.perf_counter()
        z = layer(xr)
        (z * g).sum().backward()
        best = min(best, time.perf_counter() - t0)
    return best


def benchmark(kind: str, ns, caps: dict[str, int] | None = None, repeats: int = 3,
              seed: int = 0) -> dict[str, dict[int, float]]:
    """Times ``{method: {n: seconds}}`` for the ``kind`` projection; ``caps[method]`` is the largest n
    run for that method (cvxpylayers and the dense KKT grow too slow to run everywhere)."""
    from threadpoolctl import threadpool_limits

    caps = caps or {}
    out: dict[str, dict[int, float]] = {m: {} for m in METHODS}
    with threadpool_limits(1):  # every method single-threaded: comparable on a shared machine
        _run(kind, ns, caps, repeats, seed, out)
    return out


def _run(kind, ns, caps, repeats, seed, out) -> None:
    for n in ns:
        rng = np.random.default_rng(seed + n)
        x = torch.tensor(rng.standard_normal(n) * (3.0 if kind == "simplex" else 1.0))
        g = torch.tensor(rng.standard_normal(n))
        for m in METHODS:
            if n <= caps.get(m, 10**9):
                out[m][int(n)] = time_fwd_bwd(make_layer(m, kind, n), x, g, repeats)


def main(argv=None) -> None:
    from ..results import save_results

    ap = argparse.ArgumentParser(description="dQP scaling benchmark -> notebooks/results/dqp.json")
    ap.add_argument("--ns", type=int, nargs="+", default=[100, 200, 500, 1000, 2000, 5000, 10000, 20000])
    ap.add_argument("--cap-cvxpylayers", type=int, default=2000)
    ap.add_argument("--cap-full-kkt", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    caps = {"cvxpylayers": a.cap_cvxpylayers, "full_kkt": a.cap_full_kkt}
    data = {"ns": a.ns, "caps": caps, "repeats": a.repeats}
    for kind in ("simplex", "chain"):
        res = benchmark(kind, a.ns, caps, a.repeats, a.seed)
        data[kind] = {m: {str(n): t for n, t in v.items()} for m, v in res.items()}
        print(kind, {m: {n: round(t, 4) for n, t in v.items()} for m, v in res.items()}, flush=True)
    cmd = "python -m neurips25.dqp " + " ".join(argv if argv is not None else [])
    print("wrote", save_results("dqp", data, command=cmd.strip(), seed=a.seed))
