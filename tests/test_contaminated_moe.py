"""Tests for neurips25.contaminated_moe (softmax-contaminated MoE, Yan et al., NeurIPS 2025)."""
import math

import numpy as np
import pytest
import torch

from neurips25 import contaminated_moe as cm


def _setting(name="distinguishable", n=1000):
    return cm.paper_setting(name, n, d=8)


@pytest.mark.parametrize("name", cm.SETTINGS)
def test_density_integrates_to_one(name):
    expert, theta = _setting(name)
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    yg = torch.linspace(-2, 2, 40_001, dtype=torch.float64)
    logp = cm.log_density(yg.expand(5, -1), x[:, None, :].expand(5, len(yg), 8), theta, expert)
    mass = torch.trapezoid(logp.exp(), yg, dim=-1)
    assert torch.allclose(mass, torch.ones(5, dtype=torch.float64), atol=1e-6)


@pytest.mark.parametrize("family", cm.FAMILIES)
def test_sampler_matches_density_moments(family):
    expert, theta = cm.paper_setting("nondist_eta", 1000, f0_family=family)
    x, y = cm.sample(100_000, theta, expert, torch.Generator().manual_seed(1))
    g = cm.unpack(theta)
    w = torch.sigmoid(x @ g["beta"] + g["tau"])
    m0, m1 = expert.mean(x), torch.tanh(x @ g["eta"])
    mean = (1 - w) * m0 + w * m1  # E[Y|X] and E[Y²|X] of eq. (1)
    second = (1 - w) * (m0 ** 2 + expert.nu0) + w * (m1 ** 2 + g["nu"])
    assert abs((y - mean).mean()) < 4 * math.sqrt(g["nu"].item() + 0.05) / math.sqrt(1e5)
    assert abs((y ** 2 - second).mean()) < 5e-3
    # the gate: the fraction of draws near the prompt's curve matches E[w]
    near_prompt = ((y - m1).abs() < 0.1) & ((y - m0).abs() > 0.3)
    expected = (w * ((m1 - m0).abs() > 0.3)).mean()
    assert abs(near_prompt.double().mean() - expected) < 0.01


def test_local_derivatives_match_autograd_and_finite_differences():
    expert, theta = _setting("distinguishable")
    gen = torch.Generator().manual_seed(2)
    x, y = cm.sample(60, theta.expand(2, -1), expert, gen)
    th = theta + 0.1 * torch.randn(2, theta.numel(), generator=gen, dtype=torch.float64)
    loss, grad, hess = cm.nll_grad_hess(th, x, y, expert)

    def f(t):
        return cm.neg_log_likelihood(t, x[0], y[0], expert)

    assert torch.allclose(loss[0], f(th[0]))
    gf = torch.func.grad(f)
    assert torch.allclose(grad[0], gf(th[0]), atol=1e-10)
    eps = 1e-6
    fd = torch.stack([(gf(th[0] + eps * e) - gf(th[0] - eps * e)) / (2 * eps)
                      for e in torch.eye(th.shape[1], dtype=torch.float64)])
    assert torch.allclose(hess[0], fd, rtol=1e-5, atol=1e-4)
    assert torch.allclose(hess, hess.transpose(-1, -2))


def test_blocked_sums_match_one_pass(monkeypatch):
    """nll_grad_hess sums over blocks of samples; the result does not depend on the block size."""
    from neurips25.contaminated_moe import mle

    expert, theta = _setting("nondist_eta")
    gen = torch.Generator().manual_seed(5)
    x, y = cm.sample(500, theta.expand(3, -1), expert, gen)
    th = theta + 0.05 * torch.randn(3, theta.numel(), generator=gen, dtype=torch.float64)
    one = cm.nll_grad_hess(th, x, y, expert)
    monkeypatch.setattr(mle, "BLOCK", 37)  # 14 blocks, the last one short
    for a, b in zip(one, cm.nll_grad_hess(th, x, y, expert)):
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-12)


def test_paper_setting_gate_and_delta_scale():
    """β* = 0 for the constant gate; Δ = c·n^{-1/8}; bad options raise."""
    n = 10_000
    _, paper = cm.paper_setting("nondist_eta", n)
    _, const = cm.paper_setting("nondist_eta", n, gate="constant", delta_scale=0.3)
    gp, gc = cm.unpack(paper), cm.unpack(const)
    assert torch.allclose(gp["beta"], torch.full((8,), 8 ** -0.5, dtype=torch.float64))
    assert torch.equal(gc["beta"], torch.zeros(8, dtype=torch.float64))
    assert math.isclose(gp["eta"][0].item() - 1, n ** -0.125)
    assert math.isclose(gc["eta"][0].item() - 1, 0.3 * n ** -0.125)
    assert torch.equal(gp["tau"], gc["tau"]) and torch.equal(gp["nu"], gc["nu"])
    with pytest.raises(ValueError, match="gate"):
        cm.paper_setting("nondist_eta", n, gate="softmax")
    with pytest.raises(ValueError, match="delta_scale"):
        cm.paper_setting("nondist_eta", n, delta_scale=0.0)
    out = cm.mle_errors("nondist_eta", 2000, 2, seed=1, gate="constant", delta_scale=0.3)
    assert out["gate"] == "constant" and all(out["converged"])


def test_cli_rejects_group_without_attained():
    from neurips25.contaminated_moe.__main__ import main

    with pytest.raises(SystemExit):
        main(["--group", "0"])
    with pytest.raises(SystemExit):
        main(["--attained", "--group", "7"])
    with pytest.raises(SystemExit):  # a replication group is not a group of the stored study
        main(["--attained", "--group", "3"])
    with pytest.raises(SystemExit):  # nor the other way round
        main(["--attained-replication", "--group", "0"])
    with pytest.raises(SystemExit):
        main(["--attained", "--attained-replication"])
    with pytest.raises(SystemExit):
        main(["--attained-confirm", "--group", "3"])


def test_newton_mle_recovers_parameters_on_large_sample():
    expert, theta = _setting("distinguishable")
    gen = torch.Generator().manual_seed(3)
    x, y = cm.sample(20_000, theta.expand(2, -1), expert, gen)
    start = theta + 0.05 * torch.randn(2, theta.numel(), generator=gen, dtype=torch.float64)
    theta_hat, done = cm.fit_mle(x, y, expert, start)
    assert bool(done.all())
    err = cm.parameter_errors(theta_hat, theta)
    assert float(err["beta"].max()) < 0.15 and float(err["exp_tau"].max()) < 0.15
    assert float(err["eta"].max()) < 0.01 and float(err["nu"].max()) < 1e-4
    # a stationary point: the MLE beats the truth on its own sample
    assert bool((cm.neg_log_likelihood(theta_hat, x, y, expert)
                 <= cm.neg_log_likelihood(theta.expand(2, -1), x, y, expert)).all())
    hell = cm.hellinger_error(theta_hat, theta, expert, n_x=50)
    assert float(hell.max()) < 0.03


def test_em_reaches_the_newton_mle_and_stops_on_relative_tolerance():
    from neurips25.contaminated_moe.mle import fit_em

    expert, theta = _setting("distinguishable", 2000)
    gen = torch.Generator().manual_seed(0)
    star = theta.expand(2, -1)
    x, y = cm.sample(2000, star, expert, gen)
    start = star + 0.05 * torch.randn(star.shape, generator=gen, dtype=torch.float64)
    th_n, done = cm.fit_mle(x, y, expert, start)
    th_em, iters = fit_em(x, y, expert, start, rtol=1e-12, max_iter=3000)
    assert bool(done.all()) and torch.allclose(th_em, th_n, atol=1e-6)
    # a loose tolerance stops earlier, never later, and the log-likelihood only rises
    th_loose, it_loose = fit_em(x, y, expert, start, rtol=1e-4)
    assert bool((it_loose <= iters).all())
    nll = [cm.neg_log_likelihood(t, x, y, expert) for t in (start, th_loose, th_em)]
    assert bool((nll[1] <= nll[0]).all()) and bool((nll[2] <= nll[1] + 1e-12).all())
    with pytest.raises(ValueError, match="rtol"):
        fit_em(x, y, expert, start, rtol=0.0)
    with pytest.raises(ValueError, match="theta_init"):
        fit_em(x, y, expert, start[0])


def test_lightning_module_agrees_with_newton():
    expert, theta = _setting("distinguishable")
    gen = torch.Generator().manual_seed(4)
    x, y = cm.sample(3000, theta, expert, gen)
    start = theta + 0.05 * torch.randn(theta.shape, generator=gen, dtype=torch.float64)
    th_l = cm.fit_with_lightning(x, y, expert, start, epochs=6)
    th_n, done = cm.fit_mle(x[None], y[None], expert, start[None])
    assert bool(done.all())
    nll_l = cm.neg_log_likelihood(th_l, x, y, expert)
    nll_n = cm.neg_log_likelihood(th_n[0], x, y, expert)
    assert float(nll_l - nll_n) < 1e-7
    assert float((th_l - th_n[0]).abs().max()) < 5e-3
    model = cm.ContaminatedMoEMLE("laplace", [1.0] + [0.0] * 7, 1e-3, start.tolist())
    assert model.hparams.family == "laplace" and model.theta.dtype == torch.float64


def test_distinguishability_rank_test():
    assert cm.is_distinguishable("laplace")
    assert not cm.is_distinguishable("gaussian")
    rank, sv = cm.distinguishability_rank("gaussian", 0.0, 1.0, 0.0, 1.0)
    assert rank == 3 and sv[-1] < 1e-10  # f0 = f
    rank, _ = cm.distinguishability_rank("gaussian", 0.5, 1.0, 0.0, 1.0)
    assert rank == 4  # away from f0 a Gaussian prompt is fine


def test_fit_slope_recovers_known_slope():
    ns = np.geomspace(1e3, 1e5, 8)
    rng = np.random.default_rng(0)
    errs = 3 * ns[:, None] ** -0.5 * np.exp(0.02 * rng.standard_normal((8, 5)))
    out = cm.fit_slope(ns, errs)
    assert out["lo"] < -0.5 < out["hi"] and abs(out["slope"] + 0.5) < 0.03


def test_invalid_inputs_raise():
    e1 = torch.zeros(8, dtype=torch.float64)
    with pytest.raises(ValueError, match="nu0"):
        cm.PretrainedExpert("gaussian", e1, 0.0)
    with pytest.raises(ValueError, match="family"):
        cm.PretrainedExpert("cauchy", e1, 1e-3)
    with pytest.raises(ValueError, match="nu"):
        cm.pack(e1, 1.0, e1, -1.0)
    expert, theta = _setting()
    with pytest.raises(ValueError, match="theta"):
        cm.log_density(torch.zeros(4), torch.zeros(4, 8), theta[:-1], expert)
    with pytest.raises(ValueError, match="x must have shape"):
        cm.log_density(torch.zeros(4), torch.zeros(4, 3), theta, expert)
    with pytest.raises(ValueError, match="y must have shape"):
        cm.log_density(torch.zeros(5), torch.zeros(4, 8), theta, expert)
    with pytest.raises(TypeError, match="theta"):
        cm.sample(10, [0.0] * 18, expert)
    with pytest.raises(ValueError, match="n must be"):
        cm.sample(0, theta, expert)
    with pytest.raises(ValueError, match="setting"):
        cm.rate_experiment("bogus", [100], 2)
    with pytest.raises(ValueError, match="sample sizes"):
        cm.fit_slope([1, 2], [1, 2])


def test_mle_errors_chunks_and_reports_the_tau_box():
    """Chunked fits give per-repetition errors; a tight τ box is hit and reported."""
    out = cm.mle_errors("distinguishable", 2000, 3, seed=1, chunk=2)
    assert all(len(v) == 3 for v in out["errors"].values()) and len(out["at_tau_bound"]) == 3
    assert all(out["converged"]) and not any(out["at_tau_bound"])
    assert np.median(out["errors"]["exp_tau"]) < 0.5
    tight = cm.mle_errors("distinguishable", 2000, 2, seed=1, tau_max=0.5)
    assert all(tight["at_tau_bound"])  # τ* = 1 lies outside |τ| <= 0.5
    with pytest.raises(ValueError, match="tau_max"):
        cm.mle_errors("distinguishable", 2000, 2, tau_max=0.0)
    with pytest.raises(ValueError, match="reps"):
        cm.mle_errors("distinguishable", 2000, 0)


def test_newton_fit_on_any_device(any_device):
    """The batched Newton MLE runs where its data live and matches the CPU fit."""
    from neurips25.contaminated_moe import fit_mle, paper_setting, sample

    expert, star = paper_setting("distinguishable", 2000)
    gen = torch.Generator().manual_seed(0)
    x, y = sample(2000, star.expand(2, -1), expert, gen)
    theta0 = star.expand(2, -1) + 0.05 * torch.randn(2, star.numel(), generator=gen, dtype=torch.float64)
    ref, ok_ref = fit_mle(x, y, expert, theta0)
    th, ok = fit_mle(x.to(any_device), y.to(any_device), expert, theta0.to(any_device))
    assert th.device.type == ok.device.type == any_device.type
    assert torch.equal(ok.cpu(), ok_ref) and torch.allclose(th.cpu(), ref, atol=1e-8)


def test_sweep_small_is_the_stored_sweep():
    """``python -m neurips25.contaminated_moe`` (SWEEP["small"]) regenerates the stored grid."""
    from neurips25.contaminated_moe.__main__ import SWEEP
    from neurips25.results import load_results

    data, small = load_results("contaminated_moe")["data"], SWEEP["small"]
    ns = [int(round(v)) for v in np.geomspace(small["n_min"], small["n_max"], small["points"])]
    assert all(data[s]["ns"] == ns and data[s]["reps"] == small["reps"] for s in cm.SETTINGS)
    assert data["large"]["reps"] == small["large_reps"] and set(SWEEP["full"]) == set(small)
    att = data["attained"]
    assert att["reps"] == small["attained_reps"] and len(att["groups"]) == small["attained_groups"]
    assert all(set(fits) == set(cm.FAMILIES) for fits in att["groups"].values())
    ext = att["extension"]  # the Gaussian-f0 continuation past 10^6 (--attained-extend)
    from neurips25.contaminated_moe.__main__ import EXTEND_NS

    assert ext["ns"] == EXTEND_NS and ext["reps"] == att["reps"] and set(ext["groups"]) == set(att["groups"])
    assert all(len(g["errors"]["exp_tau"]) == len(EXTEND_NS) for g in ext["groups"].values())
    assert len(ext["fisher_sd"]["exp_tau"]) == len(EXTEND_NS)
    # the trend test's fresh groups (--attained-replication): disjoint seeds, the whole n grid
    from neurips25.contaminated_moe.__main__ import LARGE_NS, REPLICATION_GROUPS

    rep = att["replication"]
    assert not set(REPLICATION_GROUPS) & {int(g) for g in att["groups"]}
    assert sorted(int(g) for g in rep["groups"]) == REPLICATION_GROUPS and rep["reps"] == att["reps"]
    assert rep["ns"] == LARGE_NS + EXTEND_NS and rep["gate"] == att["gate"]
    assert all(np.shape(g["errors"]["exp_tau"]) == (len(rep["ns"]), rep["reps"]) for g in rep["groups"].values())
    # the confirmatory groups (--attained-confirm): fresh seeds again, both families, as attained()
    from neurips25.contaminated_moe.__main__ import CONFIRM_GROUPS

    conf = att["confirmation"]
    assert not set(CONFIRM_GROUPS) & (set(REPLICATION_GROUPS) | {int(g) for g in att["groups"]})
    assert sorted(int(g) for g in conf["groups"]) == CONFIRM_GROUPS
    assert all(conf[k] == att[k] for k in ("ns", "reps", "gate", "delta_scale"))
    for f in cm.FAMILIES:  # the same Fisher prediction (Monte Carlo; equal to a few ulp)
        assert all(np.allclose(conf["fisher_sd"][f][k], att["fisher_sd"][f][k], rtol=1e-12) for k in cm.PARAMS)
    assert all(set(fits) == set(cm.FAMILIES) for fits in conf["groups"].values())


def test_audit_input_checks():
    n = 1000
    for delta in (float("nan"), -0.1, float("inf"), True):
        with pytest.raises(ValueError, match="delta"):
            cm.paper_setting("nondist_eta", n, delta=delta)
    with pytest.raises(ValueError, match="delta_scale"):
        cm.paper_setting("nondist_eta", n, delta_scale=True)
    # delta = 0 (η* = η0, the exact overlap) stays legal
    assert cm.unpack(cm.paper_setting("nondist_eta", n, delta=0)[1])["eta"][0].item() == 1.0
    expert, theta = cm.paper_setting("nondist_eta", n, d=2)
    x, y = cm.sample(10, theta, expert, torch.Generator().manual_seed(0))
    x_nan, y_nan, th_nan = x.clone(), y.clone(), theta.clone()
    x_nan[0, 0], y_nan[3], th_nan[0] = float("nan"), float("inf"), float("nan")
    with pytest.raises(ValueError, match="x and y must be finite"):
        cm.log_density(y, x_nan, theta, expert)
    with pytest.raises(ValueError, match="x and y must be finite"):
        cm.log_density(y_nan, x, theta, expert)
    with pytest.raises(ValueError, match="theta must be finite"):
        cm.log_density(y, x, th_nan, expert)
    with pytest.raises(ValueError, match="at least one sample"):
        cm.neg_log_likelihood(theta, x[:0], y[:0], expert)
    with pytest.raises(ValueError, match="at least one sample"):
        cm.nll_grad_hess(theta, x[:0], y[:0], expert)
    X, Y, T = x[None], y[None], theta[None]
    for tol in (float("nan"), 0.0, -1.0, True):
        with pytest.raises(ValueError, match="tol"):
            cm.fit_mle(X, Y, expert, T, tol=tol)
    for tau_max in (-1.0, 0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="tau_max"):
            cm.fit_mle(X, Y, expert, T, tau_max=tau_max)
    with pytest.raises(ValueError, match="theta must be finite"):
        cm.fit_mle(X, Y, expert, th_nan[None])
