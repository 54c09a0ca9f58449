"""Experiments: Gaussian leaves with an exact reference, over configs and seeds (stored results)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .gaussian import bw2, bw2_uvp, gaussian_tree_ipf, gaussian_tree_sb
from .matching import simulate_tree, tree_dsb, tree_dsbm
from .tree import Tree, star_tree

# --- experiments: Gaussian leaves with an exact reference ---------------------------------------

def h_tree(sigma: float) -> Tree:
    """A non-star tree: two unobserved hubs 0 — 1, leaves 2, 3 on hub 0 and 4, 5 on hub 1 (unit lengths)."""
    return Tree(6, [(0, 1), (0, 2), (0, 3), (1, 4), (1, 5)], [1.0] * 5, [2, 3, 4, 5], sigma)


def gaussian_problem(d: int, K: int, seed: int, spread: float = 1.5):
    """K Gaussian marginals in R^d: means ~ N(0, spread²I), covariances with eigenvalues in [0.5, 2]."""
    from ..data import random_spd

    rng = np.random.default_rng(seed)
    means = [rng.normal(size=d) * spread for _ in range(K)]
    covs = [random_spd(d, seed=1000 * seed + i).numpy() for i in range(K)]
    return means, covs


def independent_reference(tree: Tree, means, covs) -> tuple[np.ndarray, np.ndarray]:
    """Law of every vertex when the leaves are independent (iteration 0): Y_U = B y_S + noise."""
    d = len(means[0])
    B, C = tree.conditional()
    G = np.kron(B, np.eye(d))
    S = np.zeros((len(covs) * d,) * 2)
    for i, c in enumerate(covs):
        S[i * d:(i + 1) * d, i * d:(i + 1) * d] = c
    return G @ np.concatenate(means), G @ S @ G.T + np.kron(C, np.eye(d))


def run_gaussian(tree: Tree, means, covs, seed: int = 0, n: int = 2048, n_iter: int = 5, steps: int = 300,
                 batch_size: int = 128, hidden: Sequence[int] = (64, 64, 64), n_steps: int = 30,
                 lr: float = 5e-3, ema_decay: float = 0.9, device=None, method: str = "treedsbm") -> dict:
    """TreeDSBM on Gaussian leaves; BW2²-UVP (%) of every unobserved vertex against the exact TreeSB.

    Returns
    - ``uvp[it][start][u]``: after IMF iteration ``it``, simulating from observed vertex ``start``,
      at unobserved vertex ``u``, against the exact TreeSB;
    - ``uvp_independent`` (per unobserved vertex, analytic): the independent coupling (iteration 0);
    - ``uvp_it1_target[start][u]``: iteration 1 against *its own* exact target. The Markovian
      projection preserves every edge's time marginals, so after iteration 1 the simulated
      unobserved vertices should follow the independent-coupling law exactly; the UVP against it is
      the Markovian-projection learning error (network + Euler–Maruyama);
    - ``uvp_leaves[it][start]``: mean UVP of the simulated *other* observed vertices against their
      μ_i — the same learning error, measurable at every iteration;
    - ``uvp_floor[u]``: UVP of n exact samples of the TreeSB marginal (the metric's Monte Carlo floor).

    With ``method="treedsb"`` the same data, networks and budget train TreeDSB (tree IPF, ``tree_dsb``)
    instead; after each half-bridge h the process is simulated from its current start leaf, giving
    ``uvp_half[h]`` (per unobserved vertex), ``start_half[h]`` and ``uvp_leaves_half[h]`` (the other
    observed vertices against their μ_i); ``uvp_exact_ipf[h]`` is the same for the exact Gaussian IPF
    (``gaussian_tree_ipf``, no learning error); ``uvp[it]`` is ``uvp_half`` at the end of sweep ``it``.

    Training and simulation run on ``device`` (default CPU); the metrics are computed on the CPU.
    """
    if method not in ("treedsbm", "treedsb"):
        raise ValueError(f"method must be 'treedsbm' or 'treedsb', got {method!r}")
    from ..data import sample_gaussian
    from ..runtime import cap, seed_everything

    seed_everything(seed)
    n = cap(n, 512)  # samples per leaf, bounded under NEURIPS25_SMOKE=1
    d = len(means[0])
    data = [sample_gaussian(m, c, n, seed=1000 * seed + 17 * i).float() for i, (m, c) in enumerate(zip(means, covs))]
    mV, CV = gaussian_tree_sb(tree, means, covs)
    blk = lambda M, k: M[k * d:(k + 1) * d, k * d:(k + 1) * d]
    exact = {u: (mV[u * d:(u + 1) * d], blk(CV, u)) for u in tree.unobserved}
    m_ind, C_ind = independent_reference(tree, means, covs)
    ind_law = {u: (m_ind[k * d:(k + 1) * d], blk(C_ind, k)) for k, u in enumerate(tree.unobserved)}
    ind = [float(100) * bw2(*ind_law[u], *exact[u]) / np.trace(exact[u][1]) for u in tree.unobserved]
    floor = [float(bw2_uvp(sample_gaussian(*exact[u], n, seed=10_000 + 1000 * seed + u), *exact[u]))
             for u in tree.unobserved]
    uvp: list = []
    uvp_leaves: list = []
    it1: list = []
    if method == "treedsb":
        K = len(tree.observed)
        exact_ipf = [[float(100) * bw2(m[k * d:(k + 1) * d], blk(C, k), *exact[u]) / np.trace(exact[u][1])
                      for k, u in enumerate(tree.unobserved)]
                     for m, C in gaussian_tree_ipf(tree, means, covs, cap(n_iter))]
        half: dict = {"uvp_half": [], "start_half": [], "uvp_leaves_half": []}

        def record_half(h, model, start):
            Y = simulate_tree(model, start, data[tree.observed.index(start)], n_steps, noise_last=True)
            half["uvp_half"].append([float(bw2_uvp(Y[:, u], *exact[u])) for u in tree.unobserved])
            half["start_half"].append(start)
            half["uvp_leaves_half"].append(float(np.mean([bw2_uvp(Y[:, o], means[j], covs[j])
                                                          for j, o in enumerate(tree.observed) if o != start])))

        tree_dsb(tree, data, n_iter=n_iter, steps=steps, batch_size=batch_size, hidden=hidden, lr=lr,
                 n_steps=n_steps, callback=record_half, ema_decay=ema_decay, device=device)
        return {"uvp_independent": ind, "uvp": half["uvp_half"][K - 1::K], **half, "uvp_exact_ipf": exact_ipf,
                "uvp_floor": floor}

    def record(it, model):
        per_start, per_start_leaves = [], []
        for k, s in enumerate(tree.observed):
            Y = simulate_tree(model, s, data[k], n_steps)
            per_start.append([float(bw2_uvp(Y[:, u], *exact[u])) for u in tree.unobserved])
            per_start_leaves.append(float(np.mean([bw2_uvp(Y[:, o], means[j], covs[j])
                                                   for j, o in enumerate(tree.observed) if o != s])))
            if it == 1:
                it1.append([float(bw2_uvp(Y[:, u], *ind_law[u])) for u in tree.unobserved])
        uvp.append(per_start)
        uvp_leaves.append(per_start_leaves)

    tree_dsbm(tree, data, n_iter=n_iter, steps=steps, batch_size=batch_size, hidden=hidden, lr=lr, n_steps=n_steps,
              callback=record, ema_decay=ema_decay, device=device)
    return {"uvp_independent": ind, "uvp": uvp, "uvp_it1_target": it1, "uvp_leaves": uvp_leaves,
            "uvp_floor": floor}


CONFIGS = {
    "star_d2_equal": dict(tree="star", d=2, weights=[1 / 3, 1 / 3, 1 / 3]),
    "star_d2_unequal": dict(tree="star", d=2, weights=[0.6, 0.3, 0.1]),
    "star_d4_equal": dict(tree="star", d=4, weights=[1 / 3, 1 / 3, 1 / 3]),
    "star_d8_equal": dict(tree="star", d=8, weights=[1 / 3, 1 / 3, 1 / 3]),
    "h_tree_d2": dict(tree="h", d=2, weights=None),
    "star_d64_equal": dict(tree="star", d=64, weights=[1 / 3, 1 / 3, 1 / 3]),  # the paper's smallest d
}

# The stored sweep, by scale. ``small`` is exactly what produced notebooks/results/tree_sb.json
# (``python -m neurips25.tree_sb`` reproduces it). ``full`` moves towards the paper: its Gaussian
# barycentre benchmark is d = 64/96/128 (BW2²-UVP .14/.15/.27 %), trained with Adam 1e-3, batch 4096,
# 4 IMF iterations of 10,000 steps and an EMA of decay 0.99 (its ``ema_rate`` 0.01), i.e. an EMA
# window of ~1 % of an iteration; we add d = 64, five seeds, 6 iterations of 5,000 steps on 20,000
# samples per leaf with 3 x 256 networks.
# EMA decay: the EMA averages over ~1/(1 − decay) steps. At 300 steps per iteration a decay of 0.99
# (a 100-step window, a third of the iteration) left the simulation with stale weights and was the
# largest learning error (see ``ABLATION``); 0.9 (a 10-step window) keeps the window a small
# fraction of the iteration, as in the paper.
SWEEP = {
    "small": dict(configs=["star_d2_equal", "star_d2_unequal", "star_d8_equal", "h_tree_d2"],
                  seeds=[0, 1, 2], n_iter=5, steps=300, n=2048, batch_size=128, hidden=[64, 64, 64], lr=5e-3,
                  ema_decay=0.9),
    "full": dict(configs=["star_d64_equal", "h_tree_d2", "star_d2_equal", "star_d2_unequal", "star_d4_equal",
                          "star_d8_equal"],  # the new d = 64 first: a smoke run (2 configs) covers it
                 seeds=[0, 1, 2, 3, 4], n_iter=6, steps=5000, n=20000, batch_size=512, hidden=[256, 256, 256],
                 lr=1e-3, ema_decay=0.99),
}

# TreeDSB (tree IPF), the paper's baseline, on the same problems, seeds, data, networks and budget
# (``steps`` Adam steps per half-bridge: one iteration, a sweep of K half-bridges, trains each
# directed network of a star once, as one TreeDSBM iteration does). Stored apart, in
# notebooks/results/tree_sb_treedsb.json, by ``python -m neurips25.tree_sb_treedsb``
# (= ``python -m neurips25.tree_sb --baseline treedsb``). Both scales run the paper's 50 IPF iterations
# (2-D, against 6 TreeDSBM iterations); ``small`` takes about 25 CPU-minutes.
SWEEP_TREEDSB = {
    "small": dict(configs=["star_d2_equal", "star_d8_equal"], seeds=[0, 1, 2], n_iter=50, steps=300, n=2048,
                  batch_size=128, hidden=[64, 64, 64], lr=5e-3, ema_decay=0.9),
    "full": dict(configs=["star_d2_equal", "star_d8_equal", "star_d64_equal"], seeds=[0, 1, 2, 3, 4], n_iter=50,
                 steps=5000, n=20000, batch_size=512, hidden=[256, 256, 256], lr=1e-3, ema_decay=0.99),
}

# What limits the per-seed error: the worst seed of the earlier settings (EMA decay 0.99, whose
# final UVP was 1.7 % on the star and 2.4 % on the H tree) re-run with one knob changed at a time.
# Stored with the small sweep (``data["ablation"][config][variant]``); skipped with --configs/--seeds.
ABLATION = dict(
    configs=["star_d2_equal", "h_tree_d2"], seed=2,
    base=dict(n_iter=5, steps=300, n=2048, batch_size=128, hidden=[64, 64, 64], lr=5e-3, ema_decay=0.99),
    variants={
        "earlier settings (EMA 0.99)": {},
        "batch x4": dict(batch_size=512),
        "samples x4": dict(n=8192),
        "Euler-Maruyama steps x4": dict(n_steps=120),
        "learning rate x2": dict(lr=1e-2),
        "no EMA": dict(ema_decay=0.0),
        "EMA 0.9": dict(ema_decay=0.9),
        "steps x2": dict(steps=600),
        "steps x4": dict(steps=1200),
    },
)


def run_config(name: str, seed: int, sigma: float = float(np.sqrt(0.05)), **kw) -> dict:
    """One entry of ``CONFIGS`` (ε = 2σ² = 0.1 by default) for one seed."""
    if name not in CONFIGS:
        raise ValueError(f"name must be one of {sorted(CONFIGS)}, got {name!r}")
    cfg = CONFIGS[name]
    tree = star_tree(cfg["weights"], sigma) if cfg["tree"] == "star" else h_tree(sigma)
    means, covs = gaussian_problem(cfg["d"], len(tree.observed), seed)
    return run_gaussian(tree, means, covs, seed=seed, **kw)


def run_ablation(device=None, ablation: dict = ABLATION) -> dict:
    """``ABLATION``: for each config, the worst seed re-run with one setting changed at a time."""
    from ..runtime import cap

    out: dict = {}
    for name in ablation["configs"][: cap(len(ablation["configs"]), 1)]:
        out[name] = {}
        for label, change in list(ablation["variants"].items())[: cap(len(ablation["variants"]))]:
            kw = {**ablation["base"], **change}
            out[name][label] = run_config(name, ablation["seed"], device=device, **{**kw, "hidden": tuple(kw["hidden"])})
            print("ablation", name, label, flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    import argparse
    import time

    from ..results import add_scale_arguments, save_results
    from ..runtime import cap, device

    p = argparse.ArgumentParser(description="TreeDSBM on Gaussian trees over seeds (stored results). "
                                "Settings: SWEEP[--scale]; the flags below override them.")
    add_scale_arguments(p)
    p.add_argument("--baseline", choices=["treedsbm", "treedsb"], default="treedsbm",
                   help="treedsb: the TreeDSB (IPF) sweep SWEEP_TREEDSB, stored as tree_sb_treedsb.json")
    p.add_argument("--configs", nargs="+", choices=list(CONFIGS))
    p.add_argument("--seeds", type=int, nargs="+")
    p.add_argument("--n-iter", type=int)
    p.add_argument("--steps", type=int)
    a = p.parse_args(argv)
    ipf = a.baseline == "treedsb"
    cfg = dict((SWEEP_TREEDSB if ipf else SWEEP)[a.scale])
    for key, value in (("configs", a.configs), ("seeds", a.seeds), ("n_iter", a.n_iter), ("steps", a.steps)):
        if value is not None:
            cfg[key] = value
    configs, seeds = cfg.pop("configs"), cfg.pop("seeds")
    kw = {**cfg, "hidden": tuple(cfg["hidden"])}
    dev = device()
    out: dict = {}
    for name in configs[: cap(len(configs))]:
        out[name] = {}
        for s in seeds[: cap(len(seeds), 1)]:
            t0 = time.time()
            out[name][str(s)] = run_config(name, s, device=dev, method=a.baseline, **kw)
            final = np.mean(out[name][str(s)]["uvp"][-1])
            print(name, s, f"{time.time() - t0:.0f}s, final UVP {final:.2f} %", flush=True)
    overrides = {"--configs": a.configs, "--seeds": a.seeds, "--n-iter": a.n_iter, "--steps": a.steps}
    if a.scale == "small" and all(v is None for v in overrides.values()) and not ipf:
        out["ablation"] = run_ablation(device=dev)
    slug = "tree_sb_treedsb" if ipf else "tree_sb"
    cmd = f"python -m neurips25.{slug}" + ("" if a.scale == "small" else f" --scale {a.scale}")
    for flag, value in overrides.items():
        if value is not None:
            cmd += f" {flag} " + " ".join(map(str, value if isinstance(value, list) else [value]))
    print(save_results(slug, out, cmd, seeds[0], path=a.out, scale=a.scale))


if __name__ == "__main__":
    main()
