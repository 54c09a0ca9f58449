"""The chapter's experiment: upstream pre-training, the federated downstream task, the sweep (CLI)."""
from __future__ import annotations

import argparse
import copy
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from functools import lru_cache

import numpy as np
import torch
from torch import nn

from ..data import load_digits_tensors
from ..runtime import cap, check_int, make_trainer, seed_everything, single_thread, smoke
from ..vision import ViTClassifier
from .core import capacity_profile, check_capacities, dirichlet_split
from .federation import CAPACITY_SCHEDULES, Client, Method, Server, trainable_names
from .model import ModelSpec, build_model, n_compressed, round_time, set_trainable, step_cost

#: label -> Method of the compared runs. The sweep's common learning rates: 3e-3 for methods that train
#: whole layers, 1e-2 for the PEFT and head-only baselines. The headline comparison uses the rates
#: :func:`tune_lr` selects on a validation split with equal budgets (stored in leff.json's "tuning").
METHODS = {
    "FedAvg": Method("fedavg", lr=3e-3),
    "Head only": Method("headonly", lr=1e-2),
    "FedBitFit": Method("bitfit", lr=1e-2),
    "FedLoRA": Method("lora", lr=1e-2),
    "LEFF": Method("leff", lr=3e-3, sampling="importance", r=0.5),
    "LEFF (random)": Method("leff", lr=3e-3, sampling="random", r=0.5),
    "LEFF (round-robin)": Method("leff", lr=3e-3, sampling="roundrobin", r=0.5),
    "LEFF (r=0.25)": Method("leff", lr=3e-3, sampling="importance", r=0.25),
    "LEFF (r=1)": Method("leff", lr=3e-3, sampling="importance", r=1.0),
    # controls for the importance ablation without compression: at r = 1 every block trains behind the
    # real (uncompressed) prefix, so importance vs random/round-robin compares block choice alone
    "LEFF (random, r=1)": Method("leff", lr=3e-3, sampling="random", r=1.0),
    "LEFF (round-robin, r=1)": Method("leff", lr=3e-3, sampling="roundrobin", r=1.0),
}

#: The sweep behind ``notebooks/results/leff.json`` (``small``: exactly the settings of the stored sweep)
#: and ``leff.full.json`` (``full``, for a GPU). The paper fine-tunes 12-layer DeBERTaV3-Base (GLUE) and
#: GPT-2 Medium (E2E) over many rounds with Dirichlet alpha = 0.05; ``full`` moves toward that on the tiny
#: ViT: the paper's alpha = 0.05 beside 0.1 and 1, 40 rounds of K = 20 local steps after 30 pre-training
#: epochs, 5 seeds. ``run`` holds the :func:`run_method` arguments. ``tune`` is the equal-budget
#: learning-rate study (:func:`tune_lr`): the same grid for every compared method, selected on a
#: validation split of the clients' data at the hardest alpha (small: seed 0 at alpha = 0.1; full: 3
#: seeds at the paper's alpha = 0.05 and a wider grid). ``capacities`` is the capacity study
#: (:func:`capacity_study`): LEFF with every client at the same capacity, beside the sweep's mixed
#: capacities (1, 2, 3), to measure what averaging a layer over few clients costs under label skew
#: (at the headline alpha = 0.1 in both scales, where the notebook compares it with FedAvg; full adds
#: capacity 2 last, so that NEURIPS25_SMOKE, which keeps the first two profiles, still runs 1 and 3).
#: ``dynamic`` is the same study with the sweep's mix re-assigned to the clients every round, shifted by
#: one client ("rotate") or randomly permuted ("shuffle"): the same compute, but who trains the deep
#: layers changes. ``epochs`` is the paper's local work, one local epoch per round for 20 rounds
#: (Sec. 5.1), instead of K local steps: FedAvg and LEFF re-tuned on the validation split with the
#: same grid (:func:`tune_lr`, ``rerun_all``) and re-run on the test split. ``draw``: the paper's
#: clients report their capacity at the start of every round (Sec. 3.1) but it never says how the
#: capacities of its experiments were set, so this study lets every client draw ``L_{i,t}``
#: uniformly from the levels every round (``capacity_schedule="draw"``); only LEFF depends on it,
#: so only LEFF is re-tuned (same grid, same validation budget) and re-run. ``peft`` is the PEFT
#: study (:func:`peft_study`, stored apart in ``leff_peft_study.json``): ``methods`` at one shared
#: learning rate, as the paper trains every method (``shared_lr``: FedAvg's rate selected by the
#: small sweep's tuning, a test checks it; full keeps it until a full sweep selects FedAvg's), and
#: FedLoRA at ``rank`` (rank 1: nearer the paper's share of trainable parameters) re-tuned on the
#: validation split with the same grid.
SWEEP = {
    "small": dict(seeds=[0, 1, 2], alphas=[0.1, 1.0], run=dict(rounds=15),
                  tune=dict(lrs=[1e-3, 3e-3, 1e-2], alpha=0.1, seeds=[0]),
                  capacities=dict(profiles=[[1], [3]], alpha=0.1, seeds=[0, 1, 2]),
                  dynamic=dict(profiles=[[1, 2, 3]], alpha=0.1, seeds=[0, 1, 2],
                               schedules=["rotate", "shuffle"]),
                  epochs=dict(methods=["FedAvg", "LEFF"], lrs=[1e-3, 3e-3, 1e-2], alpha=0.1, seeds=[0],
                              test_seeds=[0, 1, 2], test_alphas=[0.1], run=dict(rounds=20, local_epochs=1)),
                  draw=dict(methods=["LEFF"], lrs=[1e-3, 3e-3, 1e-2], alpha=0.1, seeds=[0], test_seeds=[0, 1, 2],
                            test_alphas=[0.1, 1.0], run=dict(capacity_schedule="draw")),
                  peft=dict(methods=["LEFF", "FedLoRA", "FedBitFit"], shared_lr=1e-3, rank=1, alpha=0.1,
                            seeds=[0, 1, 2], lrs=[1e-3, 3e-3, 1e-2], tune_seeds=[0])),
    "full": dict(seeds=[0, 1, 2, 3, 4], alphas=[0.1, 1.0, 0.05],
                 run=dict(rounds=40, local_steps=20, pretrain_epochs=30),
                 tune=dict(lrs=[3e-4, 1e-3, 3e-3, 1e-2], alpha=0.05, seeds=[0, 1, 2]),
                 capacities=dict(profiles=[[1], [3], [2]], alpha=0.1, seeds=[0, 1, 2, 3, 4]),
                 dynamic=dict(profiles=[[1, 2, 3]], alpha=0.1, seeds=[0, 1, 2, 3, 4],
                              schedules=["rotate", "shuffle"]),
                 epochs=dict(methods=["FedAvg", "LEFF"], lrs=[3e-4, 1e-3, 3e-3, 1e-2], alpha=0.1,
                             seeds=[0, 1, 2], test_seeds=[0, 1, 2, 3, 4], test_alphas=[0.1],
                             run=dict(rounds=20, local_epochs=1)),
                 draw=dict(methods=["LEFF"], lrs=[3e-4, 1e-3, 3e-3, 1e-2], alpha=0.05, seeds=[0, 1, 2],
                           test_seeds=[0, 1, 2, 3, 4], test_alphas=[0.1, 1.0, 0.05],
                           run=dict(capacity_schedule="draw")),
                 peft=dict(methods=["LEFF", "FedLoRA", "FedBitFit"], shared_lr=1e-3, rank=1, alpha=0.1,
                           seeds=[0, 1, 2, 3, 4], lrs=[3e-4, 1e-3, 3e-3, 1e-2], tune_seeds=[0, 1, 2])),
}

#: The methods the headline claims compare, tuned with equal budgets by :func:`tune_lr`.
TUNED = ("FedAvg", "FedBitFit", "FedLoRA", "LEFF")


def task_data(seed: int = 0, proxy_size: int = 128, val_fraction: float = 0.0) -> dict:
    """Upstream task: digits 0-4 (pre-training; its images double as the public, unlabelled proxy
    set). Downstream task: digits 5-9 (labels 0-4), stratified 60% train (the clients' data) / 40% test.
    ``val_fraction > 0`` also holds out that (stratified) share of the training split as ``"val"``
    for tuning; the clients then hold only the rest, and the test split is the same."""
    from sklearn.model_selection import train_test_split

    if not (isinstance(val_fraction, (int, float)) and 0 <= val_fraction < 1):
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction!r}")
    X, y = load_digits_tensors()
    up = y < 5
    Xd, yd = X[~up], y[~up] - 5
    tr, te = train_test_split(np.arange(len(yd)), test_size=0.4, random_state=seed, stratify=yd.numpy())
    g = torch.Generator().manual_seed(seed)
    Xu, yu = X[up], y[up]
    proxy = Xu[torch.randperm(len(Xu), generator=g)[:proxy_size]]
    out = {"upstream": (Xu, yu), "train": (Xd[tr], yd[tr]), "test": (Xd[te], yd[te]), "proxy": proxy}
    if val_fraction > 0:
        Xt, yt = out["train"]
        fit, val = train_test_split(np.arange(len(yt)), test_size=val_fraction, random_state=seed,
                                    stratify=yt.numpy())
        out.update(train=(Xt[fit], yt[fit]), val=(Xt[val], yt[val]))
    return out


@lru_cache(maxsize=4)
def _pretrained(seed: int, epochs: int):
    seed_everything(seed)
    Xu, yu = task_data(seed)["upstream"]
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(Xu, yu), batch_size=32, shuffle=True,
                                         generator=torch.Generator().manual_seed(seed))
    lm = ViTClassifier()
    make_trainer(cap(epochs), limit_train_batches=4 if smoke() else None).fit(lm, train_dataloaders=loader)
    return lm.model.eval()


def pretrain(seed: int = 0, epochs: int = 10) -> nn.Module:
    """The tiny ViT pre-trained centrally on the upstream task, with a fresh 5-way head for the
    downstream task (a copy: callers may change it)."""
    model = copy.deepcopy(_pretrained(seed, epochs))
    g = torch.Generator().manual_seed(seed + 1)
    head = nn.Linear(model.head.in_features, 5)
    with torch.no_grad():
        head.weight.copy_(torch.randn(head.weight.shape, generator=g) * 0.02)
        head.bias.zero_()
    model.head = head
    return model


def run_method(method: Method, alpha: float = 0.1, seed: int = 0, rounds: int = 15, n_clients: int = 8,
               levels=(1, 2, 3), local_steps: int = 10, batch_size: int = 32, pretrain_epochs: int = 10,
               cost: bool = True, val_fraction: float = 0.0, local_epochs: int | None = None,
               capacity_schedule: str = "fixed") -> dict:
    """One federated fine-tuning run: accuracy after every round, and per-client costs of a local step
    (trainable parameters, FLOPs, memory estimate) with the simulated round time, where client ``i``'s
    speed is proportional to its capacity ``L_i`` (a capacity-1 client is 3x slower than a capacity-3 one).
    ``val_fraction > 0``: a tuning run -- the clients hold the training split less that share, and
    ``acc`` is measured on the held-out share (:func:`task_data`), never on the test split.
    ``local_epochs`` (one local epoch per round is the paper's protocol) replaces the ``local_steps``
    per round; ``capacity_schedule`` ``"rotate"``/``"shuffle"`` re-assigns the capacities to the clients
    every round (:class:`~neurips25.leff.federation.Server`; the runs then record ``round_capacities``)."""
    with single_thread():
        data = task_data(seed, val_fraction=val_fraction)
        Xtr, ytr = data["train"]
        n_clients = cap(n_clients, len(levels))   # NEURIPS25_SMOKE=1: one client per capacity level
        parts = dirichlet_split(ytr, n_clients, alpha, seed)
        clients = [Client(i, Xtr[p], ytr[p]) for i, p in enumerate(parts)]
        caps = capacity_profile(n_clients, levels)
        model = pretrain(seed, pretrain_epochs)
        server = Server(model, clients, caps, method, data["proxy"], local_steps, batch_size, seed,
                        local_epochs=local_epochs, capacity_schedule=capacity_schedule)
        costs, blocks, cache, round_caps = [], [], {}, []
        xb, yb = Xtr[:batch_size], ytr[:batch_size]

        def on_round(t, srv):
            blocks.append([list(p.block) for p in srv.last_plans])
            round_caps.append(list(srv.capacities))
            if not cost:
                return
            row = []
            for plan in srv.last_plans:
                key = (plan.spec.layer_map.count(-1), len(plan.spec.layer_map), plan.trainable)
                if key not in cache:
                    c = step_cost(set_trainable(build_model(plan.spec), plan.trainable), xb, yb)
                    cache[key] = (c.trainable, c.flops, c.memory)
                row.append((*cache[key], plan.steps))
            costs.append(row)

        acc = server.run(cap(rounds), *data["val" if val_fraction > 0 else "test"], on_round=on_round)
    out = {"acc": acc, "blocks": blocks, "capacities": list(caps),
           "sizes": [len(p) for p in parts],
           "importance": None if server.importance is None else server.importance.tolist()}
    if capacity_schedule != "fixed":
        out["round_capacities"] = round_caps
    if cost:
        arr = np.array(costs, dtype=float)        # rounds x clients x (trainable, flops, memory, steps)
        speeds = np.array(round_caps, float) / server.depth   # speed follows this round's capacity
        # each client's FLOPs of the round (its own step count: one local epoch differs per client)
        times = [round_time(f * k, v, 1) for f, k, v in zip(arr[..., 1], arr[..., 3], speeds)]
        out.update(trainable=float(arr[..., 0].mean()), flops=float(arr[..., 1].mean()),
                   memory=float(arr[..., 2].max(1).mean()), round_time=float(np.mean(times)))
    return out


def sweep(seeds=(0, 1, 2), alphas=(0.1, 1.0), methods=None, **kw) -> dict:
    """Every method x alpha x seed; ``{method: {alpha: {seed: run}}}`` (JSON keys are strings)."""
    methods = list(METHODS) if methods is None else list(methods)
    seeds, alphas = list(seeds), list(alphas)
    out: dict = {}
    for name in methods:
        for a in alphas[:cap(len(alphas))]:
            for s in seeds[:cap(len(seeds), 1)]:
                out.setdefault(name, {}).setdefault(str(a), {})[str(s)] = run_method(METHODS[name], a, s, **kw)
    return out


def label_skew(labels, alpha: float, n_clients: int = 8, levels=(1, 2, 3), seeds=range(20),
               min_size: int = 1) -> dict:
    """How skewed a Dirichlet split (:func:`~neurips25.leff.core.dirichlet_split`) is, in units that
    compare tasks with different numbers of classes ``C``, averaged over ``seeds``:

    - ``entropy``: a client's label entropy over ``log C`` (1: the global mix of a balanced task, 0:
      one class), averaged over clients;
    - ``layer_tv``: for ``l = 1 .. max(levels)``, the total-variation distance between the label mix of
      the clients with capacity ``L_i >= l`` (those that train layer ``l`` when every block starts at
      the first layer) and the global label mix, over its maximum ``1 - 1/C`` (0: the trainers of
      layer ``l`` see the labels as the federation does; 1: they see none of the other classes).
      Samples are pooled, so clients weigh by ``D_i`` as in the aggregation.

    Capacities are ``capacity_profile(n_clients, levels)``. Returns ``{"entropy": float, "layer_tv":
    [float per layer], "classes": C}``."""
    y = np.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels)
    classes = np.unique(y) if y.ndim == 1 else np.array([])
    if len(classes) < 2:
        raise ValueError("labels must be a 1-D array with at least two classes")
    caps = np.array(capacity_profile(n_clients, levels))
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must be non-empty")
    C = len(classes)

    def label_mix(idx):
        return np.array([(y[idx] == c).mean() for c in classes])

    glob = label_mix(slice(None))
    ent, tv = [], []
    for s in seeds:
        parts = dirichlet_split(y, n_clients, alpha, s, min_size)
        mix = [label_mix(p) for p in parts]
        ent.append(np.mean([-(q[q > 0] * np.log(q[q > 0])).sum() / np.log(C) for q in mix]))
        # the samples of the clients that train layer l (capacity >= l), pooled
        pooled = [np.concatenate([parts[i] for i in np.flatnonzero(caps >= l)])
                  for l in range(1, caps.max() + 1)]
        tv.append([0.5 * np.abs(label_mix(p) - glob).sum() / (1 - 1 / C) for p in pooled])
    return {"entropy": float(np.mean(ent)), "layer_tv": np.mean(tv, 0).tolist(), "classes": C}


def final_accuracy(acc, last: int = 3) -> float:
    """The chapter's "final accuracy": the mean over the last ``last`` rounds (accuracy swings from
    round to round under non-IID data, so one round is a noisy read-out)."""
    a = np.asarray(acc, dtype=float)
    if a.ndim != 1 or len(a) == 0:
        raise ValueError(f"acc must be a non-empty 1-D sequence of accuracies, got shape {a.shape}")
    last = check_int(last, "last")
    return float(a[-last:].mean())


def tune_lr(methods=TUNED, lrs=(1e-3, 3e-3, 1e-2), alpha: float = 0.1, seeds=(0,), test_seeds=(0, 1, 2),
            test_alphas=(0.1, 1.0), val_fraction: float = 0.25, rerun_all: bool = False, catalogue=None,
            **kw) -> dict:
    """Equal-budget learning-rate selection: every method in ``methods`` runs every ``lr`` of the same
    grid on a validation split (``val_fraction`` of the clients' data held out, :func:`run_method`) at
    ``alpha`` for ``seeds``, and keeps the lr with the best seed-mean :func:`final_accuracy` there.
    Methods whose selected lr differs from :data:`METHODS`' are then re-run on the test split
    (``test_seeds`` x ``test_alphas``); the others' test runs are the main sweep's. ``rerun_all``:
    re-run every method (for ``kw`` that change the protocol, e.g. ``local_epochs``, where the main
    sweep's runs do not apply). ``catalogue``: the ``{name: Method}`` the names refer to (default
    :data:`METHODS`; another for variants outside the sweep, e.g. a LoRA rank).
    Returns ``{"validation": {method: {lr: {seed: acc}}}, "selected": {method: lr}, "runs": {...}}``."""
    table = METHODS if catalogue is None else catalogue
    methods, lrs, seeds = list(methods), [float(lr) for lr in lrs], list(seeds)
    unknown = [m for m in methods if m not in table]
    if unknown:
        raise ValueError(f"methods {unknown} are not in the catalogue ({list(table)})")
    if not lrs or any(not lr > 0 for lr in lrs):
        raise ValueError(f"lrs must be a non-empty list of positive learning rates, got {lrs!r}")
    if not seeds or not 0 < val_fraction < 1:
        raise ValueError(f"seeds must be non-empty and val_fraction in (0, 1), got {seeds!r}, {val_fraction!r}")
    methods, lrs, seeds = methods[:cap(len(methods))], lrs[:cap(len(lrs))], seeds[:cap(len(seeds), 1)]
    val: dict = {}
    for name in methods:
        for lr in lrs:
            for s in seeds:
                run = run_method(replace(table[name], lr=lr), alpha, s, cost=False, val_fraction=val_fraction, **kw)
                val.setdefault(name, {}).setdefault(str(lr), {})[str(s)] = run["acc"]
    selected = {name: max(lrs, key=lambda lr: np.mean([final_accuracy(a) for a in val[name][str(lr)].values()]))
                for name in methods}
    runs: dict = {}
    for name, lr in selected.items():
        if rerun_all or lr != table[name].lr:
            for a in list(test_alphas)[:cap(len(test_alphas))]:
                for s in list(test_seeds)[:cap(len(test_seeds), 1)]:
                    runs.setdefault(name, {}).setdefault(str(a), {})[str(s)] = run_method(
                        replace(table[name], lr=lr), a, s, cost=False, **kw)
    return {"validation": val, "selected": selected, "runs": runs, "alpha": alpha, "val_fraction": val_fraction}


def capacity_study(profiles=((1,), (2,), (3,)), alpha: float = 0.1, seeds=(0, 1, 2), schedules=("fixed",),
                   **kw) -> dict:
    """LEFF (``METHODS["LEFF"]``) with each capacity profile in ``profiles``: the levels cycled over
    the clients (:func:`~neurips25.leff.core.capacity_profile`), so ``(3,)`` gives every client
    capacity 3 and ``(1, 2, 3)`` is the sweep's mix. A uniform profile makes every trained layer an
    average over all clients; the mix averages deeper layers over fewer. ``schedules``: the
    ``capacity_schedule`` of each run (``"rotate"``/``"shuffle"``: the same levels, hence the same
    compute, move over the clients every round instead of staying with them). Returns
    ``{"alpha": alpha, "schedules": [...], "runs": {"1,2,3": {seed: run}, "1,2,3 rotate": ...}}``
    (accuracies and blocks; the key names the schedule unless it is fixed)."""
    profiles = [tuple(p) for p in profiles]
    if not profiles or any(not p for p in profiles):
        raise ValueError(f"profiles must be a non-empty list of non-empty capacity levels, got {profiles!r}")
    for p in profiles:
        check_capacities(p, len(ModelSpec().layer_map))
    seeds, schedules = list(seeds), list(schedules)
    if not seeds:
        raise ValueError("seeds must be non-empty")
    if not schedules or any(s not in CAPACITY_SCHEDULES for s in schedules):
        raise ValueError(f"schedules must be a non-empty list from {CAPACITY_SCHEDULES}, got {schedules!r}")
    runs: dict = {}
    for p in profiles[:cap(len(profiles))]:
        for sched in schedules:
            key = ",".join(map(str, p)) + ("" if sched == "fixed" else f" {sched}")
            for s in seeds[:cap(len(seeds), 1)]:
                runs.setdefault(key, {})[str(s)] = run_method(
                    METHODS["LEFF"], alpha, s, levels=p, cost=False, capacity_schedule=sched, **kw)
    return {"alpha": alpha, "schedules": schedules, "runs": runs}


def protocol_study(methods, run: dict, base=None, **kw) -> dict:
    """``methods`` under another protocol: :func:`tune_lr` with ``rerun_all`` (the protocol changes, so
    every method in ``methods`` is re-tuned on the validation split and re-run on the test split).
    ``run``: the protocol's :func:`run_method` settings, over ``base`` (the sweep's); ``kw`` go to
    :func:`tune_lr` (grid, seeds, alphas). Returns its result with ``"run"`` added."""
    if not isinstance(run, dict):
        raise TypeError(f"run must be a dict of run_method settings, got {type(run).__name__}")
    protocol = {**(base or {}), **run}
    return {**tune_lr(methods, rerun_all=True, **kw, **protocol), "run": protocol}


def epoch_study(methods=("FedAvg", "LEFF"), run=None, base=None, **kw) -> dict:
    """The paper's local work (Sec. 5.1: one local epoch per round, 20 rounds) instead of ``K`` steps:
    :func:`protocol_study` with ``run`` defaulting to ``rounds=20, local_epochs=1``."""
    return protocol_study(methods, dict(rounds=20, local_epochs=1) if run is None else run, base, **kw)


def draw_study(methods=("LEFF",), run=None, base=None, **kw) -> dict:
    """Per-round capacities: every client reports a fresh capacity every round (the paper's Sec. 3.1
    step, with a distribution the paper does not give), drawn uniformly from the levels
    (``capacity_schedule="draw"``): :func:`protocol_study` with ``run`` defaulting to that schedule.
    The other methods do not depend on capacities; their runs are the sweep's."""
    return protocol_study(methods, dict(capacity_schedule="draw") if run is None else run, base, **kw)


def _call_all(calls, jobs: int = 1) -> list:
    """``fn(**kw)`` for every ``(fn, kw)`` in ``calls``, in order; in ``jobs`` fresh processes when
    ``jobs > 1`` (every run seeds its own generators, so where it runs does not change it)."""
    if jobs == 1:
        return [fn(**kw) for fn, kw in calls]
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(fn, **kw) for fn, kw in calls]
        return [f.result() for f in futures]


def peft_study(shared_lr: float, methods=("LEFF", "FedLoRA", "FedBitFit"), rank: int = 1, alpha: float = 0.1,
               seeds=(0, 1, 2), lrs=(1e-3, 3e-3, 1e-2), tune_seeds=(0,), jobs: int = 1, **kw) -> dict:
    """The PEFT baselines under two changes toward the paper. (i) ``methods`` all at one learning rate
    ``shared_lr``, as the paper trains every method (AdamW at 1e-5, Sec. 5.1), instead of each at its
    own validation-selected rate. (ii) FedLoRA at rank ``rank`` (rank 1 trains about 2% of the tiny
    ViT, the sweep's rank 4 about 9%; the paper's LoRA well under 1% of DeBERTaV3-Base), its rate
    re-tuned with :func:`tune_lr` on the validation split (grid ``lrs``, ``tune_seeds``) and re-run on
    the test split. Both at ``alpha`` for ``seeds``; ``kw`` go to :func:`run_method`; ``jobs``: worker
    processes. Returns ``{"alpha", "shared_lr", "shared": {method: {seed: run}}, "rank",
    "lora": tune_lr(...)}`` (the rank-``rank`` FedLoRA is named ``"FedLoRA (r=<rank>)"`` there)."""
    methods, seeds = list(methods), list(seeds)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be a non-empty list from METHODS ({list(METHODS)}), got {methods!r}")
    if not isinstance(shared_lr, (int, float)) or not shared_lr > 0:
        raise ValueError(f"shared_lr must be a positive learning rate, got {shared_lr!r}")
    for name, v in (("rank", rank), ("jobs", jobs)):
        check_int(v, name)
    if not seeds:
        raise ValueError("seeds must be non-empty")
    lora = {f"FedLoRA (r={rank})": replace(METHODS["FedLoRA"], lora_rank=rank)}
    seeds = seeds[:cap(len(seeds), 1)]  # every method even under smoke: the notebook compares all
    grid = [(n, s) for n in methods for s in seeds]
    calls = [(tune_lr, dict(methods=list(lora), lrs=lrs, alpha=alpha, seeds=tune_seeds, test_seeds=seeds,
                            test_alphas=[alpha], rerun_all=True, catalogue=lora, **kw))]
    calls += [(run_method, dict(method=replace(METHODS[n], lr=shared_lr), alpha=alpha, seed=s, cost=False, **kw))
              for n, s in grid]
    tuned, *runs = _call_all(calls, jobs)
    shared: dict = {}
    for (n, s), run in zip(grid, runs):
        shared.setdefault(n, {})[str(s)] = run
    return {"alpha": alpha, "shared_lr": float(shared_lr), "shared": shared, "rank": rank, "lora": tuned}


def main(argv=None) -> None:
    """``python -m neurips25.leff [--scale small|full] [--seeds 0 1 2] [--rounds 15] [--tune]``: the sweep
    (settings: ``SWEEP[scale]``) with the equal-budget learning-rate study (``SWEEP[scale]["tune"]``) and
    the studies of the alpha = 0.1 gap (``--capacities``, ``--dynamic``, ``--epochs``, ``--draw``: per-round
    capacity draws), stored in
    ``notebooks/results/leff.json`` (small) or ``leff.full.json`` (full). ``--peft-study [--jobs 2]``:
    :func:`peft_study` (``SWEEP[scale]["peft"]`` at the sweep's run settings), stored apart in
    ``leff_peft_study.json`` (``.full.json``; alias ``python -m neurips25.leff_peft_study``)."""
    from ..results import add_scale_arguments, load_results, results_path, save_results

    p = argparse.ArgumentParser(prog="python -m neurips25.leff", description=main.__doc__)
    add_scale_arguments(p)
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="override SWEEP[scale]['seeds']")
    p.add_argument("--alphas", type=float, nargs="+", default=None, help="override SWEEP[scale]['alphas']")
    p.add_argument("--rounds", type=int, default=None, help="override SWEEP[scale]['run']['rounds']")
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--merge", action="store_true",
                   help="add these runs to the stored sweep instead of replacing it (same --rounds)")
    p.add_argument("--tune", action="store_true",
                   help="run only the learning-rate study and store it in the existing sweep's file")
    p.add_argument("--capacities", action="store_true",
                   help="run only the capacity study and store it in the existing sweep's file")
    p.add_argument("--dynamic", action="store_true",
                   help="run only the per-round capacity study and store it in the existing sweep's file")
    p.add_argument("--epochs", action="store_true",
                   help="run only the one-local-epoch protocol study and store it in the existing sweep's file")
    p.add_argument("--draw", action="store_true",
                   help="run only the per-round capacity draws study and store it in the existing sweep's file")
    p.add_argument("--peft-study", action="store_true",
                   help="run only the PEFT study (one shared rate; FedLoRA at rank 1), stored in leff_peft_study.json")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (--peft-study only)")
    args = p.parse_args(argv)
    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        p.error(f"unknown methods {unknown}; choose from {list(METHODS)}")
    cfg = SWEEP[args.scale]
    seeds = cfg["seeds"] if args.seeds is None else args.seeds
    alphas = cfg["alphas"] if args.alphas is None else args.alphas
    run = {**cfg["run"], **({} if args.rounds is None else {"rounds": args.rounds})}
    flag = "--scale full " if args.scale == "full" else ""
    path = args.out if args.out else results_path("leff", args.scale)

    if args.jobs < 1 or (args.jobs != 1 and not args.peft_study):
        p.error("--jobs must be a positive int and applies to --peft-study only")
    if args.peft_study:
        others = [o for o in ("merge", "tune", "capacities", "dynamic", "epochs", "draw") if getattr(args, o)]
        if others or args.alphas is not None or args.methods != list(METHODS):
            p.error("--peft-study runs alone with SWEEP[scale]['peft'] (only --seeds, --rounds, --jobs, --out)")
        cfg_p = {**cfg["peft"], **({} if args.seeds is None else {"seeds": args.seeds})}
        data = {**peft_study(jobs=args.jobs, **cfg_p, **run), "run": run}
        cmd = (f"python -m neurips25.leff {flag}--peft-study --jobs {args.jobs}"
               + ("" if args.seeds is None else " --seeds " + " ".join(map(str, args.seeds)))
               + ("" if args.rounds is None else f" --rounds {args.rounds}"))
        print(save_results("leff_peft_study", data, cmd, seed=cfg_p["seeds"][0], path=args.out, scale=args.scale))
        return

    def study():
        return tune_lr(TUNED, test_seeds=seeds, test_alphas=alphas, **cfg["tune"], **run)

    def stored(option):   # the sweep to add to; it must have been run with these rounds
        old = load_results("leff", path, scale=args.scale)
        if old["data"]["rounds"] != run["rounds"]:
            p.error(f"{option} needs --rounds {old['data']['rounds']} (the stored sweep's)")
        return old

    def capacities():
        return capacity_study(**cfg["capacities"], **run)

    def dynamic():
        return capacity_study(**cfg["dynamic"], **run)

    def epochs():
        return epoch_study(base=run, **cfg["epochs"])

    def draw():
        return draw_study(base=run, **cfg["draw"])

    studies = (("tune", "tuning", study), ("capacities", "capacities", capacities),
               ("dynamic", "dynamic", dynamic), ("epochs", "epochs", epochs), ("draw", "draw", draw))
    for option, key, fn in studies:
        if getattr(args, option):
            old = stored("--" + option)
            data = {**old["data"], key: fn()}
            cmd = old["command"] + f"; python -m neurips25.leff {flag}--{option}"
            print(save_results("leff", data, cmd, seed=old["seed"], path=args.out, scale=args.scale))
            return
    runs = sweep(seeds, alphas, args.methods, **run)
    cmd = ("python -m neurips25.leff " + flag + "--seeds "
           + " ".join(map(str, seeds)) + " --alphas " + " ".join(map(str, alphas)) + f" --rounds {run['rounds']}")
    if args.methods != list(METHODS):
        cmd += " --methods " + " ".join(f"'{m}'" for m in args.methods)
    data = {"runs": runs, "rounds": run["rounds"]}
    if args.merge:
        old = stored("--merge")
        for name, by_alpha in runs.items():
            for a, by_seed in by_alpha.items():
                old["data"]["runs"].setdefault(name, {}).setdefault(a, {}).update(by_seed)
        data, cmd = old["data"], old["command"] + "; " + cmd + " --merge"
    elif args.methods == list(METHODS):
        data.update({key: fn() for _, key, fn in studies})
    print(save_results("leff", data, cmd, seed=seeds[0], path=args.out, scale=args.scale))


def leff_client_cost(L: int, k: int, r: float, depth: int = 6, batch_size: int = 32, kind: str = "leff"):
    """The :class:`~neurips25.leff.model.Cost` of one local step for a client that trains layers
    ``[k, k+L)`` of a ``depth``-layer tiny ViT whose other layers are compressed with ratio ``r``
    (``kind="fedavg"``: the full model, all layers trained). Weights do not matter for the count, so it
    depends only on the sub-model's shape (compressed layers before the block, the block, after it)
    and is counted once per shape (cached; each call returns its own copy)."""
    (L,) = check_capacities((L,), depth)
    if not 0 <= k <= depth - L:
        raise ValueError(f"k must be in [0, {depth - L}] for L={L}, got {k}")
    pre, post = n_compressed(k, r), n_compressed(depth - k - L, r)
    n_blocks = pre + L + post
    if kind == "fedavg":
        n_blocks, pre = depth, 0
    c = _step_cost_of_shape(n_blocks, pre, L, batch_size, kind)
    return replace(c, parts=copy.deepcopy(c.parts))


@lru_cache(maxsize=256)
def _step_cost_of_shape(n_blocks: int, pre: int, L: int, batch_size: int, kind: str):
    """:func:`step_cost` of an ``n_blocks``-block tiny ViT training blocks ``[pre, pre+L)`` (and what
    ``kind`` trains besides), on a fixed random batch; the global RNG is left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = build_model(ModelSpec(layer_map=(-1,) * n_blocks))
        set_trainable(model, trainable_names(model, kind, range(pre, pre + L)))
        x = torch.rand(batch_size, 64)
        y = torch.arange(batch_size) % 5
        return step_cost(model, x, y)
