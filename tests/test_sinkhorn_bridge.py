import math

import numpy as np
import pytest
import torch

from neurips25.data import random_spd
from neurips25.sinkhorn_bridge import (
    BridgeMatching,
    GaussianSB,
    SinkhornBridge,
    coupling_pairs,
    euler_maruyama,
    integrated_drift_error,
    sinkhorn_coupling,
    sinkhorn_divergence,
    sinkhorn_drift,
    sinkhorn_potentials,
)


def _gauss(n, d=3, seed=0, B=None):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    Y = torch.randn(n, d, generator=g, dtype=torch.float64)
    if B is not None:
        Y = Y @ torch.linalg.cholesky(B).T
    return X, Y


def test_single_target_point_is_brownian_bridge():
    Y = torch.tensor([[1.0, -2.0]], dtype=torch.float64)
    z = torch.randn(7, 2, dtype=torch.float64)
    for t in (0.0, 0.3, 0.9):
        b = sinkhorn_drift(z, t, Y, torch.zeros(1, dtype=torch.float64), eps=0.1)
        assert torch.allclose(b, (Y - z) / (1 - t))


def test_gaussian_closed_form_first_order_condition():
    S0, S1, eps = random_spd(3, seed=1), random_spd(3, seed=2), 0.3
    sb = GaussianSB(S0, S1, eps)
    C, S0inv_C = sb.C, torch.linalg.solve(S0, sb.C)
    assert torch.allclose(eps * S0inv_C, S1 - C.T @ S0inv_C, atol=1e-10)
    assert torch.allclose(sb.cov(0.0), S0) and torch.allclose(sb.cov(1.0), S1)
    # 1-d closed form: c = (sqrt(4ab + eps^2) - eps)/2
    sb1 = GaussianSB(torch.tensor([[2.0]]), torch.tensor([[0.5]]), eps)
    assert math.isclose(sb1.C.item(), (math.sqrt(4 * 1.0 + eps**2) - eps) / 2, rel_tol=1e-12)


def test_gaussian_closed_form_vs_monte_carlo_sde():
    sb = GaussianSB(random_spd(2, seed=3), random_spd(2, seed=4), 0.2)
    x0 = sb.sample(0.0, 20_000, seed=1)
    xt = euler_maruyama(sb.drift, x0, sb.eps, tau=0.6, n_steps=120, seed=2)
    assert torch.allclose(torch.cov(xt.T), sb.cov(0.6), atol=0.06)
    assert torch.allclose(xt.mean(0), sb.mean(0.6), atol=0.03)


def test_sinkhorn_cross_covariance_close_to_closed_form():
    B = random_spd(2, seed=0, eig_range=(0.5, 1.5))
    sb = GaussianSB(torch.eye(2, dtype=torch.float64), B, 0.5)
    X, Y = _gauss(600, d=2, B=B)
    f, g = sinkhorn_potentials(X, Y, 0.5)
    P = sinkhorn_coupling(X, Y, f, g, 0.5)
    Cn = (X - X.mean(0)).T @ P @ (Y - Y.mean(0))
    assert (Cn - sb.C).abs().max() < 0.12


def test_sinkhorn_marginals_and_pot_agreement():
    import ot

    X, Y = _gauss(80, d=2, seed=1)
    f, g = sinkhorn_potentials(X, Y, 0.2, tol=1e-10)
    P = sinkhorn_coupling(X, Y, f, g, 0.2)
    assert torch.allclose(P.sum(1), torch.full((80,), 1 / 80, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(P.sum(0), torch.full((80,), 1 / 80, dtype=torch.float64), atol=1e-8)
    M = ot.dist(X.numpy(), Y.numpy()) / 2
    Pp = ot.sinkhorn(np.full(80, 1 / 80), np.full(80, 1 / 80), M, 0.2, method="sinkhorn_log", stopThr=1e-12,
                     numItermax=20_000)
    assert np.abs(P.numpy() - Pp).max() < 1e-8


def test_k_iterations_record_and_mu_marginal_exact():
    X, Y = _gauss(40, d=2, seed=2)
    f, g, hist = sinkhorn_potentials(X, Y, 0.1, 5, record=(0, 1, 5))
    assert set(hist) == {0, 1, 5} and torch.equal(hist[5], g) and torch.all(hist[0] == 0)
    P = sinkhorn_coupling(X, Y, f, g, 0.1)
    assert torch.allclose(P.sum(1), torch.full((40,), 1 / 40, dtype=torch.float64), atol=1e-12)


def test_shift_invariance_of_potentials_and_drift():
    X, Y = _gauss(30, d=2, seed=3)
    f, g = sinkhorn_potentials(X, Y, 0.3)
    assert torch.allclose(sinkhorn_coupling(X, Y, f + 1.7, g - 1.7, 0.3), sinkhorn_coupling(X, Y, f, g, 0.3))
    z = torch.randn(5, 2, dtype=torch.float64)
    assert torch.allclose(sinkhorn_drift(z, 0.4, Y, g + 3.0, 0.3), sinkhorn_drift(z, 0.4, Y, g, 0.3))


def test_batched_sinkhorn_matches_single():
    X, Y = _gauss(25, d=2, seed=4)
    X2, Y2 = _gauss(25, d=2, seed=5)
    _, gb = sinkhorn_potentials(torch.stack([X, X2]), torch.stack([Y, Y2]), 0.2, 7)
    _, g1 = sinkhorn_potentials(X2, Y2, 0.2, 7)
    assert torch.allclose(gb[1], g1)


def test_drift_error_decreases_with_n():
    B = random_spd(3, seed=0, eig_range=(0.25, 2.0))
    sb = GaussianSB(torch.eye(3, dtype=torch.float64), B, 0.25)
    errs = []
    for n in (50, 400):
        X, Y = _gauss(n, B=B, seed=7)
        errs.append(integrated_drift_error(SinkhornBridge.fit(X, Y, 0.25).drift, sb, 0.9, 6, 400).item())
    assert errs[1] < 0.5 * errs[0]


def test_bad_inputs_raise():
    X, Y = _gauss(10, d=2)
    with pytest.raises(ValueError, match="eps"):
        sinkhorn_potentials(X, Y, 0.0)
    with pytest.raises(ValueError, match="eps"):
        sinkhorn_potentials(X, Y, -1.0)
    with pytest.raises(ValueError, match="t must lie in"):
        sinkhorn_drift(X, 1.0, Y, torch.zeros(10, dtype=torch.float64), 0.1)
    with pytest.raises(ValueError, match="same dimension"):
        sinkhorn_potentials(X, torch.randn(10, 3, dtype=torch.float64), 0.1)
    with pytest.raises(ValueError, match="g must have shape"):
        sinkhorn_drift(X, 0.5, Y, torch.zeros(9, dtype=torch.float64), 0.1)
    with pytest.raises(ValueError, match="n_iter"):
        sinkhorn_potentials(X, Y, 0.1, -2)
    with pytest.raises(TypeError, match="X must be a torch.Tensor"):
        sinkhorn_potentials(X.numpy(), Y, 0.1)
    with pytest.raises(ValueError, match="Sigma1 must be symmetric positive definite"):
        GaussianSB(torch.eye(2), -torch.eye(2), 0.1)
    with pytest.raises(ValueError, match="tau"):
        euler_maruyama(lambda x, t: x, X, 0.1, tau=1.0)


def test_sinkhorn_divergence_zero_on_same_sample_and_positive_otherwise():
    X, Y = _gauss(60, d=2, seed=8)
    assert abs(sinkhorn_divergence(X, X)) < 1e-8
    assert sinkhorn_divergence(X, Y + 3.0) > 1.0


def test_bridge_matching_smoke_training():
    from torch.utils.data import DataLoader, TensorDataset

    from neurips25.runtime import make_trainer, seed_everything

    seed_everything(0)
    X, Y = _gauss(64, d=2, seed=9)
    X, Y = X.float(), Y.float()
    f, g = sinkhorn_potentials(X, Y, 0.5, 3)
    x0, x1 = coupling_pairs(X, Y, sinkhorn_coupling(X, Y, f, g, 0.5), 512, seed=0)
    model = BridgeMatching(dim=2, eps=0.5, hidden=(16, 16))
    loader = DataLoader(TensorDataset(x0, x1), batch_size=64, shuffle=True,
                        generator=torch.Generator().manual_seed(0))
    make_trainer(2).fit(model, loader)
    out = euler_maruyama(model, X[:10], 0.5, tau=0.9, n_steps=10, predict_endpoint=True)
    assert out.shape == (10, 2) and torch.isfinite(out).all()


@pytest.mark.parametrize("kwargs, match", [
    (dict(ns=[20], trials=0), "trials must be a positive int"),
    (dict(ns=[20], trials=1.5), "trials must be a positive int"),
    (dict(ns=[], trials=2), "ns must be a non-empty sequence"),
    (dict(ns=[1], trials=2), "ns must hold ints >= 2"),
    (dict(ns=[20, 30], trials=2, ms=[20]), "ms and ns must have the same length"),
    (dict(ns=[20], trials=2, eps=0.0), "eps"),
])
def test_statistical_sweep_validates_its_arguments(kwargs, match):
    from neurips25.sinkhorn_bridge import statistical_sweep

    with pytest.raises(ValueError, match=match):
        statistical_sweep(**kwargs)


def test_statistical_sweep_two_sample_sizes(any_device):
    from neurips25.sinkhorn_bridge import statistical_sweep

    out = statistical_sweep([40, 40], trials=2, ms=[10, 40], n_t=3, n_mc=200, device=any_device)
    assert out["m"] == [10, 40] and out["n"] == [40, 40]
    err = np.array(out["err"])
    assert err.shape == (2, 2) and np.isfinite(err).all()
    assert err[0].mean() > err[1].mean()  # fewer source samples, larger error
    # m = n keeps the seeding of the m = n sweep (the stored results stay reproducible)
    same = statistical_sweep([40], trials=2, n_t=3, n_mc=200)
    assert np.allclose(same["err"][0], err[1])


def test_integrated_drift_error_on_device(any_device):
    B = random_spd(2, seed=1, eig_range=(0.25, 2.0))
    sb = GaussianSB(torch.eye(2, dtype=torch.float64), B, 0.25)
    X, Y = _gauss(60, d=2, B=B, seed=3)
    bridge = SinkhornBridge.fit(X.to(any_device), Y.to(any_device), 0.25)
    assert bridge.g.device.type == any_device.type
    err = integrated_drift_error(bridge.drift, sb, 0.9, 3, 100, device=any_device)
    ref = integrated_drift_error(SinkhornBridge.fit(X, Y, 0.25).drift, sb, 0.9, 3, 100)
    assert err.device.type == any_device.type
    assert err.item() == pytest.approx(ref.item(), rel=1e-6)


def test_neural_k_sweep_runs_on_device(any_device):
    from neurips25.sinkhorn_bridge import neural_k_sweep

    out = neural_k_sweep(ks=(1,), n=64, n_eval=32, steps=2, batch=16, hidden=(8,), independent=False,
                         keep_samples=True, device=any_device)
    assert out["k"] == [1] and np.isfinite(out["S_neural"] + out["S_plugin"] + out["tv_marginal"]).all()
    assert out["samples"][1].shape == (32, 2)


def test_neural_k_sweep_fresh_sources_leave_the_training_source_scores_unchanged():
    from neurips25.sinkhorn_bridge import neural_k_sweep

    kw = dict(ks=(1, None), n=64, n_eval=32, steps=3, batch=16, hidden=(8,))
    plain, fresh = neural_k_sweep(**kw), neural_k_sweep(**kw, fresh=True)
    assert "S_neural_fresh" not in plain
    for key in ("S_neural", "S_plugin", "S_independent", "tv_marginal"):
        assert fresh[key] == plain[key]
    assert len(fresh["S_neural_fresh"]) == len(fresh["S_plugin_fresh"]) == 2
    assert np.isfinite(fresh["S_neural_fresh"] + fresh["S_plugin_fresh"]).all()
    assert fresh["S_independent_fresh"] >= 0 and fresh["S_neural_fresh"] != fresh["S_neural"]
    # the plug-in sweep alone repeats the plug-in scores of the full sweep, without training
    from neurips25.sinkhorn_bridge import plugin_k_sweep

    plug = plugin_k_sweep(ks=(1, None), n=64, n_eval=32)
    assert plug["k"] == [1, None] and plug["S_plugin_fresh"] == fresh["S_plugin_fresh"]


def test_plugin_k_sweep_validates_and_runs_as_a_sweep_part(monkeypatch):
    from neurips25.sinkhorn_bridge import SWEEP, plugin_k_sweep, run_part

    with pytest.raises(ValueError, match="n_eval must lie in"):
        plugin_k_sweep(n=64, n_eval=100)
    with pytest.raises(ValueError, match="eps"):
        plugin_k_sweep(eps=0.0)
    assert 0 not in SWEEP["small"]["plugin_fresh"]["seeds"]  # fresh seeds only
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")  # one seed, n capped at 256
    res = run_part("plugin", {"seeds": [7, 8], "ns": [64, 128]}, name="plugin_fresh")
    assert [(r["seed"], r["n"]) for r in res["runs"]] == [(7, 64), (7, 128)]
    assert res["command"].endswith("--part plugin_fresh --seeds 7 --ns 64 128")


def test_neural_k_sweep_validates_its_arguments():
    from neurips25.sinkhorn_bridge import neural_k_sweep

    with pytest.raises(ValueError, match="steps must be a positive int"):
        neural_k_sweep(steps=0)
    with pytest.raises(ValueError, match="n_eval must lie in"):
        neural_k_sweep(n=64, n_eval=100)
    with pytest.raises(ValueError, match="eps"):
        neural_k_sweep(eps=-0.1)


def test_effective_targets_counts_the_averaged_targets():
    from neurips25.sinkhorn_bridge import effective_targets

    X, Y = _gauss(40, d=2, seed=11)
    bridge = SinkhornBridge.fit(X, Y, 0.25)
    z = X[:20]
    ess = [bridge.effective_targets(z, t) for t in (0.0, 0.5, 0.95)]
    assert all(e.shape == (20,) and (e >= 1 - 1e-9).all() and (e <= 40 + 1e-9).all() for e in ess)
    assert ess[0].median() > ess[1].median() > ess[2].median()  # the kernel narrows as t -> 1
    # identical targets with equal potentials: the softmax is uniform, all n count
    same = effective_targets(z, 0.3, torch.zeros(7, 2, dtype=torch.float64),
                             torch.zeros(7, dtype=torch.float64), 0.25)
    assert torch.allclose(same, torch.full((20,), 7.0, dtype=torch.float64))
    with pytest.raises(ValueError, match="g must have shape"):
        effective_targets(z, 0.3, Y, torch.zeros(3, dtype=torch.float64), 0.25)


def test_per_node_terms_sum_to_the_integral():
    from neurips25.sinkhorn_bridge import gauss_legendre_times, statistical_sweep

    B = random_spd(2, seed=1, eig_range=(0.25, 2.0))
    sb = GaussianSB(torch.eye(2, dtype=torch.float64), B, 0.25)
    X, Y = _gauss(50, d=2, B=B, seed=3)
    drift = SinkhornBridge.fit(X, Y, 0.25).drift
    terms = integrated_drift_error(drift, sb, 0.9, 5, 200, per_node=True)
    assert terms.shape == (5,) and (terms >= 0).all()
    assert terms.sum().item() == pytest.approx(integrated_drift_error(drift, sb, 0.9, 5, 200).item())
    t = gauss_legendre_times(0.9, 5)
    assert len(t) == 5 and 0 < t[0] < t[-1] < 0.9
    plain = statistical_sweep([30, 60], trials=2, ms=[60, 60], n_t=4, n_mc=150)
    split = statistical_sweep([30, 60], trials=2, ms=[60, 60], n_t=4, n_mc=150, per_t=True)
    assert split["err"] == plain["err"]  # the totals do not change
    assert np.allclose(np.array(split["err_t"]).sum(-1), split["err"]) and len(split["t"]) == 4


def test_audit_input_checks():
    from neurips25.sinkhorn_bridge import bridge_matching_loss

    X, Y = _gauss(10, d=2)
    v = lambda x, t: x
    for tau in (1.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="tau"):
            bridge_matching_loss(v, X, Y, 0.1, tau)
    for eps in (-0.1, 0.0, float("nan")):
        with pytest.raises(ValueError, match="eps"):
            bridge_matching_loss(v, X, Y, eps, 0.5)
    assert torch.isfinite(bridge_matching_loss(v, X, Y, 0.1, 0.0))  # tau = 0: t = 0, still finite
    g_nan = torch.zeros(10, dtype=torch.float64)
    g_nan[3] = float("nan")
    with pytest.raises(ValueError, match="g must be finite"):
        sinkhorn_drift(X, 0.3, Y, g_nan, 0.1)
    with pytest.raises(ValueError, match="g must be finite"):
        SinkhornBridge(Y, g_nan, 0.1).effective_targets(X, 0.3)
    for max_iter in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="max_iter"):
            sinkhorn_potentials(X, Y, 0.1, max_iter=max_iter)
    with pytest.raises(ValueError, match="n_steps"):
        euler_maruyama(lambda x, t: x, X, 0.1, n_steps=True)
