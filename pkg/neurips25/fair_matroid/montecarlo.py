"""Monte Carlo fairness estimates with simultaneous Clopper-Pearson bounds, Alg. 3 vectorised over
trials, and a hill-climbing adversary over arrival orders."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.stats import beta as _beta

from ..runtime import cap, check_int
from .algorithms import AcceptAll, _Online, alg3_sample_sizes, cor4_d, d_levels, u_position
from .matroids import GraphicMatroid, _Matroid

# Under NEURIPS25_SMOKE=1 (a bounded test run of any configuration) every Monte Carlo estimate uses at
# most SMOKE_TRIALS trials and the adversary at most 2 steps; otherwise ``runtime.cap`` is the identity.
SMOKE_TRIALS = 20


@dataclass
class FairnessEstimate:
    """Acceptance counts per element over ``n_trials`` runs, with Clopper-Pearson bounds at level
    1 - ``level`` *simultaneously* over elements (Bonferroni), so the minimum is covered too."""

    counts: np.ndarray
    n_trials: int
    all_independent: bool = True
    level: float = 0.05

    def __post_init__(self):
        # empty counts or n_trials = 0 divide by zero; counts outside [0, n_trials] or a level outside
        # (0, 1) would give meaningless Clopper-Pearson bounds
        n = self.n_trials
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n_trials must be a positive int, got {self.n_trials!r}")
        c = np.asarray(self.counts)
        if c.ndim != 1 or c.size == 0 or not np.issubdtype(c.dtype, np.integer):
            raise ValueError(f"counts must be a non-empty 1-D integer array, got shape {c.shape}, "
                             f"dtype {c.dtype}")
        if c.min() < 0 or c.max() > n:
            raise ValueError(f"counts must lie in [0, n_trials = {n}], got range [{c.min()}, {c.max()}]")
        if isinstance(self.level, bool) or not isinstance(self.level, (int, float)) or not 0 < self.level < 1:
            raise ValueError(f"level must be a number in (0, 1), got {self.level!r}")
        self.counts = c

    @property
    def p(self) -> np.ndarray:
        return self.counts / self.n_trials

    def _cp(self, lower: bool) -> np.ndarray:
        a = self.level / len(self.counts)  # two-sided, Bonferroni over elements
        c, n = self.counts, self.n_trials
        if lower:
            return np.where(c > 0, _beta.ppf(a / 2, np.maximum(c, 1), n - c + 1), 0.0)
        return np.where(c < n, _beta.ppf(1 - a / 2, c + 1, np.maximum(n - c, 1)), 1.0)

    @property
    def lower(self) -> np.ndarray:
        return self._cp(True)

    @property
    def upper(self) -> np.ndarray:
        return self._cp(False)

    @property
    def f_hat(self) -> float:
        """Measured fairness factor 1 / min_e p_e (inf if some element was never accepted)."""
        m = self.p.min()
        return math.inf if m == 0 else 1 / m

    @property
    def f_upper(self) -> float:
        """Upper confidence bound on the true fairness factor: 1 / min_e lower_e."""
        m = self.lower.min()
        return math.inf if m == 0 else 1 / m


def acceptance_mc(make_alg: Callable[[np.random.Generator], _Online], M: _Matroid, n_trials: int,
                  order: str | Sequence[int] = "random", seed: int = 0, level: float = 0.05) -> FairnessEstimate:
    """Run ``make_alg(rng)`` on ``M`` ``n_trials`` times; ``order`` is "random" (fresh uniform order per
    trial) or a fixed permutation (an oblivious adversary). Checks every output for independence."""
    n_trials = check_int(n_trials, "n_trials")
    n_trials = cap(n_trials, SMOKE_TRIALS)
    if isinstance(order, str):
        if order != "random":
            raise ValueError(f"order must be 'random' or a permutation, got {order!r}")
    elif sorted(int(e) for e in order) != list(range(M.n)):
        raise ValueError(f"order must be a permutation of 0..{M.n - 1}")
    rng = np.random.default_rng(seed)
    counts, ok = np.zeros(M.n, dtype=np.int64), True
    for _ in range(n_trials):
        seq = rng.permutation(M.n) if isinstance(order, str) else order
        alg = make_alg(rng)
        for e in seq:
            alg.offer(int(e))
        counts[alg.accepted] += 1
        ok &= M.is_independent(alg.accepted)
    return FairnessEstimate(counts, n_trials, bool(ok), level)


def alg3_accept_batch(M: GraphicMatroid, d: int, pos: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Alg. 3's decisions for a batch of trials, vectorised: ``pos[t, e]`` is the arrival time of edge e
    in trial t and ``sizes[t] = (|S1|, |S2|)``; returns the (T, m) accepted mask. The same decisions as
    ``RandomOrderGraphicFair`` with those sample sizes: all the directed graphs H are peeled at once by
    ``d_levels`` on flattened (trial, vertex) indices, then the first T-edge charged to each later
    endpoint is accepted."""
    d = check_int(d, "d")
    pos, sizes = np.asarray(pos), np.asarray(sizes)
    if pos.ndim != 2 or pos.shape[1] != M.n:
        raise ValueError(f"pos must have shape (T, {M.n}), got {pos.shape}")
    if sizes.shape != (pos.shape[0], 2) or (sizes < 0).any() or (sizes.sum(1) > M.n).any():
        raise ValueError(f"sizes must have shape ({pos.shape[0]}, 2) with non-negative rows summing to "
                         f"at most {M.n}, got shape {sizes.shape}")
    T, m, nv = pos.shape[0], M.n, M.n_vertices
    in_s1, online = pos < sizes[:, :1], pos >= sizes.sum(1, keepdims=True)
    lo, hi = M.E.min(1), M.E.max(1)
    tv = np.arange(T)[:, None] * nv  # flat (trial, vertex) index offsets
    tail = (tv + np.where(in_s1, lo, hi))[~online]  # S1: u -> v, S2: v -> u (u < v)
    head = (tv + np.where(in_s1, hi, lo))[~online]
    # the T graphs as one graph on T * nv vertices: peeling never mixes trials (no arc joins them)
    level = d_levels(T * nv, np.stack([tail, head], 1), d)
    key = u_position(level.reshape(T, nv)).ravel()
    U, V = tv + M.E[:, 0], tv + M.E[:, 1]
    B = np.where(key[U] > key[V], U, V)  # later endpoint in U, flat index
    first = np.full(T * nv, m)
    np.minimum.at(first, B[online], pos[online])
    return online & (pos == first[B])


def forest_rows(M: GraphicMatroid, accepted: np.ndarray) -> np.ndarray:
    """For a (T, m) mask of accepted edges, whether each row is a forest (independent in ``M``):
    its edges number ``|V|`` minus its connected components. All rows are solved as one
    block-diagonal graph."""
    accepted = np.asarray(accepted, dtype=bool)
    if accepted.ndim != 2 or accepted.shape[1] != M.n:
        raise ValueError(f"accepted must have shape (T, {M.n}), got {accepted.shape}")
    T, nv = accepted.shape[0], M.n_vertices
    t, e = np.nonzero(accepted)
    u, v = t * nv + M.E[e, 0], t * nv + M.E[e, 1]
    graph = coo_matrix((np.ones(len(e)), (u, v)), shape=(T * nv, T * nv))
    labels = connected_components(graph, directed=False)[1].reshape(T, nv)
    labels.sort(axis=1)
    components = 1 + (np.diff(labels, axis=1) != 0).sum(1)
    return accepted.sum(1) == nv - components


def alg3_acceptance_mc(M: GraphicMatroid, d: int, n_trials: int, seed: int = 0, batch: int = 500,
                       level: float = 0.05) -> FairnessEstimate:
    """Monte Carlo of Alg. 3 under uniformly random arrival order, in batches of trials: per trial a
    uniform order and Thm 18's multinomial sample sizes (``alg3_sample_sizes``). Checks every output for
    independence (a forest), as ``acceptance_mc`` does."""
    if not isinstance(M, GraphicMatroid):
        raise TypeError(f"M must be a GraphicMatroid, got {type(M).__name__}")
    n_trials = check_int(n_trials, "n_trials")
    batch = check_int(batch, "batch")  # 0 would never finish
    n_trials = cap(n_trials, SMOKE_TRIALS)
    rng, counts, done, ok = np.random.default_rng(seed), np.zeros(M.n, dtype=np.int64), 0, True
    while done < n_trials:
        T = min(batch, n_trials - done)
        pos = np.argsort(rng.random((T, M.n)), axis=1).argsort(axis=1)
        sizes = alg3_sample_sizes(M.n, d, rng, size=T)
        accepted = alg3_accept_batch(M, d, pos, sizes)
        counts += accepted.sum(0)
        ok &= bool(forest_rows(M, accepted).all())
        done += T
    return FairnessEstimate(counts, n_trials, ok, level)


def cor4_acceptance_mc(M: GraphicMatroid, alpha: int, n_trials: int, seed: int = 0,
                       level: float = 0.05) -> FairnessEstimate:
    """Monte Carlo of Cor. 4's alpha-knowing algorithm in random order: Alg. 3 with d = 2 alpha - 1
    (``alg3_acceptance_mc``), or ``AcceptAll`` when alpha = 1."""
    alpha = check_int(alpha, "alpha")
    if alpha == 1:
        return acceptance_mc(lambda rng: AcceptAll(M), M, n_trials, seed=seed, level=level)
    return alg3_acceptance_mc(M, cor4_d(alpha), n_trials, seed=seed, level=level)


def hill_climb(score: Callable[[np.ndarray], float], n: int, iters: int, seed: int = 0,
               init: Sequence[int] | None = None) -> tuple[np.ndarray, list[float]]:
    """A simple adversary: swap two random positions of the order, keep the swap if ``score`` does not
    decrease. Returns the best order and the score history."""
    iters = check_int(iters, "iters", 0)
    iters = cap(iters)
    rng = np.random.default_rng(seed)
    order = rng.permutation(n) if init is None else np.array(init)
    best = score(order)
    hist = [best]
    for _ in range(iters):
        i, j = rng.integers(n, size=2)
        order[[i, j]] = order[[j, i]]
        s = score(order)
        if s >= best:
            best = s
        else:
            order[[i, j]] = order[[j, i]]
        hist.append(best)
    return order, hist
