"""Scaling benchmark (paper §5.2): forward + backward time of a projection layer versus n.

Methods, all timed on the same problem instance in one process, BLAS limited to one thread:
  ``dqp``         — Clarabel forward, sparse reduced-KKT (SuperLU) solve and backward (this chapter);
  ``qpth``        — OptNet itself (``qpth`` 0.0.18: dense batched interior point + dense KKT backward);
  ``qplayer``     — QPLayer (``proxsuite.torch``, dense ProxQP forward + its backward);
  ``cvxpylayers`` — cvxpylayers 1.x with its default diffcp/SCS pipeline and default tolerances
                    (layer construction, a one-off canonicalisation, is excluded from the time);
  ``full_kkt``    — Clarabel forward, dense full-KKT backward (an OptNet-style stand-in).
A method that is not installed (qpth is optional) is skipped. Besides times, every method's gradient
⟨g, ∂z/∂x⟩ is compared with dQP's (relative max-difference), the stored gradient-agreement check.

Run ``python -m neurips25.dqp`` to regenerate ``notebooks/results/dqp.json``.
"""
from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np
import torch

from .baselines import cvxpy_projection_layer, have_qplayer, have_qpth, kkt_solve, qplayer_solve, qpth_solve
from .problems import project, projection_constraints

__all__ = ["METHODS", "SWEEP", "make_layer", "time_fwd_bwd", "benchmark", "main"]

METHODS = ("dqp", "qpth", "qplayer", "cvxpylayers", "full_kkt")

# The stored sweep, by scale. ``small`` is exactly what produced notebooks/results/dqp.json
# (``python -m neurips25.dqp`` reproduces it). ``full`` follows the paper's §5.2 further: it times
# OptNet and QPLayer up to n = 10⁴ (chain: 571,710 and 471,650 ms there, dQP 224.89 ms) and dQP to n = 10⁵;
# we lift the dense baselines' caps to 10⁴ and take the best of 5 repeats.
_NS = [100, 200, 500, 1000, 2000, 3000, 5000, 10000, 20000, 50000, 100000]
SWEEP = {
    "small": dict(ns=_NS, caps={"cvxpylayers": 3000, "full_kkt": 2000, "qpth": 2000, "qplayer": 2000}, repeats=3),
    "full": dict(ns=_NS, caps={"cvxpylayers": 10000, "full_kkt": 10000, "qpth": 10000, "qplayer": 10000},
                 repeats=5),
}


def available_methods() -> tuple[str, ...]:
    """The benchmark methods installed here (qpth is optional)."""
    have = {"qpth": have_qpth(), "qplayer": have_qplayer()}
    return tuple(m for m in METHODS if have.get(m, True))


def make_layer(method: str, kind: str, n: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """x ↦ projection of x for one method (constructed once, outside the timed region)."""
    if method == "dqp":
        return lambda x: project(x, kind)
    if method in ("full_kkt", "qpth", "qplayer"):  # dense layers
        cons = projection_constraints(kind, n)
        t = lambda M: torch.as_tensor(M.toarray(), dtype=torch.float64)
        P, C, d = t(cons["P"]), t(cons["C"]), cons["d"]
        A = t(cons["A"]) if "A" in cons else torch.zeros(0, n, dtype=torch.float64)
        b = cons.get("b", torch.zeros(0, dtype=torch.float64))
        f = {"full_kkt": kkt_solve, "qpth": qpth_solve, "qplayer": qplayer_solve}[method]
        return lambda x: f(P, -x, A, b, C, d)
    if method == "cvxpylayers":
        layer = cvxpy_projection_layer(kind, n)
        return lambda x: layer(x)[0]
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def time_fwd_bwd(layer: Callable, x: torch.Tensor, g: torch.Tensor, repeats: int = 3,
                 long: float = 2.0) -> tuple[float, torch.Tensor]:
    """Best-of-``repeats`` CPU time (s, ``time.process_time``: this process's CPU seconds, so a busy
    shared machine does not inflate it; every method runs single-threaded) of z = layer(x) and the
    backward of ⟨g, z⟩ (a run longer than ``long`` seconds is not repeated), and the gradient
    ∂⟨g, z⟩/∂x."""
    best, grad = float("inf"), None
    for _ in range(repeats):
        xr = x.detach().clone().requires_grad_(True)
        t0 = time.process_time()
        z = layer(xr)
        (z * g).sum().backward()
        t = time.process_time() - t0
        best, grad = min(best, t), xr.grad.detach()
        if t > long:
            break
    return best, grad


def benchmark(kind: str, ns, caps: dict[str, int] | None = None, repeats: int = 3,
              seed: int = 0, methods=None) -> dict[str, dict[str, dict[int, float]]]:
    """``{"time": {method: {n: seconds}}, "grad_diff": {method: {n: rel. difference to dQP}}}`` for
    the ``kind`` projection; ``caps[method]`` is the largest n run for that method (the dense layers
    grow too slow to run everywhere); ``methods`` defaults to all installed ones. Under
    ``NEURIPS25_SMOKE=1`` only the first two sizes and one repeat are run (``runtime.cap``)."""
    from threadpoolctl import threadpool_limits

    from ..runtime import cap

    ns, repeats = list(ns)[: cap(len(ns))], cap(repeats, 1)

    caps = caps or {}
    methods = available_methods() if methods is None else tuple(methods)
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"methods must be among {METHODS}, got {sorted(unknown)}")
    out = {"time": {m: {} for m in methods}, "grad_diff": {m: {} for m in methods}}
    with threadpool_limits(1):  # every method single-threaded: comparable on a shared machine
        for n in ns:
            rng = np.random.default_rng(seed + n)
            x = torch.tensor(rng.standard_normal(n) * (3.0 if kind == "simplex" else 1.0))
            g = torch.tensor(rng.standard_normal(n))
            ref = None
            for m in ("dqp",) + tuple(mm for mm in methods if mm != "dqp"):
                if m not in methods and m != "dqp":
                    continue
                if n > caps.get(m, 10**9):
                    continue
                t, grad = time_fwd_bwd(make_layer(m, kind, n), x, g, repeats)
                if m == "dqp":
                    ref = grad
                if m in methods:
                    out["time"][m][int(n)] = t
                    out["grad_diff"][m][int(n)] = float((grad - ref).abs().max() / (1 + ref.abs().max()))
    return out


def main(argv=None) -> None:
    from ..results import add_scale_arguments, save_results

    ap = argparse.ArgumentParser(description="dQP scaling benchmark -> notebooks/results/dqp.json. "
                                 "Settings: SWEEP[--scale]; the flags below override them.")
    add_scale_arguments(ap)
    ap.add_argument("--ns", type=int, nargs="+")
    ap.add_argument("--cap-cvxpylayers", type=int)
    ap.add_argument("--cap-full-kkt", type=int)
    ap.add_argument("--cap-qpth", type=int)
    ap.add_argument("--cap-qplayer", type=int)
    ap.add_argument("--repeats", type=int)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    cfg = SWEEP[a.scale]
    ns = a.ns or list(cfg["ns"])
    caps = dict(cfg["caps"])
    for m, v in (("cvxpylayers", a.cap_cvxpylayers), ("full_kkt", a.cap_full_kkt), ("qpth", a.cap_qpth),
                 ("qplayer", a.cap_qplayer)):
        if v is not None:
            caps[m] = v
    repeats = a.repeats or cfg["repeats"]
    import importlib.metadata as md

    versions = {}
    for pkg in ("qpth", "proxsuite", "cvxpylayers", "clarabel", "qpsolvers"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    data = {"ns": ns, "caps": caps, "repeats": repeats, "methods": list(available_methods()),
            "versions": versions}
    for kind in ("simplex", "chain"):
        res = benchmark(kind, ns, caps, repeats, a.seed)
        data[kind] = {m: {str(n): t for n, t in v.items()} for m, v in res["time"].items()}
        data[kind + "_grad_diff"] = {m: {str(n): t for n, t in v.items()}
                                     for m, v in res["grad_diff"].items()}
        print(kind, {m: {n: round(t, 4) for n, t in v.items()} for m, v in res["time"].items()},
              flush=True)
    cmd = (f"python -m neurips25.dqp --ns {' '.join(map(str, ns))} --cap-cvxpylayers {caps['cvxpylayers']}"
           f" --cap-full-kkt {caps['full_kkt']} --cap-qpth {caps['qpth']} --cap-qplayer {caps['qplayer']}")
    if repeats != 3:
        cmd += f" --repeats {repeats}"
    if a.scale != "small":
        cmd += f" --scale {a.scale}"
    print("wrote", save_results("dqp", data, command=cmd, seed=a.seed, path=a.out, scale=a.scale))
