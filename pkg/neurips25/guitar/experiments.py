"""The chapter's experiment grid: methods x missing rates x seeds on the multi-view digits.

``python -m neurips25.guitar`` runs the full grid and stores it in ``notebooks/results/guitar.json``;
the notebook re-runs a subset live and checks it against the stored numbers.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

import numpy as np

from .baselines import apmc, concat_kmeans, single_view_kmeans
from .data import clustering_scores, missing_masks, multiview_digits
from .solver import GUITAR

__all__ = ["ABLATIONS", "BASELINES", "METHODS", "DEFAULTS", "L2_LAM1", "CONFIRM_METHODS", "run_method",
           "run_grid", "main"]

# lam1 for the Frobenius-noise ablation, retuned for it: the best of lam1 in {1e-3, 1e-2, 1e-1, 1, 10}
# by ACC on one tuning instance (n = 500, missing rate 0.5, seed 0): 0.23 / 0.68 / 0.66 / 0.69 / 0.66.
# GRN's lam1 = 1e-3 is far too weak for a fixed Sigma = I (the noise term swallows the residual).
L2_LAM1 = 1.0

# GUITAR variants: the keyword changes relative to the full model.
ABLATIONS = {
    "GUITAR": {},
    "GUITAR (nuclear norm)": {"rank": "nuclear"},
    "GUITAR (no manifold)": {"lam2": 0.0, "lam3": 0.0},
    "GUITAR (l2 noise, GRN's λ1)": {"noise": "l2"},
    "GUITAR (l2 noise, tuned λ1)": {"noise": "l2", "lam1": L2_LAM1},
}
BASELINES = ("Best single view", "Concat + k-means", "APMC")
METHODS = tuple(ABLATIONS) + BASELINES
# Held-out seeds (3-5) for the one observation made after seeing seeds 0-2 (GUITAR's lead over APMC
# grows with the missing rate): only these two methods are rerun there.
CONFIRM_METHODS = ("GUITAR", "APMC")
# Small-scale settings shared by the notebook and the stored grid. mu and rho grow by 1.3 per
# iteration (the official code: 1.2 over 200 iterations) so ADMM converges within 100 iterations.
DEFAULTS = {"n": 500, "max_iter": 100, "eta": 1.3}

# The stored grid, by scale. ``small`` is exactly what produced notebooks/results/guitar.json
# (``python -m neurips25.guitar`` reproduces it). ``full`` moves towards the paper: its ADMM runs up
# to 200 iterations with mu, rho x 1.2 per iteration, on datasets of up to ~2,000 samples (Mfeat,
# itself multi-feature handwritten digits, has 2,000); we use all 1,797 digits, the paper's schedule,
# five seeds and five held-out confirmation seeds.
SWEEP = {
    "small": dict(n=DEFAULTS["n"], max_iter=DEFAULTS["max_iter"], eta=DEFAULTS["eta"], rates=[0.1, 0.3, 0.5],
                  seeds=[0, 1, 2], confirm_seeds=[3, 4, 5]),
    "full": dict(n=1797, max_iter=200, eta=1.2, rates=[0.1, 0.3, 0.5], seeds=[0, 1, 2, 3, 4],
                 confirm_seeds=[5, 6, 7, 8, 9]),
}


def run_method(method: str, rate: float, seed: int, n: int = DEFAULTS["n"],
               max_iter: int = DEFAULTS["max_iter"], eta: float = DEFAULTS["eta"], device: str = "cpu",
               return_model: bool = False, **guitar_kw):
    """Scores ``{"ACC", "NMI", "purity"}`` of one method on one (missing rate, seed) instance.

    The seed fixes the digits subsample, the missingness mask and k-means. "Best single view"
    reports the best of the views by ACC (an oracle choice that favours the baseline). Under
    ``NEURIPS25_SMOKE=1`` GUITAR's ADMM runs at most 2 iterations (``runtime.cap``).
    """
    from ..runtime import cap

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    views, y = multiview_digits(n, seed)
    masks = missing_masks(n, len(views), rate, seed)
    k = int(len(np.unique(y)))
    model = None
    if method in ABLATIONS:
        kw = {**ABLATIONS[method], **guitar_kw}
        model = GUITAR(k, max_iter=cap(max_iter), eta=eta, seed=seed, device=device, **kw).fit(views, masks)
        scores = clustering_scores(y, model.labels_)
    elif method == "Best single view":
        per_view = [clustering_scores(y, single_view_kmeans(views, masks, v, k, seed)) for v in range(len(views))]
        scores = max(per_view, key=lambda s: s["ACC"])
    elif method == "Concat + k-means":
        scores = clustering_scores(y, concat_kmeans(views, masks, k, seed))
    else:
        scores = clustering_scores(y, apmc(views, masks, k, seed))
    return (scores, model) if return_model else scores


def run_grid(methods: Sequence[str] = METHODS, rates: Sequence[float] = (0.1, 0.3, 0.5),
             seeds: Sequence[int] = (0, 1, 2), **kw) -> list[dict]:
    """One record ``{method, rate, seed, ACC, NMI, purity}`` per grid point. Under
    ``NEURIPS25_SMOKE=1`` only one rate and one seed are run (``runtime.cap``)."""
    from ..runtime import cap

    rows = []
    for rate in list(rates)[: cap(len(rates), 1)]:
        for seed in list(seeds)[: cap(len(seeds), 1)]:
            for method in methods:
                s = run_method(method, rate, seed, **kw)
                rows.append({"method": method, "rate": rate, "seed": seed, **s})
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    from ..results import add_scale_arguments, save_results
    from ..runtime import device

    p = argparse.ArgumentParser(prog="python -m neurips25.guitar", description=__doc__)
    add_scale_arguments(p)
    p.add_argument("--seeds", type=int, nargs="+")
    p.add_argument("--rates", type=float, nargs="+")
    p.add_argument("--n", type=int)
    p.add_argument("--max-iter", type=int)
    p.add_argument("--confirm-seeds", type=int, nargs="*")
    p.add_argument("--no-save", action="store_true")
    a = p.parse_args(argv)
    cfg = dict(SWEEP[a.scale])
    for key in ("seeds", "rates", "n", "max_iter", "confirm_seeds"):
        if getattr(a, key) is not None:
            cfg[key] = getattr(a, key)
    kw = dict(n=cfg["n"], max_iter=cfg["max_iter"], eta=cfg["eta"], device=str(device()))
    rows = run_grid(rates=cfg["rates"], seeds=cfg["seeds"], **kw)
    confirm = run_grid(CONFIRM_METHODS, rates=cfg["rates"], seeds=cfg["confirm_seeds"], **kw)
    for r in rows + confirm:
        print(f"{r['method']:24s} rate={r['rate']:.1f} seed={r['seed']} ACC={r['ACC']:.3f} "
              f"NMI={r['NMI']:.3f} purity={r['purity']:.3f}", flush=True)
    if not a.no_save:
        cmd = "python -m neurips25.guitar " + " ".join(argv if argv is not None else sys.argv[1:])
        data = {"rows": rows, "confirm_rows": confirm, "n": cfg["n"], "max_iter": cfg["max_iter"],
                "eta": cfg["eta"], "l2_lam1": L2_LAM1}
        print(save_results("guitar", data, command=cmd.strip(), seed=cfg["seeds"][0], path=a.out, scale=a.scale))


