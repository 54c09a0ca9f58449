"""``python -m neurips25.walle [--scale small|full] [--worlds N] [--modifications M] [--out PATH]``:
regenerate the stored sweep.

The pruning-limit sweep and the ablations over the chapter's evaluation worlds, with the hypothesis
prior fitted on the training worlds 1000.. (disjoint from the evaluation worlds 0..), written to
``notebooks/results/walle.json`` (``--scale full``: ``walle.full.json``, the ``SWEEP["full"]``
settings). The notebook reruns a subset live and checks it against this file.
"""
from __future__ import annotations

import argparse
import sys

from .agents import BUDGET_ARMS, evaluate, fit_hypothesis_prior

LIMITS = (0, 1, 2, 3, 5, None)
ABLATIONS = ("walle", "rules_only", "graph_only", "no_prune", "no_scene", "rules_no_scene")

# small: exactly the stored walle.json. full: the notebook's full scale, closer to the paper, which
# averages over many modified Mars worlds and 134 ALFWorld tasks with several learning iterations
# (4 on ALFWorld): 200 evaluation worlds, 8 iterations, a prior fitted on 100 training worlds.
SWEEP = {
    "small": dict(worlds=20, modifications=5, iters=5, max_steps=80, train_worlds=30),
    "full": dict(worlds=200, modifications=5, iters=8, max_steps=80, train_worlds=100),
}


def sweep(worlds: int = 20, modifications: int = 5, iters: int = 5, max_steps: int = 80,
          train_worlds: int = 30, first: int = 0) -> dict:
    """Pruning-limit sweep (``BUDGET_ARMS``) and ablations on worlds ``first .. first+worlds-1``.
    ``NEURIPS25_SMOKE=1`` (``runtime.cap``): two evaluation and two training worlds."""
    from ..runtime import cap

    seeds = range(first, first + cap(worlds))
    prior = fit_hypothesis_prior(range(1000, 1000 + cap(train_worlds)), n_modifications=modifications)
    out = {"config": dict(worlds=worlds, first=first, modifications=modifications, iters=iters,
                          max_steps=max_steps, train_worlds=train_worlds), "limits": {}, "ablations": {}}
    common = dict(n_iters=iters, n_modifications=modifications, max_steps=max_steps, prior=prior)
    for lim in LIMITS:
        r = evaluate(seeds, list(BUDGET_ARMS), limit=lim, **common)
        out["limits"][str(lim)] = {m: {"success": r[m]["success"].tolist(), "reward": r[m]["reward"].tolist(),
                                       "n_rules": r[m]["n_rules"].tolist()} for m in r}
    r = evaluate(seeds, list(ABLATIONS), limit=5, **common)
    out["ablations"] = {m: {"success": r[m]["success"].tolist(), "reward": r[m]["reward"].tolist(),
                            "n_rules": r[m]["n_rules"].tolist(), "misfires": int(r[m]["misfires"])} for m in r}
    return out


def main(argv=None):
    from ..results import add_scale_arguments, save_results

    ap = argparse.ArgumentParser(prog="python -m neurips25.walle", description=__doc__)
    add_scale_arguments(ap)
    ap.add_argument("--worlds", type=int, default=None, help="override the scale's number of worlds")
    ap.add_argument("--modifications", type=int, default=None, help="override the scale's modifications")
    args = ap.parse_args(argv)
    cfg = dict(SWEEP[args.scale])
    if args.worlds is not None:
        cfg["worlds"] = args.worlds
    if args.modifications is not None:
        cfg["modifications"] = args.modifications
    data = sweep(**cfg)
    cmd = "python -m neurips25.walle " + " ".join(sys.argv[1:] if argv is None else argv)
    print(save_results("walle", data, cmd.strip(), seed=0, path=args.out, scale=args.scale))


if __name__ == "__main__":
    main()
