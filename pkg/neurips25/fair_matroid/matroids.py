"""Matroids with incremental independence states, arboricity, and instances with known arboricity.

Ground set {0, ..., n-1}; ``new_state()`` is an empty independent set that can grow (``can_add`` / ``add``):
union-find for graphic matroids, a counter per set for laminar ones (uniform and partition are laminar).
"""
from __future__ import annotations

from itertools import combinations
from typing import Iterable, Sequence

import numpy as np

from ..runtime import check_int


class _Matroid:
    n: int

    def _check(self, e) -> int:
        if isinstance(e, bool) or not isinstance(e, (int, np.integer)):
            raise TypeError(f"element must be an int, got {type(e).__name__}")
        if not 0 <= int(e) < self.n:
            raise ValueError(f"unknown element {e!r}: elements are 0..{self.n - 1}")
        return int(e)

    def new_state(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def is_independent(self, S: Iterable[int]) -> bool:
        st = self.new_state()
        for e in S:
            e = self._check(e)
            if not st.can_add(e):
                return False
            st.add(e)
        return True

    def rank(self, S: Iterable[int]) -> int:
        """Greedy computes the rank in any matroid."""
        st, r = self.new_state(), 0
        for e in S:
            e = self._check(e)
            if st.can_add(e):
                st.add(e)
                r += 1
        return r


class _UnionFind:
    def __init__(self, n: int):
        self.p = list(range(n))

    def find(self, a: int) -> int:
        p = self.p
        while p[a] != a:
            p[a] = p[p[a]]
            a = p[a]
        return a


class _GraphicState:
    def __init__(self, M: GraphicMatroid):
        self.M, self.uf = M, _UnionFind(M.n_vertices)

    def can_add(self, e: int) -> bool:
        u, v = self.M.edges[e]
        return self.uf.find(u) != self.uf.find(v)

    def add(self, e: int) -> None:
        u, v = self.M.edges[e]
        self.uf.p[self.uf.find(u)] = self.uf.find(v)


class GraphicMatroid(_Matroid):
    """Edges of a graph; independent = acyclic (a forest). Oracle: union-find."""

    def __init__(self, edges: Sequence[tuple[int, int]], n_vertices: int):
        n_vertices = check_int(n_vertices, "n_vertices")
        E = np.asarray(edges, dtype=np.int64).reshape(-1, 2) if len(edges) else np.zeros((0, 2), np.int64)
        if len(E) and (E.min() < 0 or E.max() >= n_vertices):
            raise ValueError(f"edges must join vertices in [0, {n_vertices}), got range [{E.min()}, {E.max()}]")
        if len(E) and np.any(E[:, 0] == E[:, 1]):
            raise ValueError("edges must not be self-loops (a loop is never independent)")
        self.edges = [(int(u), int(v)) for u, v in E]
        self.E, self.n_vertices, self.n = E, int(n_vertices), len(E)

    def new_state(self) -> _GraphicState:
        return _GraphicState(self)


class _CountState:
    def __init__(self, M: LaminarMatroid | UniformMatroid):
        self.M, self.cnt = M, np.zeros(len(M.caps), dtype=np.int64)

    def can_add(self, e: int) -> bool:
        s = self.M.sets_of[e]
        return bool(np.all(self.cnt[s] < self.M.caps[s]))

    def add(self, e: int) -> None:
        self.cnt[self.M.sets_of[e]] += 1


class LaminarMatroid(_Matroid):
    """I independent iff |I ∩ F| <= c_F for every F in a laminar family (any two sets nested or disjoint)."""

    def __init__(self, n: int, family: Sequence[Iterable[int]], capacities: Sequence[int]):
        n = check_int(n, "n")
        self.n = int(n)
        fam = [frozenset(self._check(e) for e in F) for F in family]
        if len(fam) != len(capacities):
            raise ValueError(f"capacities must have one entry per set: {len(fam)} sets, {len(capacities)} capacities")
        caps = np.asarray(capacities)
        if not np.issubdtype(caps.dtype, np.integer) or (len(caps) and caps.min() < 1):
            raise ValueError(f"capacities must be positive integers, got {list(capacities)}")
        if any(not F for F in fam):
            raise ValueError("family must not contain empty sets")
        for (i, A), (j, B) in combinations(enumerate(fam), 2):
            if A & B and not (A <= B or B <= A):
                raise ValueError(f"family is not laminar: sets {i} and {j} overlap without nesting")
        # sets containing each element, smallest first: a chain, because the family is laminar
        self.family, self.caps = fam, caps.astype(np.int64)
        order = sorted(range(len(fam)), key=lambda i: len(fam[i]))
        self.sets_of = [np.array([i for i in order if e in fam[i]], dtype=np.int64) for e in range(self.n)]

    def new_state(self) -> _CountState:
        return _CountState(self)

    @property
    def alpha(self) -> int:
        """Arboricity: max_F ceil(|F| / c_F) (1 if no set binds). Exact: colouring a contiguous order
        with i mod alpha (Alg. 2's invariant) gives alpha independent sets."""
        return max([1] + [-(-len(F) // int(c)) for F, c in zip(self.family, self.caps)])


class UniformMatroid(LaminarMatroid):
    """U(k, n): any set of at most k elements is independent (a laminar family with one set)."""

    def __init__(self, k: int, n: int):
        k = check_int(k, "k")
        super().__init__(n, [range(n)], [k])
        self.k = int(k)


def partition_matroid(blocks: Sequence[int], capacities: Sequence[int]) -> LaminarMatroid:
    """Element e lies in block ``blocks[e]``; at most ``capacities[b]`` elements per block b."""
    blocks = np.asarray(blocks)
    if blocks.ndim != 1 or not len(blocks) or blocks.min() < 0 or blocks.max() >= len(capacities):
        raise ValueError(f"blocks must be a 1-D array of block ids in [0, {len(capacities)})")
    fam = [np.flatnonzero(blocks == b).tolist() for b in range(len(capacities))]
    keep = [i for i, F in enumerate(fam) if F]
    return LaminarMatroid(len(blocks), [fam[i] for i in keep], [capacities[i] for i in keep])


# ----------------------------------------------------------------------------------------------------
# Arboricity via Edmonds' matroid partition (shortest augmenting paths; small instances only)
def matroid_partition(M: _Matroid, k: int) -> list[set[int]] | None:
    """Cover E by k independent sets, or None if impossible (Edmonds 1965: augment along a
    shortest path in the exchange graph; y -> z when I_i - z + y is independent)."""
    k = check_int(k, "k")
    parts: list[set[int]] = [set() for _ in range(k)]
    where: dict[int, int] = {}
    for x in range(M.n):
        parent: dict[int, tuple[int, int] | None] = {x: None}
        queue, found, head = [x], None, 0
        while head < len(queue) and found is None:
            y = queue[head]
            head += 1
            for i in range(k):
                if where.get(y) == i:
                    continue
                if M.is_independent(parts[i] | {y}):
                    found = (y, i)
                    break
                for z in sorted(parts[i]):
                    if z not in parent and M.is_independent((parts[i] - {z}) | {y}):
                        parent[z] = (y, i)
                        queue.append(z)
        if found is None:
            return None
        y, i = found
        while True:  # y moves into part i; its predecessor takes y's old place
            if y in where:
                parts[where[y]].discard(y)
            parts[i].add(y)
            where[y] = i
            if parent[y] is None:
                break
            y, i = parent[y]
    return parts


def arboricity(M: _Matroid) -> int:
    """Fewest independent sets covering E, from ceil(|E| / r(E)) upwards by matroid partition."""
    r = M.rank(range(M.n))
    if r == 0 or any(M.rank([e]) == 0 for e in range(M.n)):
        raise ValueError("matroid has a loop: no finite arboricity")
    k = -(-M.n // r)
    while matroid_partition(M, k) is None:
        k += 1
    return k


def arboricity_bruteforce(M: _Matroid) -> int:
    """Edmonds' formula max_A ceil(|A| / r(A)) by enumerating all subsets (n <= 16)."""
    if M.n > 16:
        raise ValueError(f"brute force needs at most 16 elements, got {M.n}")
    best = 1
    for size in range(1, M.n + 1):
        for A in combinations(range(M.n), size):
            r = M.rank(A)
            if r == 0:
                raise ValueError("matroid has a loop: no finite arboricity")
            best = max(best, -(-size // r))
    return best


# ----------------------------------------------------------------------------------------------------
# Instances with known arboricity
def spanning_tree_union(n_vertices: int, alpha: int, seed: int = 0) -> GraphicMatroid:
    """alpha edge-disjoint random spanning trees on n vertices: alpha(n-1) edges, arboricity alpha."""
    if not isinstance(alpha, (int, np.integer)) or alpha < 1 or n_vertices < 2 * alpha:
        raise ValueError(f"need a positive int alpha <= n_vertices/2, got alpha={alpha!r}, n={n_vertices}")
    rng = np.random.default_rng(seed)
    for _ in range(100):
        free = {(u, v) for u in range(n_vertices) for v in range(u + 1, n_vertices)}
        edges: list[tuple[int, int]] = []
        for _t in range(alpha):
            cand = sorted(free)
            uf, tree = _UnionFind(n_vertices), []
            for i in rng.permutation(len(cand)):
                u, v = cand[i]
                if uf.find(u) != uf.find(v):
                    uf.p[uf.find(u)] = uf.find(v)
                    tree.append((u, v))
            if len(tree) < n_vertices - 1:
                break
            free -= set(tree)
            edges += tree
        else:
            perm = rng.permutation(len(edges))
            return GraphicMatroid([edges[i] for i in perm], n_vertices)
    raise RuntimeError("could not pack the spanning trees; use more vertices")


def complete_graph(n_vertices: int) -> GraphicMatroid:
    """K_n: arboricity ceil(n/2) (Nash-Williams), rank n - 1."""
    n_vertices = check_int(n_vertices, "n_vertices", 2)
    return GraphicMatroid(list(combinations(range(n_vertices), 2)), n_vertices)


def random_laminar(n: int, seed: int = 0, max_children: int = 3, min_size: int = 2) -> LaminarMatroid:
    """A random laminar family (recursive splits of a shuffled ground set) with capacities
    c_F = max(1, round(|F| / rho)), rho ~ U[1.2, 4]."""
    n = check_int(n, "n", 2)
    rng = np.random.default_rng(seed)
    fam: list[list[int]] = []

    def split(S: list[int]) -> None:
        fam.append(S)
        if len(S) < 2 * min_size:
            return
        n_child = int(rng.integers(2, max_children + 1))
        cuts = np.sort(rng.choice(np.arange(1, len(S)), size=min(n_child - 1, len(S) - 1), replace=False))
        for part in np.split(np.array(S), cuts):
            if min_size <= len(part) < len(S) and rng.random() < 0.8:
                split(part.tolist())

    split(rng.permutation(n).tolist())
    caps = [max(1, int(round(len(F) / rng.uniform(1.2, 4.0)))) for F in fam]
    return LaminarMatroid(n, fam, caps)


def first_fit_worst_case(levels: int, copies: int = 1) -> tuple[GraphicMatroid, list[int]]:
    """A series-parallel multigraph and an arrival order on which first-fit needs ``copies * levels``
    colours, i.e. about (alpha / 2) (log2 k + 1) -- the ln k regime of Alg. 1's bound.

    H_0(s, t) is empty; H_j(s, t) = H_{j-1}(s, x), then H_{j-1}(x, t) (x a new vertex), then ``copies``
    parallel edges s-t. After H_{j-1}(s, x) and H_{j-1}(x, t), s and t are joined in each of the first
    c = copies * (j - 1) colour classes, so the parallel edges get colours c+1, ..., c+copies. The graph
    has 2^(levels-1) + 1 vertices (rank k = 2^(levels-1)) and copies * (2^levels - 1) edges; it is
    ``copies`` times a 2-degenerate series-parallel graph, so its arboricity is 2 * copies once
    2^(levels-1) > copies. Returns the matroid and the adversarial order (0, 1, ..., |E|-1).
    """
    for name, v in (("levels", levels), ("copies", copies)):
        check_int(v, name)
    if levels > 16:
        raise ValueError(f"levels must be <= 16 (the graph has 2^levels edges), got {levels}")
    edges: list[tuple[int, int]] = []
    n_vertices = 2

    def build(s: int, t: int, j: int) -> None:
        nonlocal n_vertices
        if j == 0:
            return
        x = n_vertices
        n_vertices += 1
        build(s, x, j - 1)
        build(x, t, j - 1)
        edges.extend([(s, t)] * copies)

    build(0, 1, levels)
    used = sorted({v for e in edges for v in e})
    relabel = {v: i for i, v in enumerate(used)}  # H_1's helper vertex x is never used: drop it
    edges = [(relabel[u], relabel[v]) for u, v in edges]
    return GraphicMatroid(edges, len(used)), list(range(len(edges)))
