"""Tests for neurips25.fair_matroid (Fair Matroid Selection, NeurIPS 2025)."""
from itertools import combinations, permutations

import numpy as np
import pytest

from neurips25.fair_matroid import (
    AcceptAll,
    FirstFitFair,
    GraphicMatroid,
    Greedy,
    LaminarFair,
    LaminarMatroid,
    RandomOrderGraphicFair,
    UniformFair,
    UniformMatroid,
    acceptance_mc,
    alg1_colours,
    alg3_accept_batch,
    alg3_acceptance_mc,
    alg3_orient,
    alg3_q,
    alg3_sample_sizes,
    arboricity,
    arboricity_bruteforce,
    complete_graph,
    cor4_acceptance_mc,
    cor4_algorithm,
    cor4_d,
    d_levels,
    first_fit_colours,
    first_fit_worst_case,
    hill_climb,
    lemma15_bound,
    matroid_partition,
    partition_matroid,
    random_laminar,
    spanning_tree_union,
    u_position,
)


def _acyclic_bruteforce(edges, S):
    """A set of edges is a forest iff |S| = n_vertices_touched - n_components (DFS count)."""
    adj = {}
    for e in S:
        u, v = edges[e]
        adj.setdefault(u, []).append(v)
        adj.setdefault(v, []).append(u)
    seen, comps = set(), 0
    for s in adj:
        if s in seen:
            continue
        comps += 1
        stack = [s]
        while stack:
            x = stack.pop()
            if x not in seen:
                seen.add(x)
                stack += adj[x]
    return len(S) == len(adj) - comps


def _laminar_bruteforce(M, S):
    return all(len(set(S) & F) <= c for F, c in zip(M.family, M.caps))


def test_graphic_oracle_matches_bruteforce():
    M = complete_graph(5)
    for size in range(0, 6):
        for S in combinations(range(M.n), size):
            assert M.is_independent(S) == _acyclic_bruteforce(M.edges, S)
    assert M.rank(range(M.n)) == 4


def test_laminar_uniform_partition_oracles_match_bruteforce():
    L = LaminarMatroid(7, [[0, 1, 2, 3, 4, 5, 6], [0, 1, 2], [0, 1], [4, 5]], [3, 2, 1, 1])
    U = UniformMatroid(3, 6)
    P = partition_matroid([0, 0, 1, 1, 1, 2], [1, 2, 1])
    for M in (L, U, P):
        for size in range(M.n + 1):
            for S in combinations(range(M.n), size):
                assert M.is_independent(S) == _laminar_bruteforce(M, S)
    assert U.rank(range(6)) == 3 and P.rank(range(6)) == 4


def test_arboricity_partition_agrees_with_edmonds_formula():
    for M in (complete_graph(5), complete_graph(6), spanning_tree_union(6, 2, seed=3),
              LaminarMatroid(7, [[0, 1, 2, 3, 4, 5, 6], [0, 1, 2], [4, 5]], [3, 1, 1]),
              UniformMatroid(2, 7), random_laminar(10, seed=4)):
        a = arboricity(M)
        assert a == arboricity_bruteforce(M)
        parts = matroid_partition(M, a)
        assert sorted(e for P in parts for e in P) == list(range(M.n))
        assert all(M.is_independent(P) for P in parts)
        assert matroid_partition(M, a - 1) is None if a > 1 else True


def test_known_arboricities():
    assert arboricity(complete_graph(7)) == 4
    assert arboricity(spanning_tree_union(10, 3, seed=0)) == 3
    for s in range(5):
        L = random_laminar(14, seed=s)
        assert arboricity(L) == L.alpha


def test_alg1_never_needs_more_than_m_colours_exhaustive():
    # every arrival order of small graphic instances
    for M in (complete_graph(4), spanning_tree_union(5, 2, seed=1)):
        a, k = arboricity(M), M.rank(range(M.n))
        m = alg1_colours(a, k)
        n_orders = 0
        for order in permutations(range(M.n)):
            col = first_fit_colours(M, order)
            assert col.max() < m
            for j in range(col.max() + 1):
                assert M.is_independent(np.flatnonzero(col == j))
            n_orders += 1
            if n_orders >= 5040:
                break


@pytest.mark.parametrize("copies", [1, 2])
def test_first_fit_worst_case_reaches_the_ln_k_regime(copies):
    # the recursive series-parallel instance forces copies * levels colours: (alpha/2)(log2 k + 1)
    ratios = []
    for levels in range(2, 10):
        M, order = first_fit_worst_case(levels, copies)
        k = M.rank(range(M.n))
        assert k == 2 ** (levels - 1) and M.n == copies * (2 ** levels - 1)
        a = arboricity(M) if M.n <= 40 else 2 * copies
        if 2 ** (levels - 1) > copies:
            assert a == 2 * copies
        col = first_fit_colours(M, order)
        assert col.max() + 1 == copies * levels
        for j in range(col.max() + 1):
            assert M.is_independent(np.flatnonzero(col == j))
        m = alg1_colours(a, k)
        assert col.max() + 1 <= m  # the theorem, on a near-worst case
        ratios.append((col.max() + 1) / m)
    assert ratios[-1] > 0.6  # within a factor 0.6 of the bound: the ln k is not slack here


def test_alg1_rejects_understated_alpha_or_k():
    # K_8 has arboricity 4; alpha = 1 gives m = 3, first-fit needs 5+: colours 3.. would never be accepted
    with pytest.raises(ValueError, match="alpha must be at least the arboricity"):
        FirstFitFair(complete_graph(8), alpha=1, k=7)
    with pytest.raises(ValueError, match="k must be at least the rank"):
        FirstFitFair(complete_graph(8), alpha=4, k=3)
    # a worst-case gadget hidden in a long path passes the |E| <= alpha * rank test; the first arrival
    # that needs colour m + 1 raises instead of being rejected silently
    W, _ = first_fit_worst_case(8, 2)  # arboricity 4, first-fit needs 16 colours in this order
    path = [(W.n_vertices + i, W.n_vertices + i + 1) for i in range(300)]
    M = GraphicMatroid(list(W.edges) + path, W.n_vertices + 301)
    alg = FirstFitFair(M, alpha=2, k=M.rank(range(M.n)), rng=0)
    assert alg.m == 15
    with pytest.raises(ValueError, match="alpha=2 .* understates the matroid"):
        for e in range(M.n):
            alg.offer(e)
    alg = FirstFitFair(M, alpha=4, k=M.rank(range(M.n)), rng=0)  # the true arboricity works
    for e in range(M.n):
        alg.offer(e)
    assert max(alg.colour.values()) == 15 < alg.m


def test_alg1_accepts_with_probability_exactly_one_over_m():
    M = complete_graph(6)
    alg = FirstFitFair(M, 3, 5, rng=0)
    assert alg.m == alg1_colours(3, 5) == 8
    order = np.random.default_rng(0).permutation(M.n)
    col = first_fit_colours(M, order)
    # over the uniform draw of r, e is accepted iff r == colour(e): probability exactly 1/m
    for r in range(alg.m):
        alg = FirstFitFair(M, 3, 5, rng=0)
        alg.r = r
        acc = [e for e in order if alg.offer(int(e))]
        assert sorted(acc) == sorted(np.flatnonzero(col == r).tolist())
        assert M.is_independent(acc)


def test_laminar_alg2_capacities_respected_under_orders():
    rng = np.random.default_rng(0)
    for s in range(6):
        M = random_laminar(18, seed=s)
        for _ in range(15):
            order = rng.permutation(M.n)
            alg = LaminarFair(M, M.alpha, rng=0)
            for e in order:
                alg.offer(int(e))
            # every family set is contiguous in T, and each colour class is independent
            pos = {e: i for i, e in enumerate(alg.T)}
            for F in M.family:
                idx = sorted(pos[e] for e in F)
                assert idx[-1] - idx[0] == len(F) - 1
            col = np.array([alg.colour[e] for e in range(M.n)])
            assert col.max() < 2 * M.alpha - 1
            for j in range(2 * M.alpha - 1):
                assert _laminar_bruteforce(M, np.flatnonzero(col == j).tolist())


def test_uniform_colouring_exactly_alpha_fair():
    M = UniformMatroid(3, 10)  # alpha = 4
    order = np.random.default_rng(1).permutation(10)
    hits = np.zeros(10, int)
    for r in range(4):
        alg = UniformFair(M)
        alg.r = r
        acc = [e for e in order if alg.offer(int(e))]
        assert len(acc) <= 3
        hits[acc] += 1
    assert (hits == 1).all()  # each element in exactly one of the alpha classes: Pr = 1/alpha


def _run_alg3(M, d, order, n1, n2):
    """Alg. 3 on a fixed order with fixed sample sizes (the first n1 arrivals are S1, the next n2 S2)."""
    alg = RandomOrderGraphicFair(M, d, rng=0)
    alg.n1, alg.n2 = n1, n2
    for e in order:
        alg.offer(int(e))
    return alg


def test_alg3_orientation_s1_up_s2_down():
    # edges given in both endpoint orders: orientation depends on the labels, not on how an edge is written
    M = GraphicMatroid([(0, 2), (3, 1), (1, 2), (2, 0)], 4)
    H = alg3_orient(M, S1=[0, 1], S2=[2, 3])
    assert H.tolist() == [[0, 2], [1, 3], [2, 1], [2, 0]]  # S1: u -> v, S2: v -> u for u < v
    assert alg3_orient(M, [], []).shape == (0, 2)


def test_d_levels_peel_by_out_degree_on_hand_made_graphs():
    # 0 -> 1, 0 -> 2, 1 -> 2, d = 1: out-degrees 2, 1, 0, so 1 and 2 go in round 0, then 0 in round 1.
    # Undirected degree (2, 2, 2) would peel nothing at d = 1: the orientation matters.
    assert d_levels(3, [(0, 1), (0, 2), (1, 2)], 1).tolist() == [1, 0, 0]
    # a directed 3-cycle: every out-degree is 1, so nothing goes at d = 0 (level inf) and all at d = 1
    cyc = [(0, 1), (1, 2), (2, 0)]
    assert np.isinf(d_levels(3, cyc, 0)).all() and d_levels(3, cyc, 1).tolist() == [0, 0, 0]
    # a directed path 3 -> 2 -> 1 -> 0 at d = 0: one vertex per round; vertex 4 has no arcs: level 0
    assert d_levels(5, [(3, 2), (2, 1), (1, 0)], 0).tolist() == [0, 1, 2, 3, 0]
    # only out-arcs to vertices still present count: 0 -> 1 -> 2 -> 0 plus 0 -> 3 at d = 1:
    # 1, 2, 3 go in round 0 (out-degree 1, 1, 0), then 0 (its arcs now lead to removed vertices)
    assert d_levels(4, cyc + [(0, 3)], 1).tolist() == [1, 0, 0, 0]


def test_u_position_decreasing_level_ties_by_label():
    key = u_position(np.array([1, 0, 2, 0, np.inf, 1]))
    assert np.argsort(key).tolist() == [4, 2, 0, 5, 1, 3]  # inf first, then levels 2, 1, 0; labels up
    batch = u_position(np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert (np.argsort(batch, axis=1) == [[1, 0], [0, 1]]).all()


def test_alg3_accepts_first_edge_per_later_endpoint_on_a_hand_made_run():
    # vertices 0..3; S1 = {(0,1), (0,2)}, S2 = {(1,2)} -> H: 0 -> 1, 0 -> 2, 2 -> 1; at d = 1 the
    # out-degrees are 2, 0, 1: 1 and 2 get level 0, then 0 level 1; 3 has no arcs (level 0).
    # U = 0, 1, 2, 3. Online: (1,3), (2,3) both have later endpoint 3: only the first is accepted;
    # (1,2) has later endpoint 2: accepted; (0,3) later endpoint 3: refused.
    M = GraphicMatroid([(0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (1, 2), (0, 3)], 4)
    alg = _run_alg3(M, 1, range(M.n), n1=2, n2=1)
    assert alg.S1 == [0, 1] and alg.S2 == [2]
    assert alg.level.tolist() == [1, 0, 0, 0]
    assert np.argsort(alg.position).tolist() == [0, 1, 2, 3]
    assert alg.accepted == [3, 5]  # (1,3) and the second copy of (1,2)
    assert M.is_independent(alg.accepted)


def test_alg3_output_always_a_forest_and_online_matches_vectorised():
    rng = np.random.default_rng(0)
    for M, d in [(spanning_tree_union(14, 3, seed=2), 5), (complete_graph(7), 1),
                 (complete_graph(7), 40), (first_fit_worst_case(4, 2)[0], 3)]:
        T = 25
        pos = np.argsort(rng.random((T, M.n)), axis=1).argsort(axis=1)
        sizes = np.array([alg3_sample_sizes(M.n, d, rng) for _ in range(T)])
        A = alg3_accept_batch(M, d, pos, sizes)
        for t in range(T):
            alg = _run_alg3(M, d, np.argsort(pos[t]), *sizes[t])
            mask = np.zeros(M.n, bool)
            mask[alg.accepted] = True
            assert (mask == A[t]).all()
            assert M.is_independent(alg.accepted)
            assert not mask[pos[t] < sizes[t].sum()].any()  # sample edges are never accepted


def test_alg3_sample_sizes_follow_the_sampling_model():
    q = alg3_q(16)
    assert q == pytest.approx(1 / 6)  # q = 1 / (3 d^(1/4))
    s = np.array([alg3_sample_sizes(600, 16, seed) for seed in range(400)])
    assert (s.sum(1) <= 600).all()
    mean = s.mean(0) / 600
    assert np.allclose(mean, (1 - q) / 2, atol=0.005)  # p1 = p2 = (1 - q)/2
    assert alg3_sample_sizes(0, 3, 0) == (0, 0)
    # size=T: T draws in one call, the same stream as T single draws from one generator
    many = alg3_sample_sizes(600, 16, np.random.default_rng(5), size=7)
    rng = np.random.default_rng(5)
    assert many.shape == (7, 2) and many.tolist() == [list(alg3_sample_sizes(600, 16, rng)) for _ in range(7)]
    with pytest.raises(ValueError, match="size must be a positive int"):
        alg3_sample_sizes(600, 16, 0, size=0)


def test_alg3_fairness_within_lemma15_bound():
    M = complete_graph(10)  # alpha = 5, Cor. 4: d = 2 alpha - 1 = 9
    est = alg3_acceptance_mc(M, cor4_d(5), 1500, seed=0)
    assert est.all_independent and est.lower.min() > 0
    assert est.f_upper < lemma15_bound(9)["f"]


def test_cor4_uses_d_two_alpha_minus_one_and_accepts_all_at_alpha_one():
    assert [cor4_d(a) for a in (2, 3, 8)] == [3, 5, 15]
    M = spanning_tree_union(10, 2, seed=0)
    alg = cor4_algorithm(M, 2, rng=0)
    assert isinstance(alg, RandomOrderGraphicFair) and alg.d == 3
    tree = spanning_tree_union(8, 1, seed=0)
    assert isinstance(cor4_algorithm(tree, 1), AcceptAll)
    est = cor4_acceptance_mc(tree, 1, 30, seed=0)
    assert (est.p == 1).all() and est.all_independent  # 1-fair on a forest
    alg = AcceptAll(complete_graph(3))
    alg.offer(0)
    alg.offer(1)
    with pytest.raises(ValueError, match="closes a cycle"):
        alg.offer(2)


def test_lemma15_bound_tends_to_two_d():
    f = [lemma15_bound(d)["f"] / d for d in (10**2, 10**4, 10**8, 10**12)]
    assert all(a > b for a, b in zip(f, f[1:]))
    assert 2 < f[-1] < 2.2
    assert lemma15_bound(1)["f"] == float("inf")


def test_greedy_unfair_under_adversarial_order():
    M = complete_graph(5)
    order = list(range(M.n))  # edges 0..3 form a spanning star: everything after is rejected
    est = acceptance_mc(lambda rng: Greedy(M), M, 5, order=order)
    assert est.f_hat == float("inf") and est.all_independent


def test_acceptance_mc_confidence_bounds_cover_exact_probability():
    M = complete_graph(5)
    est = acceptance_mc(lambda rng: FirstFitFair(M, 3, 4, rng=rng), M, 600, seed=1)
    m = alg1_colours(3, 4)
    assert est.all_independent
    assert (est.lower <= 1 / m).all() and (est.upper >= 1 / m).all()


def test_hill_climb_never_decreases_score():
    M = complete_graph(6)
    _, hist = hill_climb(lambda o: first_fit_colours(M, o).max() + 1, M.n, 40, seed=0)
    assert all(b >= a for a, b in zip(hist, hist[1:]))


def test_invalid_inputs_raise():
    M = complete_graph(4)
    with pytest.raises(ValueError, match="unknown element"):
        M.is_independent([0, 99])
    with pytest.raises(ValueError, match="unknown element"):
        Greedy(M).offer(6)
    g = Greedy(M)
    g.offer(0)
    with pytest.raises(ValueError, match="already offered"):
        g.offer(0)
    with pytest.raises(ValueError, match="capacities must be positive"):
        LaminarMatroid(3, [[0, 1]], [-1])
    with pytest.raises(ValueError, match="not laminar"):
        LaminarMatroid(4, [[0, 1], [1, 2]], [1, 1])
    with pytest.raises(ValueError, match="self-loops"):
        GraphicMatroid([(0, 0)], 2)
    with pytest.raises(ValueError, match="alpha must be"):
        LaminarFair(LaminarMatroid(4, [[0, 1, 2, 3]], [1]), 2)
    with pytest.raises(TypeError, match="LaminarMatroid"):
        LaminarFair(M, 2)
    with pytest.raises(ValueError, match="alpha must be a positive int"):
        FirstFitFair(M, 0, 3)
    with pytest.raises(ValueError, match="levels must be a positive int"):
        first_fit_worst_case(0)
    with pytest.raises(ValueError, match="order must be a permutation"):
        first_fit_colours(M, [0, 1])
    with pytest.raises(ValueError, match="order must be a permutation"):
        acceptance_mc(lambda rng: Greedy(M), M, 2, order=[0, 0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match="d must be a positive int"):
        lemma15_bound(0)


def test_forest_rows_matches_is_independent_and_checks_its_input():
    from neurips25.fair_matroid.montecarlo import forest_rows

    M = spanning_tree_union(12, 2, seed=0)
    masks = np.random.default_rng(0).random((200, M.n)) < 0.3
    expect = [M.is_independent(list(np.flatnonzero(row))) for row in masks]
    assert forest_rows(M, masks).tolist() == expect
    assert 0 < np.mean(expect) < 1  # both outcomes occur
    assert not forest_rows(M, np.ones((1, M.n), bool))[0]  # every edge: cycles
    with pytest.raises(ValueError, match="accepted must have shape"):
        forest_rows(M, np.ones((2, M.n + 1), bool))


def test_audit_input_checks():
    from neurips25.fair_matroid import FairnessEstimate

    M = complete_graph(4)
    with pytest.raises(ValueError, match="d must be a positive int"):
        RandomOrderGraphicFair(M, True)
    with pytest.raises(ValueError, match="d must be a positive int"):
        RandomOrderGraphicFair(M, 0)
    with pytest.raises(TypeError, match="GraphicMatroid"):
        RandomOrderGraphicFair(UniformMatroid(2, 4), 3)
    with pytest.raises(TypeError, match="GraphicMatroid"):
        AcceptAll(UniformMatroid(2, 4))
    with pytest.raises(ValueError, match="d must be a positive int"):
        alg3_sample_sizes(6, True)
    with pytest.raises(ValueError, match="n must be a non-negative int"):
        alg3_sample_sizes(-1, 2)
    with pytest.raises(ValueError, match="unknown element"):
        alg3_orient(M, [0, 99], [])
    with pytest.raises(ValueError, match="H must hold vertices"):
        d_levels(3, [(0, 3)], 1)
    with pytest.raises(ValueError, match="d must be a non-negative int"):
        d_levels(3, [(0, 1)], -1)
    with pytest.raises(ValueError, match="alpha must be >= 2"):
        cor4_d(1)
    with pytest.raises(ValueError, match="alpha must be a positive int"):
        cor4_algorithm(M, 0)
    pos = np.arange(M.n)[None, :]
    with pytest.raises(ValueError, match="sizes must have shape"):
        alg3_accept_batch(M, 3, pos, np.array([[4, 4]]))  # more sample than elements
    with pytest.raises(ValueError, match="sizes must have shape"):
        alg3_accept_batch(M, 3, pos, np.array([1, 1]))
    with pytest.raises(ValueError, match="d must be a positive int"):
        lemma15_bound(True)
    L = LaminarMatroid(4, [[0, 1, 2, 3]], [4])  # arboricity 1: True would act as alpha = 1
    with pytest.raises(ValueError, match="alpha must be"):
        LaminarFair(L, True)
    for a, k, name in ((0, 3, "alpha"), (2, 0, "k"), (True, 3, "alpha"), (2, True, "k")):
        with pytest.raises(ValueError, match=f"{name} must be a positive int"):
            alg1_colours(a, k)
    counts = np.array([3, 5, 2])
    assert FairnessEstimate(counts, 5).f_hat == 2.5  # a valid estimate still builds
    for kw, match in ((dict(counts=counts, n_trials=4), "counts must lie in"),
                      (dict(counts=np.array([], dtype=np.int64), n_trials=5), "counts must be a non-empty"),
                      (dict(counts=counts, n_trials=0), "n_trials"),
                      (dict(counts=counts, n_trials=True), "n_trials"),
                      (dict(counts=counts, n_trials=5, level=float("nan")), "level"),
                      (dict(counts=counts, n_trials=5, level=1.5), "level")):
        with pytest.raises(ValueError, match=match):
            FairnessEstimate(**kw)
    with pytest.raises(ValueError, match="n_trials must be a positive int"):
        acceptance_mc(lambda rng: Greedy(M), M, True)
    with pytest.raises(ValueError, match="n_trials must be a positive int"):
        alg3_acceptance_mc(M, 2, True)
    with pytest.raises(ValueError, match="batch must be a positive int"):
        alg3_acceptance_mc(M, 2, 10, batch=0)
    with pytest.raises(ValueError, match="iters must be"):
        hill_climb(lambda o: 0.0, M.n, True)
