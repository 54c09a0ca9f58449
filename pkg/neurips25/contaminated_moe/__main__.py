"""``python -m neurips25.contaminated_moe``: the rate sweeps stored for the chapter."""
from __future__ import annotations

import numpy as np

from ..results import load_results, save_results
from .model import PARAMS, SETTINGS, paper_setting
from .rates import asymptotic_sd, fit_slope, mle_errors, rate_experiment

LARGE_NS = [10_000, 31_623, 100_000, 316_228, 1_000_000]
DELTAS = [0.4, 0.2, 0.1, 0.05, 0.025, 0.0125]
TAU_NS = [4_000, 32_000]
LARGE_SETTINGS = ("nondist_eta",)  # distinguishable: Fisher sd ∝ n^{-1/2} exactly; (ii): see tau_box
DELTA_N = 30_000


def large(reps: int, seed: int) -> dict:
    """Extend the sweep to n = 10⁶ (no Hellinger integral) and compare with the Fisher prediction;
    MLE fits down the whole Δ range of the overlap study (n = 3·10⁴); τ-box sensitivity in (ii)."""
    print("large n", flush=True)
    out: dict = {"ns": LARGE_NS, "reps": reps, "settings": {}, "delta_mle": {}, "tau_box": {}}
    for setting in LARGE_SETTINGS:
        res = [mle_errors(setting, n, reps, seed) for n in LARGE_NS]
        errors = {k: [r["errors"][k] for r in res] for k in PARAMS}
        fisher = [asymptotic_sd(*paper_setting(setting, n)[::-1], n_mc=20_000) for n in LARGE_NS]
        out["settings"][setting] = {
            "errors": errors,
            "converged": [sum(r["converged"]) / reps for r in res],
            "at_tau_bound": [sum(r["at_tau_bound"]) / reps for r in res],
            "fisher_sd": {k: [f[k] / n ** 0.5 for f, n in zip(fisher, LARGE_NS)] for k in PARAMS},
            "slopes_mean": {k: fit_slope(LARGE_NS, errors[k]) for k in PARAMS},
            "slopes_median": {k: fit_slope(LARGE_NS, errors[k], stat="median") for k in PARAMS},
        }
        print(setting, "large n", {k: round(v["slope"], 3) for k, v in out["settings"][setting]["slopes_mean"].items()},
              flush=True)
    for fam in ("gaussian", "laplace"):
        res = [mle_errors("nondist_eta", DELTA_N, min(reps, 8), seed, delta=dl, f0_family=fam)
               for dl in DELTAS]
        out["delta_mle"][fam] = {"deltas": DELTAS, "n": DELTA_N,
                                 "errors": {k: [r["errors"][k] for r in res] for k in PARAMS},
                                 "at_tau_bound": [sum(r["at_tau_bound"]) / r["reps"] for r in res]}
    for tau_max in (8.0, 16.0):
        res = [mle_errors("nondist_nu", n, reps, seed, tau_max=tau_max) for n in TAU_NS]
        out["tau_box"][str(tau_max)] = {"ns": TAU_NS,
                                        "exp_tau": [r["errors"]["exp_tau"] for r in res],
                                        "at_tau_bound": [sum(r["at_tau_bound"]) / r["reps"] for r in res]}
    return out


def main() -> None:  # python -m neurips25.contaminated_moe
    import argparse

    ap = argparse.ArgumentParser(description="Rate sweeps of §4 (stored for the chapter).")
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-min", type=float, default=1e3)
    ap.add_argument("--n-max", type=float, default=3.2e4)
    ap.add_argument("--points", type=int, default=6)
    ap.add_argument("--large", action="store_true",
                    help="add the n <= 10^6 extension to the stored sweep (keeps the rest)")
    args = ap.parse_args()
    if args.large:
        stored = load_results("contaminated_moe")
        data = stored["data"]
        data["large"] = large(args.reps, args.seed)
        cmd = stored["command"].split(" && ")[0] + f" && python -m neurips25.contaminated_moe --large --reps {args.reps}"
        print(save_results("contaminated_moe", data, cmd, stored["seed"]))
        return
    ns = [int(round(v)) for v in np.geomspace(args.n_min, args.n_max, args.points)]
    data = {}
    for setting in SETTINGS:
        out = rate_experiment(setting, ns, args.reps, seed=args.seed)
        for stat in ("mean", "median"):
            out[f"slopes_{stat}"] = {k: fit_slope(ns, out["errors"][k], stat=stat) for k in PARAMS}
            out[f"slopes_{stat}"]["hellinger"] = fit_slope(ns, out["hellinger"], stat=stat)
        data[setting] = out
        print(setting, {k: round(v["slope"], 3) for k, v in out["slopes_mean"].items()}, flush=True)
    cmd = (f"python -m neurips25.contaminated_moe --reps {args.reps} --seed {args.seed} "
           f"--n-min {args.n_min:g} --n-max {args.n_max:g} --points {args.points}")
    print(save_results("contaminated_moe", data, cmd, args.seed))


if __name__ == "__main__":
    main()
