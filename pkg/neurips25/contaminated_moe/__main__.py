"""``python -m neurips25.contaminated_moe``: the rate sweeps stored for the chapter."""
from __future__ import annotations

import numpy as np
import torch

from ..results import add_scale_arguments, load_results, save_results
from ..runtime import cap
from .mle import fit_em, fit_mle
from .model import FAMILIES, PARAMS, SETTINGS, paper_setting, sample
from .rates import asymptotic_sd, fit_slope, mle_errors, parameter_errors, rate_experiment

LARGE_NS = [10_000, 31_623, 100_000, 316_228, 1_000_000]
DELTAS = [0.4, 0.2, 0.1, 0.05, 0.025, 0.0125]
TAU_NS = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000]  # the n of the stored rate sweep
LARGE_SETTINGS = ("nondist_eta",)  # distinguishable: Fisher sd ∝ n^{-1/2} exactly; (ii): see tau_box
DELTA_N = 30_000
#: Setting (i) where Theorem 3's e^τ rate n^{-1/2}Δ^{-2} is the *local* rate at n ≤ 10⁶: a constant
#: gate (β* = 0; with the paper's β* the local rate is Δ^{-1}) and Δ = 0.3·n^{-1/8} (chosen on the
#: Fisher information: its slope on [10⁴, 10⁶] is −0.27 against the theory's −1/4, and sd(e^τ̂) is
#: ≤ 13 % of e^τ* from n = 10⁴ on, where the MLE is close to normal).
ATTAINED = dict(gate="constant", delta_scale=0.3)
#: The constant-gate study (Gaussian f0) continued past n = 10⁶, same groups and seeds: the
#: measured trend of its local slope (pre-registered: lower half of the n grid vs upper half).
EXTEND_NS = [3_162_278]
#: Fresh replicate groups of that trend test (seeds ``seed + 1 + g``; groups 0–2 are the stored
#: study's): 12 × 16 data sets, four times the first test's, fixed before they were fitted.
REPLICATION_GROUPS = list(range(3, 15))
#: Fresh replicate groups of a confirmatory run of the claim's criteria (both f0 families, the n of
#: ``LARGE_NS``, as :func:`attained`), fixed before they were fitted.
CONFIRM_GROUPS = list(range(15, 21))

#: The sweep behind ``notebooks/results/contaminated_moe.json`` (``small``: exactly the settings of the
#: stored sweep, the §4 grid plus the ``large`` extension) and ``contaminated_moe.full.json`` (``full``).
#: §4 of the paper: 40 repetitions at each of 20 sample sizes n in [10³, 10⁵]; ``full`` runs that grid
#: and the extension to n = 10⁶ with 16 repetitions (float64 on the CPU: the problem is d = 8).
SWEEP = {
    "small": dict(reps=12, seed=0, n_min=1e3, n_max=3.2e4, points=6, large_reps=8,
                  attained_reps=16, attained_groups=3),
    "full": dict(reps=40, seed=0, n_min=1e3, n_max=1e5, points=20, large_reps=16,
                 attained_reps=40, attained_groups=3),
}


def large(reps: int, seed: int) -> dict:
    """Extend the sweep to n = 10⁶ (no Hellinger integral) and compare with the Fisher prediction;
    MLE fits down the whole Δ range of the overlap study (n = 3·10⁴); τ-box sensitivity in (ii)."""
    print("large n", flush=True)
    # NEURIPS25_SMOKE=1: the three smallest n (a slope needs three), two of each other loop
    reps, ns = cap(reps), LARGE_NS[:cap(len(LARGE_NS), 3)]
    out: dict = {"ns": ns, "reps": reps, "settings": {}, "delta_mle": {}, "tau_box": {}}
    for setting in LARGE_SETTINGS:
        res = [mle_errors(setting, n, reps, seed) for n in ns]
        errors = {k: [r["errors"][k] for r in res] for k in PARAMS}
        fisher = [asymptotic_sd(*paper_setting(setting, n)[::-1], n_mc=cap(20_000, 2000)) for n in ns]
        out["settings"][setting] = {
            "errors": errors,
            "converged": [sum(r["converged"]) / reps for r in res],
            "at_tau_bound": [sum(r["at_tau_bound"]) / reps for r in res],
            "fisher_sd": {k: [f[k] / n ** 0.5 for f, n in zip(fisher, ns)] for k in PARAMS},
            "slopes_mean": {k: fit_slope(ns, errors[k]) for k in PARAMS},
            "slopes_median": {k: fit_slope(ns, errors[k], stat="median") for k in PARAMS},
        }
        print(setting, "large n", {k: round(v["slope"], 3) for k, v in out["settings"][setting]["slopes_mean"].items()},
              flush=True)
    for fam in ("gaussian", "laplace"):
        res = [mle_errors("nondist_eta", DELTA_N, min(reps, 8), seed, delta=dl, f0_family=fam)
               for dl in DELTAS[:cap(len(DELTAS))]]
        out["delta_mle"][fam] = {"deltas": DELTAS[:len(res)], "n": DELTA_N,
                                 "errors": {k: [r["errors"][k] for r in res] for k in PARAMS},
                                 "at_tau_bound": [sum(r["at_tau_bound"]) / r["reps"] for r in res]}
    out["tau_box"] = tau_box(reps, seed)
    return out


def tau_box(reps: int, seed: int) -> dict:
    """Setting (ii) refitted under the box |τ| <= 8 (the default) and |τ| <= 16 at ``TAU_NS``."""
    out = {}
    for tau_max in (8.0, 16.0):
        res = [mle_errors("nondist_nu", n, cap(reps), seed, tau_max=tau_max)
               for n in TAU_NS[:cap(len(TAU_NS))]]
        out[str(tau_max)] = {"ns": TAU_NS[:len(res)],
                             "exp_tau": [r["errors"]["exp_tau"] for r in res],
                             "tau_hat": [r["tau_hat"] for r in res],
                             "converged": [sum(r["converged"]) / r["reps"] for r in res],
                             "at_tau_bound": [sum(r["at_tau_bound"]) / r["reps"] for r in res]}
    return out


def attained(reps: int, seed: int, groups: list[int], families=FAMILIES) -> dict:
    """``ATTAINED`` (constant gate, Δ = 0.3·n^{-1/8}) at the n of ``LARGE_NS``, for a Gaussian f0
    (Theorem 3) and a Laplace f0 (distinguishable control, same G*): replicate group g fits
    ``reps`` data sets with seed ``seed + 1 + g`` (for each of ``families``); the Fisher
    prediction at each n."""
    reps, ns = cap(reps), LARGE_NS[:cap(len(LARGE_NS), 3)]
    out: dict = {"ns": ns, "reps": reps, **ATTAINED, "groups": {}, "fisher_sd": {}}
    for fam in FAMILIES:
        out["fisher_sd"][fam] = {k: [] for k in PARAMS}
        for n in ns:
            sd = asymptotic_sd(*paper_setting("nondist_eta", n, f0_family=fam, **ATTAINED)[::-1],
                               n_mc=cap(20_000, 2000))
            for k in PARAMS:
                out["fisher_sd"][fam][k].append(sd[k] / n ** 0.5)
    for g in groups:
        out["groups"][str(g)] = {}
        for fam in families:
            res = [mle_errors("nondist_eta", n, reps, seed + 1 + g, f0_family=fam, chunk=8, **ATTAINED)
                   for n in ns]
            errors = {k: [r["errors"][k] for r in res] for k in PARAMS}
            out["groups"][str(g)][fam] = {
                "errors": errors, "converged": [sum(r["converged"]) / reps for r in res],
                "at_tau_bound": [sum(r["at_tau_bound"]) / reps for r in res],
                "slopes_mean": {k: fit_slope(ns, errors[k]) for k in PARAMS}}
            print("attained group", g, fam, round(out["groups"][str(g)][fam]["slopes_mean"]["exp_tau"]["slope"], 3),
                  flush=True)
    return out


def attained_extension(reps: int, seed: int, groups: list[int]) -> dict:
    """The ``ATTAINED`` study of a Gaussian f0 continued to the n of ``EXTEND_NS`` (replicate group g:
    ``reps`` data sets with seed ``seed + 1 + g``, fitted 8 at a time as in :func:`attained`), with
    the Fisher prediction there."""
    reps = cap(reps)
    out: dict = {"ns": EXTEND_NS, "reps": reps, **ATTAINED, "groups": {},
                 "fisher_sd": {k: [] for k in PARAMS}}
    for n in EXTEND_NS:
        sd = asymptotic_sd(*paper_setting("nondist_eta", n, f0_family="gaussian", **ATTAINED)[::-1],
                           n_mc=cap(20_000, 2000))
        for k in PARAMS:
            out["fisher_sd"][k].append(sd[k] / n ** 0.5)
    out["groups"] = _gaussian_groups(reps, seed, groups, EXTEND_NS, "extension")
    return out


def _gaussian_groups(reps: int, seed: int, groups: list[int], ns: list[int], label: str) -> dict:
    """Gaussian-f0 ``ATTAINED`` fits of replicate groups ``groups`` (``reps`` data sets with seed
    ``seed + 1 + g``, 8 at a time as in :func:`attained`) at ``ns``: errors, converged and on-bound
    shares per n."""
    out = {}
    for g in groups:
        res = [mle_errors("nondist_eta", n, reps, seed + 1 + g, f0_family="gaussian", chunk=8,
                          **ATTAINED) for n in ns]
        out[str(g)] = {
            "errors": {k: [r["errors"][k] for r in res] for k in PARAMS},
            "converged": [sum(r["converged"]) / reps for r in res],
            "at_tau_bound": [sum(r["at_tau_bound"]) / reps for r in res]}
        print(f"attained {label} group", g, flush=True)
    return out


def attained_replication(reps: int, seed: int, groups: list[int]) -> dict:
    """The trend test of the Gaussian-f0 ``ATTAINED`` study on fresh data sets: replicate group g
    (of ``REPLICATION_GROUPS``) fits ``reps`` data sets with seed ``seed + 1 + g`` at every n of
    ``LARGE_NS + EXTEND_NS`` (8 at a time, as in :func:`attained`)."""
    reps, ns = cap(reps), (LARGE_NS + EXTEND_NS)[:cap(len(LARGE_NS) + len(EXTEND_NS), 3)]
    return {"ns": ns, "reps": reps, **ATTAINED, "groups": _gaussian_groups(reps, seed, groups, ns, "replication")}


#: §4's setting (i) with the paper's gate, fitted by an EM stopped as MoE codes stop it (relative
#: log-likelihood change <= 1e-6) and by the converged Newton MLE, on the same data and starts.
EM_NS = [1_000, 2_512, 6_310, 15_849, 39_811, 100_000]
EM_RTOL = 1e-6


def em_study(reps: int, seed: int, init_noise: float = 0.05) -> dict:
    """Setting (i) (paper's gate, Δ = n^{-1/8}) at the n of ``EM_NS``: ``reps`` data sets per n, each
    fitted from one start (truth + N(0, ``init_noise``²)) by ``fit_em`` (``rtol = EM_RTOL``) and by
    ``fit_mle``; per-repetition errors of both, EM iterations, Newton convergence."""
    reps, ns = cap(reps), EM_NS[:cap(len(EM_NS), 3)]
    out: dict = {"ns": ns, "reps": reps, "rtol": EM_RTOL, "init_noise": init_noise,
                 "em": {k: [] for k in PARAMS}, "newton": {k: [] for k in PARAMS},
                 "em_iters": [], "newton_converged": []}
    for n in ns:
        expert, theta_star = paper_setting("nondist_eta", n)
        gen = torch.Generator().manual_seed(seed * 1_000_003 + n + 29)
        star = theta_star.expand(reps, -1)
        x, y = sample(n, star, expert, gen)
        theta0 = star + init_noise * torch.randn(star.shape, generator=gen, dtype=torch.float64)
        th_em, iters = fit_em(x, y, expert, theta0, rtol=EM_RTOL)
        th_n, done = fit_mle(x, y, expert, theta0)
        for name, th in (("em", th_em), ("newton", th_n)):
            for k, v in parameter_errors(th, theta_star).items():
                out[name][k].append(v.tolist())
        out["em_iters"].append(iters.tolist())
        out["newton_converged"].append(done.double().mean().item())
        print("em study n", n, "median EM iterations", float(iters.double().median()), flush=True)
    for name in ("em", "newton"):
        out[f"{name}_slopes"] = {k: fit_slope(ns, out[name][k]) for k in PARAMS}
    return out


def _chain(command: str, part: str) -> str:
    """``command`` with ``part`` appended as one more `` && `` step (replacing an equal step)."""
    steps = [c for c in command.split(" && ") if c != part]
    return " && ".join(steps + [part])


def main(argv=None) -> None:  # python -m neurips25.contaminated_moe
    """``python -m neurips25.contaminated_moe [--scale small|full]``: the §4 rate sweeps, their
    large-n extension and the constant-gate study (settings: ``SWEEP[scale]``; flags override
    them). ``--large`` adds only the extension to the stored sweep, ``--tau-box`` only its τ-box
    study of setting (ii), ``--attained [--group G] [--family F]`` only the constant-gate study
    (or some of its replicate groups and f0 families: one run each fits the CPU's time budget),
    ``--attained-extend`` only that study's continuation to the n of ``EXTEND_NS``,
    ``--attained-replication [--group G]`` only the fresh replicate groups of its trend test
    (``REPLICATION_GROUPS``), ``--attained-confirm [--group G]`` only the confirmatory groups of the
    constant-gate study (``CONFIRM_GROUPS``), ``--em`` only the EM-vs-Newton study of setting (i)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m neurips25.contaminated_moe", description=main.__doc__)
    add_scale_arguments(ap)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--n-min", type=float, default=None)
    ap.add_argument("--n-max", type=float, default=None)
    ap.add_argument("--points", type=int, default=None)
    ap.add_argument("--large-reps", type=int, default=None)
    ap.add_argument("--attained-reps", type=int, default=None)
    ap.add_argument("--attained-groups", type=int, default=None)
    ap.add_argument("--large", action="store_true",
                    help="add the n <= 10^6 extension to the stored sweep (keeps the rest)")
    ap.add_argument("--tau-box", action="store_true",
                    help="add only the tau-box study of setting (ii) to the stored sweep")
    ap.add_argument("--attained", action="store_true",
                    help="add the constant-gate study to the stored sweep (keeps the rest)")
    ap.add_argument("--attained-extend", action="store_true",
                    help="add the constant-gate study's continuation past n = 10^6 (Gaussian f0)")
    ap.add_argument("--em", action="store_true",
                    help="add the EM-vs-Newton study of setting (i) (the paper's estimator)")
    ap.add_argument("--attained-replication", action="store_true",
                    help="add the trend test's fresh replicate groups REPLICATION_GROUPS (Gaussian f0, "
                         "every n of LARGE_NS + EXTEND_NS)")
    ap.add_argument("--attained-confirm", action="store_true",
                    help="add the confirmatory replicate groups CONFIRM_GROUPS of the constant-gate "
                         "study (both f0 families, the n of LARGE_NS)")
    ap.add_argument("--group", type=int, action="append", default=None,
                    help="with --attained, --attained-replication or --attained-confirm: only this "
                         "replicate group (repeatable)")
    ap.add_argument("--family", choices=FAMILIES, action="append", default=None,
                    help="with --attained: only this f0 family (repeatable)")
    args = ap.parse_args(argv)
    cfg = {k: (v if getattr(args, k) is None else getattr(args, k)) for k, v in SWEEP[args.scale].items()}
    flag = " --scale full" if args.scale == "full" else ""
    all_groups = list(range(cap(cfg["attained_groups"])))
    rep_groups = REPLICATION_GROUPS[:cap(len(REPLICATION_GROUPS))]
    conf_groups = CONFIRM_GROUPS[:cap(len(CONFIRM_GROUPS))]
    if args.attained + args.attained_replication + args.attained_confirm > 1:
        ap.error("--attained, --attained-replication and --attained-confirm are separate runs; pass one")
    if args.group is not None and not (
            (args.attained and set(args.group) <= set(all_groups))
            or (args.attained_replication and set(args.group) <= set(rep_groups))
            or (args.attained_confirm and set(args.group) <= set(conf_groups))):
        ap.error(f"--group needs --attained and groups in {all_groups}, --attained-replication and "
                 f"groups in {rep_groups} or --attained-confirm and groups in {conf_groups}, "
                 f"got {args.group}")
    if args.family is not None and not args.attained:
        ap.error("--family needs --attained")
    if (args.large or args.attained or args.tau_box or args.attained_extend or args.em
            or args.attained_replication or args.attained_confirm):
        stored = load_results("contaminated_moe", args.out, scale=args.scale)
        data, cmd = stored["data"], stored["command"]
        if args.large:
            data["large"] = large(cfg["large_reps"], cfg["seed"])
            cmd = _chain(cmd, f"python -m neurips25.contaminated_moe{flag} --large")
        elif args.tau_box:
            data["large"]["tau_box"] = tau_box(cfg["large_reps"], cfg["seed"])
            cmd = _chain(cmd, f"python -m neurips25.contaminated_moe{flag} --tau-box")
        if args.attained:
            groups, families = args.group or all_groups, args.family or FAMILIES
            new = attained(cfg["attained_reps"], cfg["seed"], groups, families)
            old = data.get("attained")
            if old is not None and (args.group or args.family) and all(
                    old[k] == new[k] for k in ("ns", "reps", *ATTAINED)):
                for g, fits in old["groups"].items():  # keep the other groups and families
                    new["groups"][g] = {**fits, **new["groups"].get(g, {})}
            for part in ("extension", "replication", "confirmation"):  # the later studies stay
                if old is not None and part in old and all(old[k] == new[k] for k in ("ns", "reps", *ATTAINED)):
                    new[part] = old[part]
            data["attained"] = new
            part = " ".join([f"--group {g}" for g in args.group or []]
                            + [f"--family {f}" for f in args.family or []])
            cmd = _chain(cmd, f"python -m neurips25.contaminated_moe{flag} --attained {part}".rstrip())
        if args.attained_extend:
            data["attained"]["extension"] = attained_extension(cfg["attained_reps"], cfg["seed"],
                                                               all_groups)
            cmd = _chain(cmd, f"python -m neurips25.contaminated_moe{flag} --attained-extend")
        for on, part, run, default, opt in (
                (args.attained_replication, "replication", attained_replication, rep_groups,
                 "--attained-replication"),
                (args.attained_confirm, "confirmation", attained, conf_groups, "--attained-confirm")):
            if not on:
                continue
            new = run(cfg["attained_reps"], cfg["seed"], args.group or default)
            old = data["attained"].get(part)
            if old is not None and args.group and all(old[k] == new[k] for k in ("ns", "reps", *ATTAINED)):
                new["groups"] = {**old["groups"], **new["groups"]}  # keep the other groups
            data["attained"][part] = new
            cmd = _chain(cmd, f"python -m neurips25.contaminated_moe{flag} {opt}")
        if args.em:
            data["em"] = em_study(cfg["reps"], cfg["seed"])
            cmd = _chain(cmd, f"python -m neurips25.contaminated_moe{flag} --em")
        print(save_results("contaminated_moe", data, cmd, stored["seed"], path=args.out, scale=args.scale))
        return
    ns = [int(round(v)) for v in np.geomspace(cfg["n_min"], cfg["n_max"], cfg["points"])]
    ns = ns[:cap(len(ns), 3)]   # NEURIPS25_SMOKE=1: the three smallest n (a slope needs three)
    reps = cap(cfg["reps"])
    data = {}
    for setting in SETTINGS:
        out = rate_experiment(setting, ns, reps, seed=cfg["seed"])
        for stat in ("mean", "median"):
            out[f"slopes_{stat}"] = {k: fit_slope(ns, out["errors"][k], stat=stat) for k in PARAMS}
            out[f"slopes_{stat}"]["hellinger"] = fit_slope(ns, out["hellinger"], stat=stat)
        data[setting] = out
        print(setting, {k: round(v["slope"], 3) for k, v in out["slopes_mean"].items()}, flush=True)
    data["large"] = large(cfg["large_reps"], cfg["seed"])
    data["attained"] = attained(cfg["attained_reps"], cfg["seed"], all_groups)
    data["attained"]["extension"] = attained_extension(cfg["attained_reps"], cfg["seed"], all_groups)
    data["attained"]["replication"] = attained_replication(cfg["attained_reps"], cfg["seed"], rep_groups)
    data["attained"]["confirmation"] = attained(cfg["attained_reps"], cfg["seed"], conf_groups)
    data["em"] = em_study(cfg["reps"], cfg["seed"])
    cmd = (f"python -m neurips25.contaminated_moe{flag} --reps {cfg['reps']} --seed {cfg['seed']} "
           f"--n-min {cfg['n_min']:g} --n-max {cfg['n_max']:g} --points {cfg['points']} "
           f"--large-reps {cfg['large_reps']} --attained-reps {cfg['attained_reps']} "
           f"--attained-groups {cfg['attained_groups']} && "
           f"python -m neurips25.contaminated_moe{flag} --attained-extend && "
           f"python -m neurips25.contaminated_moe{flag} --attained-replication && "
           f"python -m neurips25.contaminated_moe{flag} --attained-confirm && "
           f"python -m neurips25.contaminated_moe{flag} --em")
    print(save_results("contaminated_moe", data, cmd, cfg["seed"], path=args.out, scale=args.scale))


if __name__ == "__main__":
    main()
