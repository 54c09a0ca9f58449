"""``python -m neurips25.contaminated_moe``: the rate sweeps stored for the chapter."""
from __future__ import annotations

import numpy as np

from ..results import save_results
from .model import PARAMS, SETTINGS
from .rates import fit_slope, rate_experiment


def main() -> None:  # python -m neurips25.contaminated_moe
    import argparse

    ap = argparse.ArgumentParser(description="Rate sweeps of §4 (stored for the chapter).")
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-min", type=float, default=1e3)
    ap.add_argument("--n-max", type=float, default=3.2e4)
    ap.add_argument("--points", type=int, default=6)
    args = ap.parse_args()
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
