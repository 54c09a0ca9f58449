"""The chapter's experiment grid: methods x missing rates x seeds on the real Mfeat (UCI).

``python -m neurips25.guitar`` first tunes every method with hyper-parameters on separate tuning
instances (their own subsample of Mfeat's digits and their own masks, never a test seed), then runs
the grid with the chosen values, the held-out seeds and the diagnostics, and stores all of it in
``notebooks/results/guitar.json``; ``--part sensitivity`` adds the sensitivity scan and ``--part
whole`` the paper-sized check on all 2,000 digits and ``--part surrogates`` the paired HP-l_delta vs
l_delta ablation on ten seeds (``--part replication``: on 90 fresh seeds) to that file. The notebook re-runs a subset live
and checks it against the stored numbers.
"""
from __future__ import annotations

import argparse
import sys
from functools import lru_cache
from typing import Sequence

import numpy as np

from ..runtime import check_int
from .baselines import _kmeans, baseline_embeddings
from .data import N_DIGITS, N_MFEAT, clustering_scores, mfeat, mfeat_digits, missing_masks, multiview_digits
from .solver import GUITAR, spectral_labels

__all__ = ["ABLATIONS", "BASELINES", "METHODS", "HALF_ONLY", "DATASETS", "DEFAULTS", "TUNING", "CONFIRM_METHODS",
           "DIAGNOSED", "SENSITIVITY", "STANDIN", "WHOLE", "SURROGATES", "MFEAT_LAMBDAS", "SWEEP", "run_method", "run_grid", "tune",
           "sensitivity", "kmeans_repeats", "surrogate_runs", "main"]

# "mfeat": the paper's data set (UCI Multiple Features, shipped with the package); the two stand-ins
# built from scikit-learn's 8x8 digits serve as contrasts (six Mfeat-like views; four pixel views).
DATASETS = {"mfeat": mfeat, "mfeat_like": mfeat_digits, "digits4": multiview_digits}

# GUITAR variants: the keyword changes relative to the full model. "No GRN" is the paper's ablation
# (Tables 2 and 4): lam1 = 0, so nothing penalises the noise E_v. The Frobenius variant replaces GRN by
# lam1/2 ||E||_F^2 (Sigma frozen at I) with its own tuned lam1: a comparison the paper does not run.
ABLATIONS = {
    "GUITAR": {},
    "GUITAR (nuclear norm)": {"rank": "nuclear"},
    "GUITAR (ℓδ)": {"rank": "ldelta"},
    "GUITAR (no manifold)": {"lam2": 0.0, "lam3": 0.0},
    "GUITAR (no GRN, λ1 = 0)": {"noise": "l2", "lam1": 0.0},
    "GUITAR (l2 noise, tuned λ1)": {"noise": "l2"},
}
# PVC is the paper's runner-up on Mfeat at rate 0.5 (58.2 % ACC); APMC is not among the paper's baselines.
BASELINES = ("Best single view", "Concat + k-means", "PVC", "APMC")
METHODS = tuple(ABLATIONS) + BASELINES
# Run at missing rate 0.5 only, as the paper runs its ablations (Sec. 4.1: "all experiments except
# those in Section 4.2 are conducted with r = 0.5"); the no-manifold variant runs at every rate.
HALF_ONLY = ("GUITAR (nuclear norm)", "GUITAR (ℓδ)", "GUITAR (no GRN, λ1 = 0)", "GUITAR (l2 noise, tuned λ1)")
# Held-out seeds for the one observation made after seeing seeds 0-2 (GUITAR's lead over APMC grows
# with the missing rate): only these two methods are rerun there.
CONFIRM_METHODS = ("GUITAR", "APMC")
# Diagnostics of the low-missing-rate comparison (stored beside the grid): these methods on complete
# data (rate 0), and their tuning repeated at rate 0.1 on the same tuning seeds.
DIAGNOSED = ("GUITAR", "PVC", "APMC")
# Small-scale settings shared by the notebook and the stored grid: a random quarter of Mfeat's 2,000
# digits per instance, and the official ADMM schedule (mu, rho x 1.2 per iteration, at most 200
# iterations; a faster x1.3 for 100 iterations costs GUITAR 0.02 ACC at rate 0.5, the sensitivity scan).
DEFAULTS = {"n": 500, "max_iter": 200, "eta": 1.2, "data": "mfeat"}

# Hyper-parameter tuning, the same budget (four settings) for every method that has hyper-parameters,
# selected by mean ACC on two tuning instances (missing rate 0.5, the paper's setting; seeds 100 and
# 101, not test seeds: their own subsamples of the digits and their own masks). GUITAR: lam1 and the number of anchors t (the paper searches lam1 in 1e-3..10 and
# finds t = 2c or 3c best); its structural ablations (nuclear, l-delta, no manifold, no GRN) reuse
# GUITAR's choice. The Frobenius variant: its own lam1 (its scale differs from GRN's likelihood).
# PVC: its latent dimension (c or 2c) and l1 weight. APMC: the anchor-graph neighbourhood size. The
# simple baselines have none.
TUNING = {
    "seeds": (100, 101),
    "rate": 0.5,
    "grids": {
        "GUITAR": [{"lam1": lam1, "anchors_per_cluster": a} for lam1 in (1e-3, 1e-2) for a in (1, 2)],
        "GUITAR (l2 noise, tuned λ1)": [{"lam1": lam1} for lam1 in (1e-2, 1e-1, 1.0, 10.0)],
        "APMC": [{"n_neighbors": k} for k in (3, 5, 10, 20)],
        "PVC": [{"latent_per_cluster": a, "lam": lam} for a in (1, 2) for lam in (1e-2, 1e-1)],
    },
}

# Sensitivity diagnostic (``--part sensitivity``, stored beside the grid): the paper has no validation
# split, so its settings are read off the reported data; how far does each structured method move over
# a wider grid *on the test instances* (rate 0.5, the test seeds)? GUITAR: the two manifold weights and
# HP-l_delta's delta, which the tuning above keeps at the official values (lam2 = 0.1, lam3 = 1,
# delta = 1e-2; lam1 and t as tuned), one at a time, to values from the paper's grids (lam 1e-3..10, delta
# 1e-3..1; the official values themselves are the grid's GUITAR rows); PVC: latent dimension x l1
# weight; APMC: neighbourhood size. The last GUITAR setting is the faster ADMM schedule earlier
# versions of this chapter used (eta = 1.3 for 100 iterations). Not used to choose anything:
# it bounds what test-label selection could add to each method.
SENSITIVITY = {
    "rate": 0.5,
    "grids": {
        "GUITAR": [{"lam2": lam2} for lam2 in (0.01, 1.0)] + [{"lam3": lam3} for lam3 in (0.1, 10.0)]
        + [{"delta": delta} for delta in (1e-3, 1e-1, 1.0)] + [{"eta": 1.3, "max_iter": 100}],
        "PVC": [{"latent_per_cluster": a, "lam": lam} for a in (1, 2, 3) for lam in (1e-3, 1e-2, 1e-1, 1.0)],
        "APMC": [{"n_neighbors": k} for k in (3, 5, 10, 20, 40)],
    },
}

# The stand-in contrast (stored beside the grid): the runner-ups and GUITAR on the six Mfeat-like views
# that earlier versions of this chapter computed from scikit-learn's 8x8 digits, same n (at most their
# 1,797 digits), rate 0.5, the test seeds and the tuned settings.
STANDIN = {"data": "mfeat_like", "rate": 0.5, "methods": ("GUITAR", "PVC", "APMC")}
# The paper-sized check (``--part whole``): GUITAR and the baselines on all 2,000 digits at rate 0.5
# (the seed then only draws the mask and k-means), with the settings tuned on the n = 500 instances.
WHOLE = {"n": N_MFEAT, "rate": 0.5, "seeds": (0, 1, 2), "methods": ("GUITAR",) + BASELINES}
# The paired surrogate ablation (``--part surrogates``; Table 3 of the paper: HP-l_delta against l_delta at rate
# 0.5). On three seeds the per-seed differences (-0.12 .. +0.08) dwarfed the mean, so it runs on ten seeds,
# paired (the same digits, mask and k-means seeds for both surrogates), and each seed's ACC is the mean of
# five k-means runs on the one fitted embedding, as the official demo reports the mean of ``times = 5``
# runs on one fixed mask (its ADMM is deterministic, so the five runs differ only in k-means' starts). Run
# j uses k-means seed ``seed + 1000 j``; run 0 is the grid's. The rounding diagnostic refits both
# surrogates on seeds 0-2 with every view entry multiplied by ``1 + eps * N(0, 1)`` (``run_method``'s
# ``perturb``): how far does a change far below the data's precision move the result?
# ``--part replication``: the same paired protocol on 90 fresh seeds (10-99), criteria and status rule
# written down before the run; the ten seeds' interval was too wide to decide non-inferiority.
SURROGATES = {"rate": 0.5, "seeds": tuple(range(10)), "kmeans_runs": 5,
              "methods": ("GUITAR", "GUITAR (ℓδ)"), "perturb_seeds": (0, 1, 2), "perturb_eps": (1e-13, 2e-13),
              "replication_seeds": tuple(range(10, 100))}

# The stored grid, by scale. ``kmeans_runs``: every score of the grid, the held-out seeds, the complete-data
# and the stand-in rows is the mean of that many k-means runs on one fit (``run_method``), the official
# demo's protocol and the surrogate ablation's; the tuning, the sensitivity scan and the 2,000-digit check
# keep one k-means run (``--part protocol`` rescored the former four with the stored tuned settings). ``small`` is exactly what produced notebooks/results/guitar.json
# (``python -m neurips25.guitar`` and its three ``--part`` runs reproduce it). ``full`` is the paper's
# size: all 2,000 digits, five seeds (the paper runs five) and five held-out confirmation seeds.
# The paper's Mfeat setting (``--part mfeat-lambdas``): its sensitivity study finds Mfeat "consistently stable when
# lambda1, lambda2, and lambda3 are chosen from {1e-3, 1e-2, 1e-1}", while the official demo's lam3 = 1 (kept above)
# is its COIL20MV value. lam3 = 0.1, the value of that range nearest the demo's, fixed before the run; GUITAR and the
# baselines on fresh seeds 7-11 (the claims' test, registered 2026-12-08) and on the grid's seeds 0-2.
MFEAT_LAMBDAS = {"lam3": 0.1, "seeds": (0, 1, 2, 7, 8, 9, 10, 11), "fresh": (7, 8, 9, 10, 11),
                 "methods": ("GUITAR",) + BASELINES}

SWEEP = {
    "small": dict(n=DEFAULTS["n"], max_iter=DEFAULTS["max_iter"], eta=DEFAULTS["eta"], data=DEFAULTS["data"],
                  rates=[0.1, 0.3, 0.5], seeds=[0, 1, 2], confirm_seeds=[3, 4, 5], kmeans_runs=5),
    "full": dict(n=N_MFEAT, max_iter=200, eta=1.2, data=DEFAULTS["data"], rates=[0.1, 0.3, 0.5],
                 seeds=[0, 1, 2, 3, 4], confirm_seeds=[5, 6, 7, 8, 9], kmeans_runs=5),
}


@lru_cache(maxsize=8)
def _cached_views(data: str, n: int, seed: int):
    views, y = DATASETS[data](n, seed)
    for X in views:
        X.flags.writeable = False
    y.flags.writeable = False
    return tuple(views), y


def _views(data: str, n: int, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The views of one (data, n, seed) instance, built once and shared read-only by every method."""
    views, y = _cached_views(data, int(n), int(seed))
    return list(views), y


def _guitar_kw(method: str, params: dict | None) -> dict:
    """GUITAR keywords for ``method``: GUITAR's tuned values, the ablation's change, the variant's own tuned values."""
    params = params or {}
    kw = {**params.get("GUITAR", {}), **ABLATIONS[method], **params.get(method, {})}
    if method == "GUITAR (no GRN, λ1 = 0)":
        kw["lam1"] = 0.0
    return kw


def run_method(method: str, rate: float, seed: int, n: int = DEFAULTS["n"],
               max_iter: int = DEFAULTS["max_iter"], eta: float = DEFAULTS["eta"], data: str = DEFAULTS["data"],
               device: str = "cpu", params: dict | None = None, return_model: bool = False, perturb: float = 0.0,
               kmeans_runs: int = 1, **guitar_kw):
    """Scores ``{"ACC", "NMI", "purity"}`` of one method on one (missing rate, seed) instance.

    The seed fixes the digits subsample, the missingness mask and k-means; ``data`` picks the views
    (``DATASETS``). ``params`` holds tuned hyper-parameters by method (``tune``'s output): GUITAR's
    (``lam1``, ``anchors_per_cluster``) apply to all GUITAR variants, a variant's own entry and the
    explicit ``guitar_kw`` override them; ``params["APMC"]`` sets APMC's ``n_neighbors``. "Best single
    view" reports the best of the views by ACC (an oracle choice that favours the baseline). ``perturb``
    (a rounding diagnostic, GUITAR variants only) multiplies every view entry by ``1 + perturb * N(0, 1)``
    (a fixed generator, seed 7) before the fit. ``kmeans_runs``: the scores are the means over that many
    k-means runs (10 restarts each; run j seeded ``seed + 1000 j``) on the one fitted embedding, the
    official demo's protocol, with their ACCs as ``kmeans_ACC`` when more than one. Under
    ``NEURIPS25_SMOKE=1`` GUITAR's ADMM runs at most 2 iterations (``runtime.cap``).
    """
    from ..runtime import cap

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if data not in DATASETS:
        raise ValueError(f"data must be one of {tuple(DATASETS)}, got {data!r}")
    if not isinstance(perturb, (int, float)) or isinstance(perturb, bool) or not 0.0 <= perturb < 1e-3:
        raise ValueError(f"perturb must be a float in [0, 1e-3), got {perturb!r}")
    kmeans_runs = check_int(kmeans_runs, "kmeans_runs")
    if perturb and method not in ABLATIONS:
        raise ValueError(f"perturb applies to GUITAR variants only, got method {method!r}")
    views, y = _views(data, n, seed)
    if perturb:
        rng = np.random.default_rng(7)
        views = [X * (1.0 + perturb * rng.standard_normal(X.shape)) for X in views]
    masks = missing_masks(n, len(views), rate, seed)
    k = int(len(np.unique(y)))
    model = None
    if method in ABLATIONS:
        kw = {**_guitar_kw(method, params), **guitar_kw}
        kw.setdefault("n_anchors", kw.pop("anchors_per_cluster", 1) * k)
        kw.pop("anchors_per_cluster", None)
        model = GUITAR(k, max_iter=cap(max_iter), eta=eta, seed=seed, device=device, **kw).fit(views, masks)
        embeddings = [(np.concatenate(model.Z_, 0).T, True)]
    else:
        embeddings = baseline_embeddings(method, views, masks, k, seed, **(params or {}).get(method, {}))
    per_embedding = []
    for F, spectral in embeddings:
        runs = _repeated_scores(y, F, k, seed, kmeans_runs, spectral,
                                first=model.labels_ if model is not None else None)
        per_embedding.append({**{m: float(np.mean([r[m] for r in runs])) for m in runs[0]},
                              **({"kmeans_ACC": [r["ACC"] for r in runs]} if kmeans_runs > 1 else {})})
    scores = max(per_embedding, key=lambda s: s["ACC"])  # "Best single view": the best view by (mean) ACC
    return (scores, model) if return_model else scores


def _repeated_scores(y, F: np.ndarray, k: int, seed: int, runs: int, spectral: bool, first=None) -> list[dict]:
    """``clustering_scores`` of ``runs`` k-means runs (10 restarts each) on the embedding ``F``, through
    ``spectral_labels`` when ``spectral``; run j uses seed ``seed + 1000 j`` for every method, so run 0 is the
    single-run protocol's. ``first``: labels already computed for run 0 (a fitted GUITAR's own)."""
    cluster = spectral_labels if spectral else _kmeans
    return [clustering_scores(y, first if first is not None and j == 0 else cluster(F, k, seed + 1000 * j))
            for j in range(runs)]


def tune(n: int = DEFAULTS["n"], max_iter: int = DEFAULTS["max_iter"], eta: float = DEFAULTS["eta"],
         data: str = DEFAULTS["data"], device: str = "cpu", tuning: dict = TUNING) -> tuple[dict, list[dict]]:
    """Pick each method's hyper-parameters by mean ACC on the tuning instances (``tuning["seeds"]`` at
    ``tuning["rate"]``). Returns ``(params, trials)``: the chosen setting per method (``run_method``'s
    ``params``) and one record per tried setting. Under ``NEURIPS25_SMOKE=1`` only the first setting
    of each grid is tried, on one instance (``runtime.cap``)."""
    from ..runtime import cap

    params, trials = {}, []
    for method, grid in tuning["grids"].items():
        best = None
        for setting in grid[: cap(len(grid), 1)]:
            acc = float(np.mean([
                run_method(method, tuning["rate"], seed, n=n, max_iter=max_iter, eta=eta, data=data,
                           device=device, params={**params, method: setting})["ACC"]
                for seed in tuning["seeds"][: cap(len(tuning["seeds"]), 1)]]))
            trials.append({"method": method, **setting, "ACC": acc})
            if best is None or acc > best[1]:
                best = (setting, acc)
        params[method] = best[0]
    return params, trials


def sensitivity(params: dict, seeds: Sequence[int] = (0, 1, 2), grids: dict | None = None,
                rate: float = SENSITIVITY["rate"], **kw) -> list[dict]:
    """One record ``{method, seed, <setting>, ACC}`` per (method, setting, seed) of ``grids``
    (``SENSITIVITY["grids"]`` by default), each setting laid over the method's tuned ``params``; a
    setting's ``max_iter`` and ``eta`` (GUITAR's ADMM schedule) replace those of ``kw`` instead.
    Under ``NEURIPS25_SMOKE=1`` one setting per method and one seed (``runtime.cap``)."""
    from ..runtime import cap

    grids = SENSITIVITY["grids"] if grids is None else grids
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of tuned settings by method, got {type(params).__name__}")
    unknown = [m for m in grids if m not in METHODS]
    if unknown:
        raise ValueError(f"grids: unknown methods {unknown}; expected names from {METHODS}")
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"rate must be in [0, 1), got {rate!r}")
    rows = []
    for method, grid in grids.items():
        for setting in grid[: cap(len(grid), 1)]:
            for seed in list(seeds)[: cap(len(seeds), 1)]:
                schedule = {k: v for k, v in setting.items() if k in ("max_iter", "eta")}
                model_kw = {k: v for k, v in setting.items() if k not in schedule}
                p = {**params, method: {**params.get(method, {}), **model_kw}}
                rows.append({"method": method, "seed": seed, **setting,
                             "ACC": run_method(method, rate, seed, params=p, **{**kw, **schedule})["ACC"]})
    return rows


def kmeans_repeats(model: GUITAR, y: np.ndarray, runs: int, seed: int) -> list[float]:
    """ACC of ``runs`` k-means runs (each with 10 restarts) on ``model``'s spectral embedding; run ``j`` uses
    k-means seed ``seed + 1000 j``, so run 0 is the model's own labels. The official demo's repeated runs."""
    if not isinstance(model, GUITAR) or not hasattr(model, "Z_"):
        raise TypeError("model must be a fitted GUITAR")
    runs = check_int(runs, "runs")
    F = np.concatenate(model.Z_, 0).T
    if len(y) != len(F):
        raise ValueError(f"y must have one label per sample ({len(F)}), got {len(y)}")
    return [r["ACC"] for r in _repeated_scores(y, F, model.n_clusters, seed, runs, spectral=True)]


def surrogate_runs(params: dict, seeds: Sequence[int] = SURROGATES["seeds"],
                   methods: Sequence[str] = SURROGATES["methods"], runs: int = SURROGATES["kmeans_runs"],
                   rate: float = SURROGATES["rate"], perturb: float = 0.0, **kw) -> list[dict]:
    """One record ``{method, seed, perturb, kmeans_ACC, ACC}`` per (seed, method): one fit scored by ``runs``
    k-means runs (``run_method``'s ``kmeans_runs``); ``ACC`` is the mean of ``kmeans_ACC``. Every method of a seed sees the same digits,
    mask and k-means seeds (a paired comparison). Under ``NEURIPS25_SMOKE=1`` one seed (``runtime.cap``)."""
    from ..runtime import cap

    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of tuned settings by method, got {type(params).__name__}")
    bad = [m for m in methods if m not in ABLATIONS]
    if bad:
        raise ValueError(f"methods: {bad} are not GUITAR variants; expected names from {tuple(ABLATIONS)}")
    rows = []
    for seed in list(seeds)[: cap(len(seeds), 1)]:
        for method in methods:
            s = run_method(method, rate, seed, params=params, perturb=perturb, kmeans_runs=runs, **kw)
            accs = s.get("kmeans_ACC", [s["ACC"]])  # run_method lists the runs only when there are several
            rows.append({"method": method, "seed": seed, "perturb": perturb, "kmeans_ACC": accs,
                         "ACC": float(np.mean(accs))})
    return rows


def run_grid(methods: Sequence[str] = METHODS, rates: Sequence[float] = (0.1, 0.3, 0.5),
             seeds: Sequence[int] = (0, 1, 2), **kw) -> list[dict]:
    """One record ``{method, rate, seed, ACC, NMI, purity}`` per grid point (``HALF_ONLY`` methods at
    rate 0.5 only). Under ``NEURIPS25_SMOKE=1`` only one rate and one seed are run (``runtime.cap``)."""
    from ..runtime import cap

    rows = []
    for rate in list(rates)[: cap(len(rates), 1)]:
        for seed in list(seeds)[: cap(len(seeds), 1)]:
            for method in methods:
                if method in HALF_ONLY and rate != 0.5:
                    continue
                s = run_method(method, rate, seed, **kw)
                rows.append({"method": method, "rate": rate, "seed": seed, **s})
    return rows


def _diagnosed(smoke: bool) -> list[str]:
    # Under NEURIPS25_SMOKE=1 the diagnostics leave GUITAR out (the grid has run its code path already).
    return [m for m in DIAGNOSED if not (smoke and m in ABLATIONS)]


def _protocol_rows(cfg: dict, params: dict, kw: dict, smoke: bool):
    """Yields ``(key, rows)`` for the grid, the held-out seeds, complete data and the stand-in, each a
    ``run_grid`` with ``cfg["kmeans_runs"]`` k-means runs per fit, printing every row as it goes."""
    kw = {**kw, "params": params, "kmeans_runs": cfg["kmeans_runs"]}
    diagnosed = _diagnosed(smoke)
    jobs = [("rows", lambda: run_grid(rates=cfg["rates"], seeds=cfg["seeds"], **kw)),
            ("confirm_rows", lambda: run_grid(CONFIRM_METHODS, rates=cfg["rates"], seeds=cfg["confirm_seeds"], **kw)),
            ("complete_rows", lambda: run_grid(diagnosed, rates=[0.0], seeds=cfg["seeds"], **kw)),
            ("standin_rows", lambda: run_grid([m for m in STANDIN["methods"] if m in diagnosed],
                                              rates=[STANDIN["rate"]], seeds=cfg["seeds"],
                                              **{**kw, "data": STANDIN["data"], "n": min(kw["n"], N_DIGITS)}))]
    for key, job in jobs:
        rows = job()
        for r in rows:
            print(f"{key:13s} {r['method']:28s} rate={r['rate']:.1f} seed={r['seed']} ACC={r['ACC']:.3f} "
                  f"NMI={r['NMI']:.3f} purity={r['purity']:.3f}", flush=True)
        yield key, rows


def main(argv: Sequence[str] | None = None) -> None:
    from ..results import add_scale_arguments, load_results, save_results
    from ..runtime import device, smoke

    p = argparse.ArgumentParser(prog="python -m neurips25.guitar", description=__doc__)
    add_scale_arguments(p)
    p.add_argument("--seeds", type=int, nargs="+")
    p.add_argument("--rates", type=float, nargs="+")
    p.add_argument("--n", type=int)
    p.add_argument("--max-iter", type=int)
    p.add_argument("--data", choices=tuple(DATASETS))
    p.add_argument("--confirm-seeds", type=int, nargs="*")
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--part", choices=("grid", "sensitivity", "whole", "surrogates", "replication", "protocol",
                                      "mfeat-lambdas"),
                   default="grid",
                   help="grid (default): tuning, grid, held-out seeds and diagnostics, written afresh; "
                        "sensitivity / whole / surrogates / replication: the sensitivity scan / the run on "
                        "all 2,000 digits / the paired HP-l_delta vs l_delta ablation on ten seeds / the same "
                        "on 90 fresh seeds, with the stored tuned settings, added to the stored file; "
                        "protocol: the grid, held-out, complete-data and stand-in rows rerun with the stored "
                        "tuned settings and the sweep's kmeans_runs; mfeat-lambdas: GUITAR with the paper's "
                        "Mfeat lam3 and the baselines on MFEAT_LAMBDAS['seeds'], added to the stored file")
    a = p.parse_args(argv)
    cfg = dict(SWEEP[a.scale])
    for key in ("seeds", "rates", "n", "max_iter", "confirm_seeds", "data"):
        if getattr(a, key) is not None:
            cfg[key] = getattr(a, key)
    kw = dict(n=cfg["n"], max_iter=cfg["max_iter"], eta=cfg["eta"], data=cfg["data"], device=str(device()))
    cmd = ("python -m neurips25.guitar " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    if a.part == "protocol":
        stored = load_results("guitar", path=a.out, scale=a.scale)
        data = stored["data"]
        for key, rows in _protocol_rows(cfg, data["params"], kw, smoke()):
            data = {**data, key: rows, "kmeans_runs": {**data.get("kmeans_runs", {}), key: cfg["kmeans_runs"]},
                    "protocol_command": cmd}
            if not a.no_save:  # after each part, so a stopped run leaves whole parts
                print(save_results("guitar", data, command=stored["command"], seed=stored["seed"], path=a.out,
                                   scale=a.scale), flush=True)
        return
    if a.part != "grid":
        stored = load_results("guitar", path=a.out, scale=a.scale)
        params = stored["data"]["params"]
        if a.part == "sensitivity":
            rows = sensitivity(params, seeds=cfg["seeds"], **kw)
            new = {"sensitivity": rows}
        elif a.part == "surrogates":
            seeds = a.seeds if a.seeds is not None else SURROGATES["seeds"]
            rows = surrogate_runs(params, seeds=seeds, **kw)
            for eps in SURROGATES["perturb_eps"]:
                rows += surrogate_runs(params, seeds=SURROGATES["perturb_seeds"], perturb=eps, **kw)
            new = {"surrogate_rows": rows, "surrogate_kmeans_runs": SURROGATES["kmeans_runs"]}
        elif a.part == "mfeat-lambdas":
            seeds = a.seeds if a.seeds is not None else MFEAT_LAMBDAS["seeds"]
            p_m = {**params, "GUITAR": {**params["GUITAR"], "lam3": MFEAT_LAMBDAS["lam3"]}}
            rows = run_grid(MFEAT_LAMBDAS["methods"], rates=cfg["rates"], seeds=seeds, params=p_m,
                            kmeans_runs=cfg["kmeans_runs"], **kw)
            new = {"mfeat_lambda_rows": rows, "mfeat_lambdas": {**MFEAT_LAMBDAS, "seeds": list(seeds)}}
        elif a.part == "replication":
            seeds = a.seeds if a.seeds is not None else SURROGATES["replication_seeds"]
            rows = surrogate_runs(params, seeds=seeds, **kw)
            new = {"surrogate_replication_rows": rows}
        else:
            rows = run_grid(WHOLE["methods"], rates=[WHOLE["rate"]], seeds=WHOLE["seeds"], params=params,
                            **{**kw, "n": WHOLE["n"]})
            new = {"whole_rows": rows, "whole_n": WHOLE["n"]}
        for r in rows:
            print(a.part, r, flush=True)
        if not a.no_save:
            data = {**stored["data"], **new, f"{a.part}_command": cmd}
            print(save_results("guitar", data, command=stored["command"], seed=stored["seed"], path=a.out,
                               scale=a.scale))
        return
    params, trials = tune(**kw)
    for t in trials:
        print("tune", t, flush=True)
    parts = dict(_protocol_rows(cfg, params, kw, smoke()))
    rows, confirm, complete, standin = (parts[k] for k in ("rows", "confirm_rows", "complete_rows", "standin_rows"))
    _, trials_01 = tune(**kw, tuning={**TUNING, "rate": 0.1, "grids": {m: TUNING["grids"][m] for m in
                                                                         _diagnosed(smoke())}})
    if not a.no_save:
        data = {"rows": rows, "confirm_rows": confirm, "n": cfg["n"], "max_iter": cfg["max_iter"],
                "eta": cfg["eta"], "data": cfg["data"], "params": params, "tuning_trials": trials,
                "tuning": {"seeds": list(TUNING["seeds"]), "rate": TUNING["rate"]},
                "complete_rows": complete, "tuning_trials_rate_0.1": trials_01,
                "standin_rows": standin, "standin_data": STANDIN["data"],
                "kmeans_runs": {k: cfg["kmeans_runs"] for k in parts}}
        print(save_results("guitar", data, command=cmd, seed=cfg["seeds"][0], path=a.out, scale=a.scale))
