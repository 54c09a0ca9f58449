"""The online algorithms: ``offer(e) -> bool`` decides irrevocably; ``accepted`` holds the output."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..runtime import check_int
from .matroids import GraphicMatroid, LaminarMatroid, UniformMatroid, _Matroid


def _rng(rng) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


class _Online:
    def __init__(self, M: _Matroid):
        self.M, self.accepted, self._seen = M, [], set()

    def offer(self, e: int) -> bool:
        e = self.M._check(e)
        if e in self._seen:
            raise ValueError(f"element {e} was already offered")
        self._seen.add(e)
        ok = self._decide(e)
        if ok:
            self.accepted.append(e)
        return ok


class Greedy(_Online):
    """Baseline: accept whenever independence allows. Deterministic, so under a fixed (adversarial)
    order some elements are accepted with probability 0: f = infinity."""

    def __init__(self, M: _Matroid, rng=None):
        super().__init__(M)
        self.state = M.new_state()

    def _decide(self, e: int) -> bool:
        if self.state.can_add(e):
            self.state.add(e)
            return True
        return False


class FirstFitFair(_Online):
    """Alg. 1 (adversarial order): m = ceil(alpha (ln k + 1)) colours, r ~ Uniform{0..m-1} drawn before
    anything arrives; e gets the first colour j whose class A_j + e is independent; accept iff j == r.
    Each class removes at least 1/alpha of what is left, so first-fit needs at most m colours and every
    element is accepted with probability exactly 1/m.

    The guarantee needs alpha >= the arboricity and k >= the rank. Understated values would make m too
    small and silently leave colours >= m with probability 0, so they raise ``ValueError``: at
    construction when ``k`` < rank or |E| > alpha * rank (Edmonds' bound with A = E), and at the first
    arrival that needs a colour beyond m otherwise."""

    def __init__(self, M: _Matroid, alpha: int, k: int, rng=None):
        super().__init__(M)
        for name, v in (("alpha", alpha), ("k", k)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        rank = M.rank(range(M.n))
        if k < rank:
            raise ValueError(f"k must be at least the rank of M ({rank}), got {k}")
        if M.n > alpha * max(rank, 1):
            raise ValueError(f"alpha must be at least the arboricity of M (>= ceil(|E|/rank) = "
                             f"{-(-M.n // max(rank, 1))}), got {alpha}")
        self.alpha, self.k = int(alpha), int(k)
        self.m = alg1_colours(self.alpha, self.k)
        self.r = int(_rng(rng).integers(self.m))  # uniform over all m colours, even unused ones
        self.classes: list = []
        self.colour: dict[int, int] = {}

    def _decide(self, e: int) -> bool:
        j = _first_fit(self.M, self.classes, e)
        if j >= self.m:
            raise ValueError(f"alpha={self.alpha} (or k={self.k}) understates the matroid: first-fit "
                             f"needs colour {j + 1} > m = {self.m}; alpha must be at least the "
                             "arboricity and k at least the rank")
        self.colour[e] = j
        return j == self.r


def _first_fit(M: _Matroid, classes: list, e: int) -> int:
    """Put e into the first class that stays independent (opening a new one if none); its index."""
    j = next((i for i, st in enumerate(classes) if st.can_add(e)), len(classes))
    if j == len(classes):
        classes.append(M.new_state())
    classes[j].add(e)
    return j


def first_fit_colours(M: _Matroid, order: Sequence[int]) -> np.ndarray:
    """First-fit colour of every element under ``order`` (Alg. 1's colouring; independent of r)."""
    order = [M._check(e) for e in order]
    if sorted(order) != list(range(M.n)):
        raise ValueError(f"order must be a permutation of 0..{M.n - 1}")
    classes: list = []
    colour = np.empty(M.n, dtype=np.int64)
    for e in order:
        colour[e] = _first_fit(M, classes, e)
    return colour


def alg1_colours(alpha: int, k: int) -> int:
    """m = ceil(alpha (ln k + 1)), Alg. 1's number of colours and its fairness factor."""
    alpha, k = check_int(alpha, "alpha"), check_int(k, "k")  # ln 0 is undefined; alpha = 0 gives m = 0
    return math.ceil(alpha * (math.log(k) + 1))


class LaminarFair(_Online):
    """Alg. 2 (laminar, adversarial order), (2 alpha - 1)-fair. Keep an online order T in which every
    set of the family is contiguous (insert e right after the last seen element of the smallest set
    containing e that has a seen element; else append); give e the smallest colour in {0..2alpha-2} not
    used by its alpha-1 nearest neighbours on either side. Invariant: any alpha consecutive elements
    of T have distinct colours, so a colour appears at most ceil(|F|/alpha) <= c_F times in F."""

    def __init__(self, M: LaminarMatroid, alpha: int, rng=None):
        super().__init__(M)
        if not isinstance(M, LaminarMatroid):
            raise TypeError(f"M must be a LaminarMatroid, got {type(M).__name__}")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, np.integer)) or alpha < M.alpha:
            raise ValueError(f"alpha must be an int >= the arboricity {M.alpha}, got {alpha!r}")
        self.alpha, self.n_colours = int(alpha), 2 * int(alpha) - 1
        self.r = int(_rng(rng).integers(self.n_colours))
        self.T: list[int] = []
        self.colour: dict[int, int] = {}
        self.seen_in = np.zeros(len(M.caps), dtype=np.int64)
        self.state = M.new_state()

    def _decide(self, e: int) -> bool:
        pos = len(self.T)
        for s in self.M.sets_of[e]:  # smallest set first
            if self.seen_in[s]:
                F = self.M.family[s]
                pos = 1 + max(i for i, x in enumerate(self.T) if x in F)
                break
        self.T.insert(pos, e)
        self.seen_in[self.M.sets_of[e]] += 1
        a = self.alpha
        near = {self.colour[x] for x in self.T[max(0, pos - a + 1):pos] + self.T[pos + 1:pos + a]}
        c = min(set(range(self.n_colours)) - near)
        self.colour[e] = c
        if c != self.r:
            return False
        if not self.state.can_add(e):  # impossible when alpha >= arboricity (checked above)
            raise RuntimeError("colour class became dependent: the invariant was violated")
        self.state.add(e)
        return True


class UniformFair(_Online):
    """Uniform matroid U(k, n), exactly alpha-fair, alpha = ceil(n/k): the i-th arrival gets colour
    i mod alpha; accept iff it equals r. A class has at most ceil(n/alpha) <= k elements."""

    def __init__(self, M: UniformMatroid, rng=None):
        super().__init__(M)
        if not isinstance(M, UniformMatroid):
            raise TypeError(f"M must be a UniformMatroid, got {type(M).__name__}")
        self.alpha = -(-M.n // M.k)
        self.r = int(_rng(rng).integers(self.alpha))

    def _decide(self, e: int) -> bool:
        return (len(self._seen) - 1) % self.alpha == self.r


def alg3_q(d: int) -> float:
    """Alg. 3's unsampled share q = 1 / (3 d^(1/4)) (printed in Alg. 3 and used in Lemma 16; Lemma 12
    once writes q = d^(-1/4), which its own arithmetic does not use)."""
    return check_int(d, "d") ** -0.25 / 3


def alg3_sample_sizes(n: int, d: int, rng=None, size: int | None = None):
    """(|S1|, |S2|) for a random-order stream of n elements. Alg. 3 lives in the sampling model (Def. 5):
    each element goes to S1 or S2 with probability p1 = p2 = (1 - q)/2 each, else to the online part T.
    Thm 18 runs it in random order by drawing the three sizes from Multinomial(n; p1, p2, q) and taking
    the first |S1| arrivals as S1, the next |S2| as S2; the rest is T. With ``size``, ``size``
    independent draws as a (size, 2) int array (one per Monte Carlo trial)."""
    n, q = check_int(n, "n", low=0), alg3_q(d)
    p = [(1 - q) / 2, (1 - q) / 2, q]
    if size is None:
        s1, s2, _ = _rng(rng).multinomial(n, p)
        return int(s1), int(s2)
    return _rng(rng).multinomial(n, p, size=check_int(size, "size"))[:, :2]


def alg3_orient(M: GraphicMatroid, S1: Sequence[int], S2: Sequence[int]) -> np.ndarray:
    """The directed graph H of Alg. 3 as a (|S1| + |S2|, 2) array of (tail, head) rows: an edge (u, v)
    with u < v is inserted as u -> v if it is in S1 and as v -> u if it is in S2. Parallel edges stay
    separate arcs (the graphic matroid counts them separately)."""
    S1 = np.asarray([M._check(e) for e in S1], dtype=np.int64)
    S2 = np.asarray([M._check(e) for e in S2], dtype=np.int64)
    lo, hi = M.E.min(1), M.E.max(1)
    return np.stack([np.concatenate([lo[S1], hi[S2]]), np.concatenate([hi[S1], lo[S2]])], axis=1)


def d_levels(n_vertices: int, H: np.ndarray, d: int) -> np.ndarray:
    """The d-level of Def. 4 on a directed graph with arcs ``H[i] = (tail, head)``: in iteration
    j = 0, 1, ... remove every remaining vertex whose out-degree (arcs to remaining vertices) is at most
    d and give it level j; vertices left when none qualifies get level inf. A float array."""
    n_vertices, d = check_int(n_vertices, "n_vertices"), check_int(d, "d", low=0)
    H = np.asarray(H, dtype=np.int64).reshape(-1, 2)
    if len(H) and (H.min() < 0 or H.max() >= n_vertices):
        raise ValueError(f"H must hold vertices in [0, {n_vertices}), got range [{H.min()}, {H.max()}]")
    level, alive, j = np.full(n_vertices, np.inf), np.ones(n_vertices, bool), 0
    while alive.any():
        arcs = alive[H[:, 0]] & alive[H[:, 1]]
        peel = alive & (np.bincount(H[arcs, 0], minlength=n_vertices) <= d)
        if not peel.any():
            break
        level[peel], alive, j = j, alive & ~peel, j + 1
    return level


def u_position(level: np.ndarray) -> np.ndarray:
    """A sort key for Alg. 3's vertex order U (larger = later): decreasing d-level, ties by vertex
    label (smaller label first). ``level`` is (..., n) over vertices 0..n-1; finite levels are below
    n (each peeling round removes a vertex), so inf is mapped to n."""
    level = np.asarray(level, dtype=float)
    nv = level.shape[-1]
    lev = np.where(np.isinf(level), nv, level).astype(np.int64)
    return (nv - lev) * nv + np.arange(nv)


class RandomOrderGraphicFair(_Online):
    """Alg. 3 of the paper (Sec. 4.1), random order, graphic matroids: (2 + o(1)) d-fair on d-degenerate
    graphs for d >= 3 (Thm 15). As printed:

    1. q = 1/(3 d^(1/4)); samples S1, S2 with p1 = p2 = (1 - q)/2 (sizes: ``alg3_sample_sizes``).
       Sample edges are never accepted.
    2. H: each (u, v) in S1 with u < v as u -> v, each (u, v) in S2 with u < v as v -> u.
    3. U: the vertices ordered by decreasing d-level of H (Def. 4, out-degree), ties by vertex label.
    4. For each later edge e = (u, v): an endpoint not yet in U gets d-level 0 and its place in U; order
       (u, v) as (a, b) with a before b in U; accept e iff no edge with later endpoint b was accepted.

    Every vertex keeps at most one edge to an earlier vertex of U, so the output is always a forest,
    whatever d. In the random-order model the samples are the first |S1| and the next |S2| arrivals,
    the sizes drawn from Multinomial(n; p1, p2, q) (Thm 18); ``rng`` draws only these sizes, everything
    else is decided by the arrival order. Readings where the text leaves a choice: ties go to the
    smaller label first; a vertex new to U is placed by the same rule (level 0, then label), so U is
    the d-level order of H over all vertices of G (a vertex without arcs has out-degree 0, level 0);
    parallel edges are separate arcs of H; a vertex the peeling never removes (level inf, impossible
    when G is d-degenerate, as Thm 15 assumes) comes first in U, as "decreasing l_d" puts it."""

    def __init__(self, M: GraphicMatroid, d: int, rng=None):
        super().__init__(M)
        if not isinstance(M, GraphicMatroid):
            raise TypeError(f"M must be a GraphicMatroid, got {type(M).__name__}")
        self.d, self.q = check_int(d, "d"), alg3_q(d)
        self.n1, self.n2 = alg3_sample_sizes(M.n, self.d, rng)
        self.S1: list[int] = []
        self.S2: list[int] = []
        self.level = self.position = None  # d-levels of H and the order U, set when the sample ends
        self.has_accepted = np.zeros(M.n_vertices, bool)  # per later endpoint b

    def _decide(self, e: int) -> bool:
        t = len(self._seen) - 1
        if t < self.n1 + self.n2:
            (self.S1 if t < self.n1 else self.S2).append(e)
            return False
        if self.position is None:
            H = alg3_orient(self.M, self.S1, self.S2)
            self.level = d_levels(self.M.n_vertices, H, self.d)
            self.position = u_position(self.level)
        u, v = self.M.edges[e]
        b = u if self.position[u] > self.position[v] else v
        if self.has_accepted[b]:
            return False
        self.has_accepted[b] = True
        return True


class AcceptAll(_Online):
    """Cor. 4 at alpha = 1: the graph is a forest, so accepting every element is valid and 1-fair. An
    edge that closes a cycle means alpha = 1 was understated: ``ValueError``."""

    def __init__(self, M: GraphicMatroid, rng=None):
        super().__init__(M)
        if not isinstance(M, GraphicMatroid):
            raise TypeError(f"M must be a GraphicMatroid, got {type(M).__name__}")
        self.state = M.new_state()

    def _decide(self, e: int) -> bool:
        if not self.state.can_add(e):
            raise ValueError(f"edge {e} closes a cycle: the graph is not a forest, so alpha = 1 "
                             "understates its arboricity")
        self.state.add(e)
        return True


def cor4_d(alpha: int) -> int:
    """Cor. 4's degeneracy parameter for an alpha-knowing run of Alg. 3: d = 2 alpha - 1. A graph of
    arboricity alpha is (2 alpha - 1)-degenerate (Thm 13: degeneracy < 2 alpha), and alpha >= 2 gives the
    d >= 3 that Thm 15 needs; at alpha = 1 Cor. 4 accepts everything instead (``AcceptAll``)."""
    alpha = check_int(alpha, "alpha")
    if alpha < 2:
        raise ValueError(f"alpha must be >= 2 for Alg. 3 (at alpha = 1 Cor. 4 accepts every element), "
                         f"got {alpha}")
    return 2 * alpha - 1


def cor4_algorithm(M: GraphicMatroid, alpha: int, rng=None) -> _Online:
    """Cor. 4's alpha-knowing, (4 + o(1)) alpha-fair algorithm for random order: ``AcceptAll`` when
    alpha = 1, else Alg. 3 with d = 2 alpha - 1."""
    alpha = check_int(alpha, "alpha")
    return AcceptAll(M) if alpha == 1 else RandomOrderGraphicFair(M, cor4_d(alpha), rng=rng)


def lemma15_bound(d: int) -> dict[str, float]:
    """Explicit Lemma 15 bound on Alg. 3's acceptance probability (App. C.9; Lemma 16 shows it positive
    for d >= 3): Pr[accept] >= (1 - 2P) q / (b - d) with q = d^(-1/4)/3, x = 2q/(1+q), delta = d^(-1/8),
    b = ceil(d / (1 - x(1+delta))), P = exp(-x b delta^2 / 3). Returns the pieces and f = 1/bound (inf
    when the bound is vacuous). Cor. 4 runs Alg. 3 at d = 2 alpha - 1, so its bound on f / alpha is
    ``lemma15_bound(2 * alpha - 1)["f"] / alpha``."""
    d = check_int(d, "d")
    q = alg3_q(d)
    x, delta = 2 * q / (1 + q), d ** -0.125
    if x * (1 + delta) >= 1:
        return dict(q=q, x=x, delta=delta, b=math.inf, P=1.0, p=0.0, f=math.inf)
    b = math.ceil(d / (1 - x * (1 + delta)))
    P = math.exp(-x * b * delta**2 / 3)
    p = (1 - 2 * P) * q / (b - d)
    return dict(q=q, x=x, delta=delta, b=b, P=P, p=p, f=1 / p if p > 0 else math.inf)
