import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from neurips25.leapfactual import (
    CECFM,
    VAE,
    SquaresToy,
    cgm_swap,
    counterfactual_metrics,
    fit_classifier,
    leap,
    leapfactual,
    odeint,
    opt_counterfactual,
    retrain_with_counterfactuals,
    trunc_normal_mean,
)
from neurips25.runtime import make_trainer, seed_everything


def test_odeint_rk4_exact_on_exponential():
    z = odeint(lambda u, t: -u, torch.ones(3, 1, dtype=torch.float64), 0.0, 1.0, steps=20)
    assert torch.allclose(z, torch.full((3, 1), np.exp(-1.0), dtype=torch.float64), atol=1e-7)
    back = odeint(lambda u, t: -u, z, 1.0, 0.0, steps=20)
    assert torch.allclose(back, torch.ones(3, 1, dtype=torch.float64), atol=1e-7)


def test_trunc_normal_mean_matches_quadrature_and_tails():
    from scipy.stats import truncnorm

    a = torch.tensor([-1.0, 0.5, -3.0, 2.0, -30.0, 8.0], dtype=torch.float64)
    b = torch.tensor([2.0, 0.5001, -2.5, np.inf, -29.0, 9.0], dtype=torch.float64)
    ref = truncnorm.mean(a.numpy(), b.numpy())
    assert np.allclose(trunc_normal_mean(a, b).numpy(), ref, rtol=1e-6)


def test_toy_velocity_is_translate_of_centred_field():
    toy = SquaresToy()
    z = torch.randn(50, 2, dtype=torch.float64)
    y = torch.randint(0, 4, (50,))
    t = 0.37
    c = toy.centres[y]
    assert torch.allclose(toy.velocity(z, t, y), c + toy.v0(z - t * c, t))
    # at t = 0 the I-CFM field is E[z1 | c] - z0
    assert torch.allclose(toy.velocity(z, 0.0, y), c - z)


def test_toy_full_leap_is_translation():
    toy = SquaresToy()
    z, y = toy.sample(400, seed=1)
    yt = (y + 1) % 4
    z2 = leap(toy.velocity, z, y, yt, 1.0, 1.0, steps=32)
    err = (z2 - (z - toy.centres[y] + toy.centres[yt])).norm(dim=1)
    assert err.mean() < 1e-3
    assert (toy.classify(z2) == yt.numpy()).mean() >= 0.99


def test_zero_lift_only_lands():
    """gamma_lift = 0 is the official code's injection: no lift, one land from z itself."""
    toy = SquaresToy()
    z, y = toy.sample(50, seed=4)
    yt = (y + 2) % 4
    landed = odeint(lambda u, t: 0.1 * toy.velocity(u, t, yt), z, 0.0, 1.0, 16)
    assert torch.equal(leap(toy.velocity, z, y, yt, 0.0, 0.1, steps=16), landed)
    with pytest.raises(ValueError, match="gamma_lift must be >= 0"):
        leap(toy.velocity, z, y, yt, -0.1, 0.1)
    with pytest.raises(ValueError, match="gamma_land must be positive"):
        leap(toy.velocity, z, y, yt, 0.0, 0.0)


def test_equal_gammas_with_target_class_leave_z_unchanged():
    toy = SquaresToy()
    z, y = toy.sample(200, seed=2)
    z2 = leap(toy.velocity, z, y, y, 0.3, 0.3, steps=32)
    assert (z2 - z).norm(dim=1).max() < 1e-3
    # and LeapFactual does not move samples the classifier already puts in the target class
    x_ce, _, yf = leapfactual(z, toy.classify, y, toy.velocity, n_blend=5, gamma_blend=0.3)
    assert torch.equal(x_ce, z) and torch.equal(yf, y)


def test_blackbox_numpy_classifier_is_only_called():
    toy = SquaresToy()
    z, y = toy.sample(100, seed=3)
    calls = []

    def annotator(x):  # a numpy "human": would fail on a tensor that requires grad
        assert not x.requires_grad
        calls.append(len(x))
        return toy.classify(np.asarray(x))

    target = (y + 2) % 4
    x_ce, _, yf = leapfactual(z, annotator, target, toy.velocity, n_blend=20, gamma_blend=0.2, steps=16)
    assert calls and (yf == target).float().mean() >= 0.95
    x_r, _, yr = leapfactual(z, annotator, target, toy.velocity, n_blend=20, gamma_blend=0.2, n_inject=3,
                             gamma_inject=(1.0, 1.1), steps=16)
    centre = toy.centres[target]
    assert (x_r - centre).norm(dim=1).mean() < (x_ce - centre).norm(dim=1).mean()  # injection pulls inward
    with pytest.raises(TypeError, match="nn.Module"):
        opt_counterfactual(z, annotator, target, lambda u: u, lambda u: u)


def test_validation_errors():
    toy = SquaresToy()
    z, y = toy.sample(10, seed=0)
    with pytest.raises(ValueError, match="y_t"):
        leap(toy.velocity, z, y, torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="z must be"):
        leap(toy.velocity, z[0], y, y)
    with pytest.raises(ValueError, match="gamma_lift"):
        leap(toy.velocity, z, y, y, gamma_lift=-1.0)
    with pytest.raises(ValueError, match="target must be in"):
        leapfactual(z, toy.classify, 7, toy.velocity, n_classes=4)
    with pytest.raises(ValueError, match="target must be in"):  # n_classes from the flow's owner
        leapfactual(z, toy.classify, 4, toy.velocity)
    with pytest.raises(ValueError, match="target must hold non-negative"):  # review: [-1, 1, 1]
        leapfactual(z[:3], toy.classify, [-1, 1, 1], toy.velocity)
    with pytest.raises(ValueError, match="target must hold non-negative"):  # also for a plain function
        leapfactual(z[:3], toy.classify, [-1, 1, 1], lambda u, t, c: toy.velocity(u, t, c.clamp(0, 3)))
    with pytest.raises(ValueError, match="y_t must hold non-negative"):
        leap(toy.velocity, z[:3], y[:3], [-1, 1, 1])
    with pytest.raises(TypeError, match="integer class labels"):
        leapfactual(z, toy.classify, torch.zeros(10), toy.velocity)
    with pytest.raises(TypeError, match="callable"):
        leapfactual(z, "f", 1, toy.velocity)
    with pytest.raises(ValueError, match="gamma_blend"):
        leapfactual(z, toy.classify, 1, toy.velocity, gamma_blend=1.5)
    with pytest.raises(ValueError, match="classifier must return"):
        leapfactual(z, lambda x: np.zeros(3, dtype=int), 1, toy.velocity)
    with pytest.raises(ValueError, match="steps"):
        odeint(lambda u, t: u, z, 0.0, 1.0, steps=0)
    with pytest.raises(ValueError, match="w must be"):
        SquaresToy(0.25, 0.3)


def test_invalid_inputs_are_rejected_not_passed_on():
    toy = SquaresToy()
    z, y = toy.sample(10, seed=0)
    z_nan = z.clone()
    z_nan[0, 0] = float("nan")
    with pytest.raises(ValueError, match="x must be finite"):
        leapfactual(z_nan, toy.classify, 1, toy.velocity, n_blend=2)
    with pytest.raises(ValueError, match="x must be a non-empty"):
        leapfactual(z[:0], toy.classify, 1, toy.velocity, n_blend=2)
    with pytest.raises(ValueError, match="n_blend must be a non-negative int"):
        leapfactual(z, toy.classify, 1, toy.velocity, n_blend=True)
    with pytest.raises(ValueError, match="n_inject must be a non-negative int"):
        leapfactual(z, toy.classify, 1, toy.velocity, n_inject=1.5)
    with pytest.raises(ValueError, match="steps must be a positive int"):
        leap(toy.velocity, z, y, y, steps=True)
    with pytest.raises(ValueError, match="steps must be a positive int"):
        leapfactual(z, toy.classify, 1, toy.velocity, n_blend=0, steps=0)
    for bad in ((1.0, 1.0, 5.0), (1.0,), (1.0, 0.0), (-1.0, 1.0), (1.0, float("nan")), 1.0):
        with pytest.raises(ValueError, match="gamma_inject must be a pair"):
            leapfactual(z, toy.classify, 1, toy.velocity, n_blend=1, n_inject=1, gamma_inject=bad)
    x_ce = leapfactual(z, toy.classify, 1, toy.velocity, n_blend=1, n_inject=1, gamma_inject=[1.0, 1.05])[0]
    assert x_ce.shape == z.shape  # a list pair, as read back from JSON settings, is fine
    with pytest.raises(ValueError, match="x must be a non-empty"):
        counterfactual_metrics(z[:0], z[:0], y[:0], toy.classify, toy.classify, z)
    with pytest.raises(ValueError, match="reference must be a non-empty"):
        counterfactual_metrics(z, z, y, toy.classify, toy.classify, z[:0])
    with pytest.raises(ValueError, match="x_ce must have one row per input"):
        counterfactual_metrics(z, z[:5], y, toy.classify, toy.classify, z)
    with pytest.raises(ValueError, match="x_ce must be finite"):
        counterfactual_metrics(z, z_nan, y, toy.classify, toy.classify, z)
    X, yx = torch.rand(20, 4), torch.arange(20) % 2
    with pytest.raises(ValueError, match="epochs must be a positive int"):
        fit_classifier(X, yx, epochs=True)
    with pytest.raises(ValueError, match="epochs must be a positive int"):
        fit_classifier(X, yx, epochs=-1)
    f = fit_classifier(X, yx, epochs=5)
    ident = lambda u: u
    with pytest.raises(ValueError, match="max_steps must be a positive int"):
        opt_counterfactual(X[:3], f, 1, ident, ident, max_steps=-1)
    with pytest.raises(ValueError, match="max_steps must be a positive int"):
        opt_counterfactual(X[:3], f, 1, ident, ident, max_steps=True)
    with pytest.raises(ValueError, match="lr must be positive"):
        opt_counterfactual(X[:3], f, 1, ident, ident, lr=0.0)
    with pytest.raises(ValueError, match="x must be finite"):
        opt_counterfactual(X[:3] * float("nan"), f, 1, ident, ident)


def test_smoke_digits_pipeline(any_device):
    seed_everything(0)
    dev = any_device
    X = torch.rand(96, 64, device=dev)
    y = torch.arange(96, device=dev) % 3
    f = fit_classifier(X, y, epochs=20)  # trains on X's device
    assert next(f.parameters()).device.type == dev.type
    black_box = lambda x: f(x.to(dev))  # query() hands a black box CPU tensors
    vae = VAE(64, 32, 4)
    make_trainer(2, accelerator=dev.type).fit(vae, DataLoader(TensorDataset(X.cpu()), batch_size=32))
    vae = vae.to(dev).eval()
    cfm = CECFM(4, 3, (32, 32))
    with torch.no_grad():
        Z = vae.encode(X)
    make_trainer(2, accelerator=dev.type).fit(cfm, DataLoader(TensorDataset(Z.cpu(), y.cpu()), batch_size=32))
    cfm = cfm.to(dev).eval()
    target = (y[:8] + 1) % 3
    x_ce, z_ce, yf = leapfactual(X[:8], black_box, target, cfm.velocity, vae.encode, vae.decode, n_blend=2,
                                 n_inject=1, steps=4)
    assert x_ce.shape == (8, 64) and z_ce.shape == (8, 4) and yf.shape == (8,)
    assert x_ce.device.type == dev.type and torch.isfinite(x_ce).all()
    # soft conditioning (Table 2 protocol): a flow on f's probabilities, every blending leap runs
    cfm_s = CECFM(4, 3, (32, 32))
    make_trainer(2, accelerator=dev.type).fit(
        cfm_s, DataLoader(TensorDataset(Z.cpu(), f(X).softmax(1).cpu()), batch_size=32))
    cfm_s = cfm_s.to(dev).eval()
    proba = lambda x: f(x.to(dev)).softmax(1)
    xs_ce, zs_ce, ys_f, path = leapfactual(X[:8], proba, target, cfm_s.velocity, vae.encode, vae.decode,
                                           n_blend=3, steps=4, soft=True, return_path=True)
    assert len(path) == 4 and zs_ce.device.type == dev.type and torch.isfinite(xs_ce).all()
    assert torch.equal(ys_f.cpu(), f(xs_ce).argmax(1).cpu())
    with pytest.raises(ValueError, match="probabilities"):
        leapfactual(X[:8], black_box, target, cfm_s.velocity, vae.encode, vae.decode, n_blend=1, steps=2,
                    soft=True)  # logits are not probabilities
    x_cgm = cgm_swap(X[:8], black_box, target, cfm.velocity, vae.encode, vae.decode, steps=4)[0]
    x_opt = opt_counterfactual(X[:8], f, target, vae.encode, vae.decode, max_steps=5)[0]
    assert x_opt.device.type == dev.type
    m = counterfactual_metrics(X[:8], x_opt, target.cpu(), black_box, black_box, X)
    assert set(m) == {"flip", "oracle", "dist", "nn_dist"} and x_cgm.shape == x_opt.shape


def test_retrain_with_counterfactuals_baseline_labels_and_validation():
    g = torch.Generator().manual_seed(0)
    X = torch.cat([torch.randn(40, 2, generator=g) - 2, torch.randn(40, 2, generator=g) + 2])
    y = torch.arange(80) // 40
    kw = dict(epochs=50, seeds=(0, 1))
    base = retrain_with_counterfactuals(X[::8], y[::8], torch.empty(0, 2), torch.empty(0, dtype=torch.long), X, y, **kw)
    direct = np.mean([float((fit_classifier(X[::8], y[::8], epochs=50, seed=s)(X).argmax(1) == y).float().mean())
                      for s in (0, 1)])
    assert base == pytest.approx(direct)  # an empty CE set is the plain refit
    good = retrain_with_counterfactuals(X[::8], y[::8], X[1::2], y[1::2], X, y, **kw)
    bad = retrain_with_counterfactuals(X[::8], y[::8], X[1::2], 1 - y[1::2], X, y, **kw)
    assert good > bad  # CEs carrying the wrong label hurt
    with pytest.raises(ValueError, match="x_ce must be"):
        retrain_with_counterfactuals(X, y, torch.zeros(3, 5), torch.zeros(3, dtype=torch.long), X, y)
    with pytest.raises(ValueError, match="y_ce"):
        retrain_with_counterfactuals(X, y, torch.zeros(3, 2), torch.zeros(4, dtype=torch.long), X, y)


def test_table3_run_validates_and_sweep_settings_match_the_notebook():
    from neurips25.leapfactual import SWEEP, table3_run

    with pytest.raises(ValueError, match="weak_frac"):
        table3_run(0, 1.5, SWEEP["small"])
    with pytest.raises(ValueError, match="protocol"):
        table3_run(0, 0.1, SWEEP["small"], protocol="paper")
    # the official Galaxy10 settings: N_b = 250, N_i = 50 with (1, 1.025)
    off = SWEEP["small"]["official"]
    assert (off["n_blend"], off["n_inject"], tuple(off["gamma_inject"])) == (250, 50, (1.0, 1.025))
    assert SWEEP["small"]["protocols"] == ("chapter", "official")
    assert 0.1 in SWEEP["small"]["weak_fracs"] and SWEEP["small"]["seeds"] == (0, 1, 2)
    assert set(SWEEP["small"]) == set(SWEEP["full"])


def test_table3_pool_rolls_targets_and_validates():
    from neurips25.leapfactual import table3_pool

    toy = SquaresToy()
    z, y = toy.sample(6, seed=0)
    y10 = torch.tensor([0, 1, 2, 3, 4, 5])

    class Id:  # a stand-in VAE: identity encoder/decoder
        encode = decode = staticmethod(lambda u: u)

    class Flow:  # a stand-in flow with ten classes: the toy field on class mod 4
        velocity = staticmethod(lambda u, t, c: toy.velocity(u, t, c % 4))

    f = lambda x: torch.as_tensor(toy.classify(x))  # noqa: E731
    x_std, x_rel, t = table3_pool(z, y10, f, Flow, Id, 2, 0.5, 1, (1.0, 1.0), 4)
    assert x_std.shape == x_rel.shape == (54, 2) and t.shape == (54,)
    assert torch.equal(t[:6], (y10 + 1) % 10) and not (t == y10.repeat(9)).any()
    with pytest.raises(ValueError, match="x_own and y_own"):
        table3_pool(z, y10[:3], f, Flow, Id, 2, 0.5, 1, (1.0, 1.0), 4)


def test_nearest_digit_and_seed0_settings_match_the_notebook():
    from neurips25.leapfactual import SEED0, SWEEP, nearest_digit

    ref = torch.tensor([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
    x = torch.tensor([[0.1, 0.0], [0.0, 0.2], [1.0, 0.3]])
    d, n_distinct, n = nearest_digit(x, ref)
    assert abs(d - (0.1 + 0.2 + 0.3) / 3) < 1e-6 and (n_distinct, n) == (2, 3)
    with pytest.raises(ValueError, match="x and reference"):
        nearest_digit(x, ref[:, :1])
    # the notebook's seed-0 run: its CFG (f on 10 %, 200 / 450 test digits), the sweep's settings,
    # and the MLP refit recipe of its "ceiling or labels?" cell
    for s, n_eval in (("small", 200), ("full", 450)):
        cfg = SEED0[s]
        assert {k: cfg[k] for k in SWEEP[s]} == SWEEP[s]
        assert (cfg["weak_frac"], cfg["n_eval"], tuple(cfg["fracs"])) == (0.1, n_eval, (0.1, 0.5, 1.0))
        assert cfg["mlp"] == dict(hidden=(128,), epochs=200, lr=1e-2, weight_decay=1e-3)


def test_table2_run_validates_its_arguments():
    from neurips25.leapfactual import TABLE2, table2_run

    cfg = TABLE2["small"]
    for seed in (-1, 1.5, True, 2**32):
        with pytest.raises(ValueError, match="seed must be an int"):
            table2_run(seed, cfg)
    with pytest.raises(TypeError, match="cfg must be a dict"):
        table2_run(0, [("n_eval", 200)])
    with pytest.raises(ValueError, match=r"cfg is missing the Table 2 settings \['n_blend_soft'\]"):
        table2_run(0, {k: v for k, v in cfg.items() if k != "n_blend_soft"})
    with pytest.raises(ValueError, match="weak_frac"):
        table2_run(0, dict(cfg, weak_frac=1.5))
    for k, bad in (("n_eval", 0), ("steps", 2.5), ("n_blend_soft", -1)):
        with pytest.raises(ValueError, match=rf"cfg\['{k}'\] must be a positive int"):
            table2_run(0, dict(cfg, **{k: bad}))


def test_table2_settings_match_the_notebook():
    from neurips25.leapfactual import OPT_BASELINE, SEED0, TABLE2

    # the notebook's CFG: f on 10 %, 200 / 450 explained digits, N_b = 30 (argmax) and 15 (soft),
    # N_i = 5 x (1, 1.05); the Opt baseline: lr 0.02, up to 1,000 steps, lambda = 1e-3
    for s, n_eval, steps in (("small", 200, 16), ("full", 450, 32)):
        cfg = TABLE2[s]
        own = ("n_blend_soft", "gamma_inject_soft")  # the soft-label protocol's settings
        assert {k: cfg[k] for k in cfg if k not in own} == {k: SEED0[s][k] for k in cfg if k not in own}
        assert (cfg["weak_frac"], cfg["n_eval"], cfg["steps"]) == (0.1, n_eval, steps)
        assert (cfg["n_blend"], cfg["n_blend_soft"], cfg["gamma_blend"]) == (30, 15, 0.1)
        assert (cfg["n_inject"], tuple(cfg["gamma_inject"])) == (5, (1.0, 1.05))
        assert tuple(cfg["gamma_inject_soft"]) == (0.0, 0.1)  # the official code: land only
    assert TABLE2["small"]["seeds"] == (0, 1, 2)
    assert OPT_BASELINE == dict(lr=0.02, max_steps=1000, lam=1e-3)


def test_table2_run_smoke(monkeypatch):
    from neurips25.leapfactual import TABLE2, oracle_accuracy, table2_run

    monkeypatch.setenv("NEURIPS25_SMOKE", "1")  # every loop capped (runtime.cap): 20 digits, 2 epochs
    cfg = dict(TABLE2["small"], vae_hidden=32, cfm_hidden=(32, 32))
    table, run = table2_run(1, cfg, details=True)
    assert set(table) == {"argmax", "soft"}
    assert list(table["argmax"]) == ["Opt", "CGM", "LeapFactual", "LeapFactual_R"]
    assert list(table["soft"]) == ["LeapFactual (soft)", "LeapFactual_R (soft)",
                                   "LeapFactual_R (soft, lift 1 / land 1.05)", "one full soft leap (CGM-style)"]
    for m in (*table["argmax"].values(), *table["soft"].values()):
        assert set(m) == {"flip", "oracle", "dist", "nn_dist"}
        assert 0 <= m["flip"] <= 1 and 0 <= m["oracle"] <= 1 and m["dist"] >= 0 and m["nn_dist"] >= 0
    assert run.x_ev.shape == (20, 64) and not (run.target == run.y_start).any()
    assert run.ces["LeapFactual_R"].shape == run.ces_soft["LeapFactual (soft)"].shape == (20, 64)
    acc = oracle_accuracy(run)  # an SVM on real digits: far above chance on the test digits
    assert set(acc) == {"test", "reconstructions"} and acc["test"] > 0.5 and 0 <= acc["reconstructions"] <= 1
    with pytest.raises(TypeError, match="run must be the namespace"):
        oracle_accuracy(table)
    with pytest.raises(ValueError, match=r"cfg\['n_eval'\] must be at most the 450 test digits"):
        table2_run(0, dict(cfg, n_eval=451))
