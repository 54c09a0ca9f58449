"""The pure algorithms of LEFF: Dirichlet partitions, capacity profiles, Taylor layer importance, the
capacity-aware block-sampling softmax and layer-wise aggregation (no training loops here)."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..runtime import check_int

SAMPLINGS = ("importance", "random", "roundrobin")


# --- data and capacities -----------------------------------------------------------------------------

def dirichlet_split(labels, n_clients: int, alpha: float, seed: int = 0, min_size: int = 8) -> list[np.ndarray]:
    """Non-IID label split: for every class ``c`` draw client shares ``q_c ~ Dir(alpha 1)`` and cut the
    class's (shuffled) indices at those shares. Small ``alpha`` -> each client sees few classes.
    Redraws (same generator) until every client holds ``min_size`` samples. Every index lands in
    exactly one client. Returns one sorted index array per client."""
    y = np.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels)
    if y.ndim != 1 or len(y) == 0:
        raise ValueError(f"labels must be a non-empty 1-D array, got shape {y.shape}")
    n_clients = check_int(n_clients, "n_clients")
    if isinstance(alpha, bool) or not (isinstance(alpha, (int, float)) and math.isfinite(alpha)
                                       and alpha > 0):
        raise ValueError(f"alpha must be a positive float, got {alpha!r}")
    min_size = check_int(min_size, "min_size", 0)
    if n_clients * min_size > len(y):
        raise ValueError(f"n_clients * min_size = {n_clients * min_size} exceeds the {len(y)} samples")
    rng = np.random.default_rng(seed)
    for _ in range(1000):
        parts: list[list[int]] = [[] for _ in range(n_clients)]
        for c in np.unique(y):
            idx = rng.permutation(np.flatnonzero(y == c))
            q = rng.dirichlet(alpha * np.ones(n_clients))
            cuts = (np.cumsum(q)[:-1] * len(idx)).astype(int)
            for i, chunk in enumerate(np.split(idx, cuts)):
                parts[i].extend(chunk.tolist())
        if min(len(p) for p in parts) >= min_size:
            return [np.sort(np.array(p, dtype=int)) for p in parts]
    raise ValueError(f"no split with min_size={min_size} found for alpha={alpha}; lower min_size")


def check_capacities(capacities: Sequence[int], depth: int) -> tuple[int, ...]:
    """Validate per-client capacities ``L_i`` (consecutive layers a client can fine-tune): 1 <= L_i <= depth."""
    depth = check_int(depth, "depth")
    if isinstance(capacities, (str, bytes)) or not isinstance(capacities, Sequence) or not capacities:
        raise ValueError(f"capacities must be a non-empty sequence of ints, got {capacities!r}")
    for i, L in enumerate(capacities):
        if not isinstance(L, (int, np.integer)) or isinstance(L, bool):
            raise ValueError(f"capacities[{i}] must be an int, got {L!r}")
        if not 1 <= L <= depth:
            raise ValueError(f"capacities[{i}] = {L} is invalid: a client must train between 1 and "
                             f"depth={depth} consecutive layers")
    return tuple(int(L) for L in capacities)


def capacity_profile(n_clients: int, levels: Sequence[int] = (1, 2, 3), depth: int = 6) -> tuple[int, ...]:
    """Heterogeneous capacities: ``levels`` repeated over the clients (8 clients, (1, 2, 3) ->
    1, 2, 3, 1, 2, 3, 1, 2)."""
    n_clients = check_int(n_clients, "n_clients")
    levels = check_capacities(tuple(levels), depth)
    return tuple(levels[i % len(levels)] for i in range(n_clients))


# --- importance and block sampling ---------------------------------------------------------------------

def taylor_importance(loss: torch.Tensor, layers: Sequence[torch.nn.Module]) -> torch.Tensor:
    """Layer importance ``I^l = sum_{m in l} (g_m theta_m)^2``: the first-order Taylor estimate of how
    much the loss changes if parameter ``m`` is zeroed, squared and summed over layer ``l``."""
    if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
        raise ValueError("loss must be a scalar tensor")
    params = [[p for p in layer.parameters() if p.requires_grad] for layer in layers]
    flat = [p for ps in params for p in ps]
    if not flat:
        raise ValueError("layers have no trainable parameters")
    grads = iter(torch.autograd.grad(loss, flat, allow_unused=True))
    out = []
    for ps in params:
        s = torch.zeros((), dtype=torch.float64, device=loss.device)
        for p in ps:
            g = next(grads)
            if g is not None:
                s = s + (g.detach() * p.detach()).double().pow(2).sum()
        out.append(s)
    return torch.stack(out)


def block_importance(importance: torch.Tensor, L: int) -> torch.Tensor:
    """``B(k) = sum_{l=k}^{k+L-1} I^l`` for every valid start ``k = 0..depth-L`` (consecutive blocks)."""
    imp = torch.as_tensor(importance, dtype=torch.float64)
    if imp.ndim != 1 or len(imp) == 0:
        raise ValueError(f"importance must be a non-empty 1-D tensor, got shape {tuple(imp.shape)}")
    if not torch.isfinite(imp).all() or (imp < 0).any():
        raise ValueError("importance must be finite and non-negative")
    (L,) = check_capacities((L,), len(imp))
    return imp.unfold(0, L, 1).sum(-1)


def block_probabilities(importance: torch.Tensor, L: int, temperature: float = 0.1) -> torch.Tensor:
    """Capacity-aware sampling distribution over block starts, ``p(k) = softmax_k(B(k) / tau)``.

    The paper does not fix the scale of the softmax's argument; raw Taylor sums span orders of
    magnitude (the softmax would be one-hot or uniform depending on the loss scale). We normalise
    the layer importances to shares ``I^l / sum_l I^l`` first, so ``B(k)`` is in [0, 1] and the
    temperature ``tau`` alone sets how peaked sampling is (tau -> inf: uniform; tau -> 0: greedy).
    Returns ``depth - L + 1`` probabilities (only starts whose block fits in the model)."""
    if not (isinstance(temperature, (int, float)) and temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a positive float, got {temperature!r}")
    imp = torch.as_tensor(importance, dtype=torch.float64)
    B = block_importance(imp, L)
    total = imp.sum()
    B = B / total if total > 0 else torch.zeros_like(B)
    return F.softmax(B / temperature, dim=0)


def choose_blocks(capacities: Sequence[int], depth: int, sampling: str, rnd: int, rng: np.random.Generator,
                  importance: torch.Tensor | None = None, temperature: float = 0.1) -> list[int]:
    """The start ``k_i`` of each client's block of ``L_i`` consecutive layers in round ``rnd``:
    ``"importance"`` samples ``k ~ p_i`` (:func:`block_probabilities`), ``"random"`` uniformly over
    valid starts, ``"roundrobin"`` cycles ``k_i = (i + rnd) mod (depth - L_i + 1)``."""
    caps = check_capacities(capacities, depth)
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    if sampling == "importance" and importance is None:
        raise ValueError("sampling='importance' needs the layer importance")
    starts = []
    for i, L in enumerate(caps):
        n = depth - L + 1
        if sampling == "importance":
            p = block_probabilities(importance, L, temperature).numpy()
            starts.append(int(rng.choice(n, p=p / p.sum())))
        elif sampling == "random":
            starts.append(int(rng.integers(n)))
        else:
            starts.append((i + rnd) % n)
    return starts


# --- aggregation ---------------------------------------------------------------------------------------

def layerwise_aggregate(global_state: Mapping[str, torch.Tensor],
                        results: Sequence[tuple[Mapping[str, torch.Tensor], int]]) -> dict[str, torch.Tensor]:
    """Layer-wise aggregation ``Theta_g^l = sum_{i in S_l} D_i / (sum_{j in S_l} D_j) Theta_i^l``, where
    ``S_l`` are the clients that trained (and returned) tensor ``l``. A tensor no client returned keeps
    the global value (the same object, so it stays bit-identical). FedAvg is the case ``S_l`` = all."""
    if not results:
        raise ValueError("results must hold at least one (update, n_samples) pair")
    out = dict(global_state)
    sums: dict[str, torch.Tensor] = {}
    weights: dict[str, int] = {}
    for j, (update, n) in enumerate(results):
        n = check_int(n, f"results[{j}] n_samples")  # the weight D_i: 0 or < 0 would break the mean
        for key, value in update.items():
            if key not in global_state:
                raise ValueError(f"results[{j}] returns {key!r}, which is not in the global state")
            if value.shape != global_state[key].shape:
                raise ValueError(f"results[{j}][{key!r}] has shape {tuple(value.shape)}, expected "
                                 f"{tuple(global_state[key].shape)}")
            sums[key] = sums.get(key, 0) + n * value.detach()
            weights[key] = weights.get(key, 0) + n
    for key, s in sums.items():
        out[key] = (s / weights[key]).to(global_state[key].dtype)
    return out


def fedavg(states: Sequence[Mapping[str, torch.Tensor]], n_samples: Sequence[int]) -> dict[str, torch.Tensor]:
    """Plain FedAvg, ``Theta = sum_i D_i Theta_i / sum_i D_i`` over full state dicts (the reference the
    layer-wise rule must reduce to when every client trains every layer)."""
    if len(states) == 0 or len(states) != len(n_samples):
        raise ValueError("states and n_samples must be non-empty and of equal length")
    n_samples = [check_int(n, f"n_samples[{i}]") for i, n in enumerate(n_samples)]
    keys = states[0].keys()
    total = sum(n_samples)
    out = {}
    for k in keys:
        s = 0
        for st, n in zip(states, n_samples):
            s = s + n * st[k].detach()
        out[k] = (s / total).to(states[0][k].dtype)
    return out
