"""Tests for neurips25.tree_sb (TreeDSBM)."""
import numpy as np
import pytest
import torch
from scipy.stats import norm

from neurips25.runtime import seed_everything
from neurips25.tree_sb import (
    Tree,
    TreeBridgeMatching,
    brownian_bridge,
    bw2,
    bw2_uvp,
    gaussian_fixed_point_barycenter,
    gaussian_tree_sb,
    grid_multimarginal_sinkhorn,
    simulate_tree,
    star_tree,
    tree_dsbm,
)

LAM = [0.2, 0.3, 0.5]
MEANS = [[-1.0], [0.5], [2.0]]
VARS = [0.5, 1.0, 2.0]


def test_bridge_marginal_variance():
    g = torch.Generator().manual_seed(0)
    n, s = 200_000, 0.7
    for t in (0.2, 0.5, 0.9):
        x = brownian_bridge(torch.zeros(n, 1), torch.ones(n, 1), torch.full((n,), t), s, generator=g)
        assert abs(x.mean().item() - t) < 0.01
        assert abs(x.var().item() / (s**2 * t * (1 - t)) - 1) < 0.02


def test_star_root_conditional_is_laplacian_formula():
    sigma = 0.4
    tree = star_tree(LAM, sigma)
    B, C = tree.conditional()
    np.testing.assert_allclose(B, [LAM], atol=1e-12)  # Y_0 | Y_leaves ~ N(Σ λ_i y_i, σ²)
    np.testing.assert_allclose(C, [[sigma**2]], atol=1e-12)
    # Schur complement = (diag λ − λλᵀ)/σ²: the pairwise cost Σ_{i<j} λ_iλ_j ‖x_i − x_j‖².
    lam = np.array(LAM)
    np.testing.assert_allclose(tree.observed_precision(), (np.diag(lam) - np.outer(lam, lam)) / sigma**2, atol=1e-10)


def test_path_tree_conditional():
    # 0 — 1 — 2 with the middle unobserved: Brownian bridge at time T_a/(T_a+T_b).
    tree = Tree(3, [(0, 1), (1, 2)], [1.0, 3.0], [0, 2], sigma=0.5)
    B, C = tree.conditional()
    np.testing.assert_allclose(B, [[0.75, 0.25]], atol=1e-12)
    np.testing.assert_allclose(C, [[0.25 * 1 * 3 / 4]], atol=1e-12)


def test_single_edge_is_ordinary_bridge_matching():
    # Single edge, both ends observed: the loss regresses exactly the DSBM bridge target.
    tree = Tree(2, [(0, 1)], [1.0], [0, 1], sigma=0.3)
    assert tree.edge_sigma() == [0.3]
    m = TreeBridgeMatching(2, tree.edges, tree.lengths, tree.observed, 0.3, dim=2, hidden=(16,))
    y = torch.randn(64, 2, 2)
    torch.manual_seed(1)
    loss = m.loss(y)
    torch.manual_seed(1)
    t = torch.rand(2, 64) * 0.99
    x0 = torch.stack([y[:, 0], y[:, 1]])  # network 0: 0 → 1, network 1: 1 → 0
    x1 = torch.stack([y[:, 1], y[:, 0]])
    xt = brownian_bridge(x0.reshape(-1, 2), x1.reshape(-1, 2), t.reshape(-1), 0.3).reshape(2, 64, 2)
    pred = m.net(xt, t)
    ref = ((pred - (x1 - xt) / (1 - t[..., None])) ** 2).sum(-1).mean()
    assert torch.allclose(loss, ref, atol=1e-6)


def test_entropic_barycentre_matches_grid_sinkhorn():
    sigma = 0.5
    m, C = gaussian_tree_sb(star_tree(LAM, sigma), MEANS, [[[v]] for v in VARS])
    grid = np.linspace(-5, 8, 50)
    marg = [norm.pdf(grid, mu[0], np.sqrt(v)) for mu, v in zip(MEANS, VARS)]
    P = grid_multimarginal_sinkhorn(grid, marg, LAM, sigma)
    P = P / P.sum()
    X = np.stack(np.meshgrid(grid, grid, grid, indexing="ij"))
    s = sum(lam * X[i] for i, lam in enumerate(LAM))
    mu = (P * s).sum()
    var = (P * (s - mu) ** 2).sum() + sigma**2
    assert abs(mu - m[0]) < 1e-3
    assert abs(var - C[0, 0]) < 2e-3
    np.testing.assert_allclose(np.diag(C)[1:], VARS, rtol=1e-8)


def test_entropic_barycentre_tends_to_fixed_point():
    covs = [np.diag([1.0, 0.5]), np.array([[2.0, 0.5], [0.5, 1.0]]), np.diag([0.3, 1.5])]
    S = gaussian_fixed_point_barycenter(covs, LAM)
    # fixed point equation holds
    R = np.linalg.cholesky(S)
    assert np.allclose(S, S.T) and np.all(np.diag(R) > 0)
    errs = []
    for sigma in (0.5, 0.1, 0.02):
        _, C = gaussian_tree_sb(star_tree(LAM, sigma), [np.zeros(2)] * 3, covs)
        errs.append(bw2(np.zeros(2), C[:2, :2], np.zeros(2), S))
    assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-3


def test_fixed_point_1d_closed_form():
    S = gaussian_fixed_point_barycenter([[[v]] for v in VARS], LAM)
    assert abs(S[0, 0] - sum(lam * np.sqrt(v) for lam, v in zip(LAM, VARS)) ** 2) < 1e-10


def test_bw2_uvp_zero_for_exact_moments():
    x = torch.randn(50_000, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert bw2_uvp(x, np.zeros(2), np.eye(2)) < 0.2
    assert bw2(np.ones(2), np.eye(2), np.ones(2), np.eye(2)) == pytest.approx(0, abs=1e-10)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(n_vertices=3, edges=[(0, 1), (1, 2), (2, 0)], lengths=[1, 1, 1], observed=[0]), "edges"),
        (dict(n_vertices=4, edges=[(0, 1), (1, 0), (2, 3)], lengths=[1, 1, 1], observed=[0]), "connect"),
        (dict(n_vertices=3, edges=[(0, 1), (1, 5)], lengths=[1, 1], observed=[0]), "unknown vertex"),
        (dict(n_vertices=3, edges=[(0, 1), (1, 2)], lengths=[1, 0], observed=[0]), "lengths"),
        (dict(n_vertices=3, edges=[(0, 1), (1, 2)], lengths=[1, -2], observed=[0]), "lengths"),
        (dict(n_vertices=3, edges=[(0, 1), (1, 2)], lengths=[1, 1], observed=[7]), "observed"),
        (dict(n_vertices=3, edges=[(0, 1), (1, 2)], lengths=[1, 1], observed=[0], sigma=0), "sigma"),
    ],
)
def test_invalid_trees(kw, match):
    with pytest.raises(ValueError, match=match):
        Tree(**kw)


def test_invalid_inputs():
    with pytest.raises(ValueError, match="weights"):
        star_tree([0.5, 0.6], 0.1)
    with pytest.raises(ValueError, match="covs"):
        gaussian_fixed_point_barycenter([np.eye(2), -np.eye(2)], [0.5, 0.5])
    with pytest.raises(ValueError, match="y_obs"):
        star_tree([0.5, 0.5], 0.1).sample_unobserved(torch.zeros(4, 3, 2))


def test_traversal_leaf_root_leaves():
    tree = star_tree([0.5, 0.5], 0.1)
    assert [(u, v) for u, v, _ in tree.traversal(2)] == [(2, 0), (0, 1)]
    codes = [c for *_, c in tree.traversal(2)]
    assert codes == [3, 0]  # edge 1 backwards (leaf→root), edge 0 forwards (root→leaf)


def _two_leaf_star(n):
    """A two-leaf star with 1-d Gaussians at -1 and +1 (n samples each): the smoke tests' problem."""
    seed_everything(0)
    return star_tree([0.5, 0.5], 0.3), [torch.randn(n, 1) - 1, torch.randn(n, 1) + 1]


def test_tree_dsbm_smoke(any_device):
    tree, data = _two_leaf_star(256)
    seen = []
    model = tree_dsbm(tree, data, n_iter=2, steps=5, batch_size=64, hidden=(16,), n_steps=5,
                      callback=lambda it, m: seen.append((it, m.device.type)), device=any_device)
    assert seen == [(1, any_device.type), (2, any_device.type)]
    Y = simulate_tree(model, 1, data[0], n_steps=5)  # runs on the model's device
    assert Y.device.type == any_device.type
    assert Y.shape == (256, 3, 1) and torch.isfinite(Y).all()
    assert torch.equal(Y[:, 1].cpu(), data[0])


def test_edge_drifts_are_separate_networks():
    from neurips25.tree_sb.matching import EdgeDrifts

    torch.manual_seed(0)
    net = EdgeDrifts(4, dim=3, hidden=(8, 8))
    x, t = torch.randn(4, 5, 3), torch.rand(4, 5)
    out = net(x, t)
    assert out.shape == (4, 5, 3)
    for c in range(4):  # network c only sees its own weights
        assert torch.allclose(net.drift(x[c], t[c], c), out[c], atol=1e-6)
    with torch.no_grad():
        for W in net.W:
            W[2].add_(1.0)
    out2 = net(x, t)
    assert torch.allclose(out2[[0, 1, 3]], out[[0, 1, 3]]) and not torch.allclose(out2[2], out[2])
    with pytest.raises(ValueError, match="x must have shape"):
        net(torch.randn(3, 5, 3), torch.rand(3, 5))


def test_ema_tracks_weights():
    tree = star_tree([0.5, 0.5], 0.3)
    m = TreeBridgeMatching(3, tree.edges, tree.lengths, tree.observed, 0.3, dim=1, hidden=(8,), ema_decay=0.5)
    with torch.no_grad():
        for p in m.net.parameters():
            p.add_(1.0)
    before = [p.clone() for p in m.ema.parameters()]
    m.on_train_batch_end(None, None, 0)
    for pe, p, b in zip(m.ema.parameters(), m.net.parameters(), before):
        assert torch.allclose(pe, 0.5 * b + 0.5 * p)
    with pytest.raises(ValueError, match="ema_decay"):
        TreeBridgeMatching(3, tree.edges, tree.lengths, tree.observed, 0.3, dim=1, ema_decay=1.0)


def test_sweep_and_ablation_settings_are_valid():
    import inspect

    from neurips25.tree_sb.experiment import ABLATION, CONFIGS, SWEEP, run_gaussian

    params = set(inspect.signature(run_gaussian).parameters)
    for cfg in SWEEP.values():
        assert set(cfg["configs"]) <= set(CONFIGS)
        assert set(cfg) - {"configs", "seeds"} <= params
    assert set(ABLATION["configs"]) <= set(CONFIGS)
    for change in ABLATION["variants"].values():
        assert set({**ABLATION["base"], **change}) <= params


def test_run_ablation_smoke(any_device):
    from neurips25.tree_sb.experiment import run_ablation

    tiny = dict(configs=["star_d2_equal"], seed=0,
                base=dict(n_iter=1, steps=2, n=64, batch_size=32, hidden=[8], lr=5e-3, ema_decay=0.99),
                variants={"base": {}, "EMA 0.9": dict(ema_decay=0.9)})
    out = run_ablation(device=any_device, ablation=tiny)
    assert list(out) == ["star_d2_equal"] and list(out["star_d2_equal"]) == ["base", "EMA 0.9"]
    r = out["star_d2_equal"]["EMA 0.9"]
    assert len(r["uvp"]) == 1 and np.isfinite(r["uvp"][0]).all()


# --- TreeDSB (tree IPF), the paper's baseline ---------------------------------------------------

def test_exact_ipf_converges_to_tree_sb():
    from neurips25.tree_sb import gaussian_tree_ipf
    from neurips25.tree_sb.experiment import h_tree

    for tree, means, covs in [
        (star_tree(LAM, 0.5), MEANS, [[[v]] for v in VARS]),
        (h_tree(0.7), [[-1.0], [0.0], [1.0], [2.0]], [[[0.5]], [[1.0]], [[1.5]], [[0.8]]]),
    ]:
        laws = gaussian_tree_ipf(tree, means, covs, n_iter=300)
        assert len(laws) == 300 * len(tree.observed)
        mV, CV = gaussian_tree_sb(tree, means, covs)
        U = tree.unobserved
        m_U, C_U = mV[U], CV[np.ix_(U, U)]
        assert np.allclose(laws[-1][0], m_U, atol=1e-6) and np.allclose(laws[-1][1], C_U, atol=1e-6)
        # the first half-bridges (from the reference Q) are far from it: IPF needs iterations
        assert not np.allclose(laws[0][1], C_U, atol=1e-2)
    with pytest.raises(ValueError, match="n_iter"):
        gaussian_tree_ipf(star_tree(LAM, 0.5), MEANS, [[[v]] for v in VARS], n_iter=0)
    with pytest.raises(ValueError, match="means and covs"):
        gaussian_tree_ipf(star_tree(LAM, 0.5), MEANS[:2], [[[v]] for v in VARS[:2]], n_iter=1)


def test_path_codes_reverse_the_path():
    from neurips25.tree_sb.experiment import h_tree
    from neurips25.tree_sb.matching import _path_codes

    star = star_tree([1 / 3] * 3, 0.2)
    assert _path_codes(star, 1, 2) == [1, 2]  # leaf 1 → root (edge 0 reversed), root → leaf 2 (edge 1)
    h = h_tree(0.2)  # edges (0,1), (0,2), (0,3), (1,4), (1,5)
    assert _path_codes(h, 2, 4) == [3, 0, 6]


def test_half_bridge_starts_at_reference_and_checks_batch():
    from neurips25.tree_sb import TreeHalfBridge

    tree = star_tree([0.5, 0.5], 0.3)
    m = TreeHalfBridge(3, tree.edges, tree.lengths, tree.observed, 0.3, dim=2, hidden=(8,))
    x, t = torch.randn(10, 2), torch.rand(10)
    for code in range(4):  # zero drift everywhere: the process is Q
        assert torch.equal(m.drift(x, t, code), torch.zeros(10, 2))
    m.train_codes = [1, 2]
    batch = (torch.randn(6, 2, 2), torch.rand(6, 2), torch.randn(6, 2, 2))
    assert torch.isfinite(m.loss(batch))
    with pytest.raises(ValueError, match="train_codes"):
        m.loss((torch.randn(6, 3, 2), torch.rand(6, 3), torch.randn(6, 3, 2)))


def test_tree_dsb_smoke(any_device):
    from neurips25.tree_sb import tree_dsb

    tree, data = _two_leaf_star(128)
    seen = []
    model = tree_dsb(tree, data, n_iter=2, steps=3, batch_size=32, hidden=(16,), n_steps=4,
                     callback=lambda h, m, s: seen.append((h, s, m.device.type)), device=any_device)
    assert seen == [(h, s, any_device.type) for h, s in [(1, 2), (2, 1), (3, 2), (4, 1)]]
    Y = simulate_tree(model, 1, data[0], n_steps=4, noise_last=True)
    assert Y.device.type == any_device.type and torch.isfinite(Y).all()
    with pytest.raises(ValueError, match="n_iter"):
        tree_dsb(tree, data, n_iter=0)
    with pytest.raises(ValueError, match="data"):
        tree_dsb(tree, data[:1])


def test_run_gaussian_treedsb(any_device):
    from neurips25.tree_sb.experiment import SWEEP_TREEDSB, run_config, run_gaussian

    r = run_config("star_d2_equal", 0, n=64, n_iter=1, steps=2, batch_size=32, hidden=(8,), n_steps=4,
                   method="treedsb", device=any_device)
    assert len(r["uvp_half"]) == len(r["uvp_exact_ipf"]) == 3 and len(r["uvp"]) == 1
    assert r["start_half"] == [2, 3, 1] and r["uvp"][0] == r["uvp_half"][-1]
    with pytest.raises(ValueError, match="method"):
        run_gaussian(star_tree([0.5, 0.5], 0.3), [[0.0], [1.0]], [[[1.0]], [[1.0]]], method="ipf")
    import inspect

    params = set(inspect.signature(run_gaussian).parameters)
    for cfg in SWEEP_TREEDSB.values():
        assert set(cfg) - {"configs", "seeds"} <= params


@pytest.mark.parametrize("sigma", [True, float("inf"), float("nan"), -0.1])
def test_tree_rejects_bad_sigma(sigma):
    with pytest.raises(ValueError, match="sigma"):
        Tree(3, [(0, 1), (1, 2)], [1, 1], [0], sigma=sigma)


def test_audit_input_checks():
    from neurips25.tree_sb import gaussian_tree_ipf

    with pytest.raises(ValueError, match="weights"):  # not "lengths": the bad input is the weight
        star_tree([np.nan, 0.5, 0.5], 0.1)
    x = torch.zeros(2, 1)
    with pytest.raises(ValueError, match="t must lie in"):
        brownian_bridge(x, x + 1, torch.tensor([0.5, 2.0]), 0.5)
    with pytest.raises(ValueError, match="sigma_e"):
        brownian_bridge(x, x + 1, torch.tensor([0.5, 0.5]), float("nan"))
    tree = star_tree(LAM, 0.5)
    bad_means = [np.array([np.nan]), np.zeros(1), np.zeros(1)]
    covs = [[[v]] for v in VARS]
    with pytest.raises(ValueError, match="means must be finite"):
        gaussian_tree_sb(tree, bad_means, covs)
    with pytest.raises(ValueError, match="means must be finite"):
        gaussian_tree_ipf(tree, bad_means, covs, 1)
    with pytest.raises(ValueError, match="n_iter"):
        gaussian_tree_ipf(tree, MEANS, covs, True)
    grid = np.linspace(-1.0, 1.0, 5)
    ok = np.ones(5)
    with pytest.raises(ValueError, match="marginals must be non-negative"):
        grid_multimarginal_sinkhorn(grid, [np.array([1, -1, 1, 1, 1.0]), ok], [0.5, 0.5], 0.5)
    with pytest.raises(ValueError, match="marginals must be non-negative"):
        grid_multimarginal_sinkhorn(grid, [np.full(5, np.nan), ok], [0.5, 0.5], 0.5)
    with pytest.raises(ValueError, match="marginals must be non-negative"):
        grid_multimarginal_sinkhorn(grid, [np.ones(4), ok], [0.5, 0.5], 0.5)
    with pytest.raises(ValueError, match="sigma"):
        grid_multimarginal_sinkhorn(grid, [ok, ok], [0.5, 0.5], 0.0)
    with pytest.raises(ValueError, match="grid"):
        grid_multimarginal_sinkhorn(np.array([0.0, np.inf]), [np.ones(2), np.ones(2)], [0.5, 0.5], 0.5)
