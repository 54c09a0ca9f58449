"""The online algorithms: ``offer(e) -> bool`` decides irrevocably; ``accepted`` holds the output."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .matroids import GraphicMatroid, LaminarMatroid, UniformMatroid, _Matroid


def _check_count(v, name: str, low: int = 1) -> int:
    """An int >= ``low``; bools are rejected (True would silently act as 1)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        kind = "a positive int" if low == 1 else f"an int >= {low}"
        raise ValueError(f"{name} must be {kind}, got {v!r}")
    return int(v)


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
    alpha, k = _check_count(alpha, "alpha"), _check_count(k, "k")  # ln 0 is undefined; alpha = 0 gives m = 0
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


def alg3_split(m: int, d: int) -> tuple[int, int, float]:
    """Alg. 3's sampling: q = d^(-1/4)/3; the first floor((1-q)/2 m) arrivals form S1, up to
    floor((1-q) m) form S2, the rest R. In random order these are uniform random subsets."""
    m, d = _check_count(m, "m", low=0), _check_count(d, "d")
    q = d ** -0.25 / 3
    return int(math.floor((1 - q) / 2 * m)), int(math.floor((1 - q) * m)), q


def _peel_levels(n_vertices: int, E: np.ndarray, d: int) -> np.ndarray:
    """Level of each vertex: repeatedly remove every vertex with at most d remaining sample edges
    (all with minimum degree if none qualifies). Vertices peeled early are 'late' in the order."""
    level = np.full(n_vertices, -1)
    alive_e = np.ones(len(E), bool)
    t = 0
    while (level < 0).any():
        deg = np.bincount(E[alive_e].ravel(), minlength=n_vertices)
        cand = (level < 0) & (deg <= d)
        if not cand.any():
            cand = (level < 0) & (deg == deg[level < 0].min())
        level[cand] = t
        alive_e &= ~cand[E[:, 0]] & ~cand[E[:, 1]]
        t += 1
    return level


class RandomOrderGraphicFair(_Online):
    """A RECONSTRUCTION of Alg. 3 (random order, graphic), (4 + o(1)) alpha-fair with d ~ 2 alpha in the
    paper. Built from a summary, not the paper's pseudocode (its full text was not available to us). Known
    or possible differences: the summary orients the sampled edges and peels by out-degree <= d, we peel
    by undirected degree <= d; we learn the order from S1 and never use S2; when no vertex qualifies we
    peel the minimum-degree vertices (our fallback); ties go to the larger index. Sample edges are rejected. After
    the sample, vertices are ordered by decreasing peeling level of the S1 graph (ties: larger index is
    later), which approximates a degeneracy order. An edge of R is charged to its later endpoint b and
    accepted iff no edge charged to b was accepted before: each vertex keeps at most one edge to an
    earlier vertex, so the output is always a forest."""

    def __init__(self, M: GraphicMatroid, d: int, rng=None):
        super().__init__(M)
        if not isinstance(M, GraphicMatroid):
            raise TypeError(f"M must be a GraphicMatroid, got {type(M).__name__}")
        self.d = int(d)
        self.m1, self.mS, self.q = alg3_split(M.n, d)
        self.S1: list[int] = []
        self.key = None  # vertex order key: larger = later
        self.used = np.zeros(M.n_vertices, bool)

    def _decide(self, e: int) -> bool:
        t = len(self._seen) - 1
        if t < self.m1:
            self.S1.append(e)
        if t < self.mS:
            return False
        if self.key is None:
            lev = _peel_levels(self.M.n_vertices, self.M.E[self.S1], self.d)
            self.key = -lev * self.M.n_vertices + np.arange(self.M.n_vertices)
        u, v = self.M.edges[e]
        b = u if self.key[u] > self.key[v] else v
        if self.used[b]:
            return False
        self.used[b] = True
        return True


def lemma15_bound(d: int) -> dict[str, float]:
    """Explicit Lemma 15 bound: Pr[accept] >= (1 - 2P) q / (b - d) with q = d^(-1/4)/3,
    x = 2q/(1+q), delta = d^(-1/8), b = ceil(d / (1 - x(1+delta))), P = exp(-x b delta^2 / 3).
    Returns the pieces and f = 1/bound (inf when the bound is vacuous)."""
    d = _check_count(d, "d")
    q = d ** -0.25 / 3
    x, delta = 2 * q / (1 + q), d ** -0.125
    if x * (1 + delta) >= 1:
        return dict(q=q, x=x, delta=delta, b=math.inf, P=1.0, p=0.0, f=math.inf)
    b = math.ceil(d / (1 - x * (1 + delta)))
    P = math.exp(-x * b * delta**2 / 3)
    p = (1 - 2 * P) * q / (b - d)
    return dict(q=q, x=x, delta=delta, b=b, P=P, p=p, f=1 / p if p > 0 else math.inf)
