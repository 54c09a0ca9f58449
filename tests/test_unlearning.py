"""Tests for neurips25.unlearning (MinNorm-OG, Block, Mokhtari & Shakkottai, NeurIPS 2025)."""
import math

import pytest
import torch
from torch import nn
from torch.nn.utils import parameters_to_vector

from neurips25.nn import MLP
from neurips25.unlearning import (
    METHODS,
    Interpolator,
    Unlearner,
    backdoor_digits,
    backdoor_metrics,
    fit_snapshots,
    min_norm_interpolator,
    minnorm_og_step,
    model_jacobian,
    project_orthogonal,
    run_sine_sweep,
    run_spiky_sweep,
    sine_mlp,
    sine_poisoning_data,
    sup_error,
    tuning_grid,
    unlearn,
)


def _linear_problem(seed=0, n_r=8, n_f=3, d=30):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n_r + n_f, d, generator=g, dtype=torch.float64)
    y = torch.randn(n_r + n_f, generator=g, dtype=torch.float64)
    model = nn.Linear(d, 1, bias=False).double()
    with torch.no_grad():  # θ* = an interpolator of all of D (min-norm + a null-space component)
        theta = min_norm_interpolator(X, y)
        null = torch.randn(d, generator=g, dtype=torch.float64)
        null -= torch.linalg.pinv(X) @ (X @ null)
        model.weight.copy_((theta + null).unsqueeze(0))
    return X[:n_r], y[:n_r], X[n_r:], y[n_r:], model


def test_jacobian_matches_autograd_and_linear_case():
    X, _, _, _, model = _linear_problem()
    assert torch.allclose(model_jacobian(model, X), X)  # ∇_θ (θᵀx) = x
    net = MLP(2, [7], 1)
    x = torch.randn(4, 2)
    G = model_jacobian(net, x)
    for i in range(4):
        net.zero_grad()
        net(x[i:i + 1]).sum().backward()
        assert torch.allclose(G[i], torch.cat([p.grad.flatten() for p in net.parameters()]), atol=1e-6)
    clf = MLP(3, [5], 4)
    assert model_jacobian(clf, torch.randn(6, 3), output="max").shape == (6, sum(p.numel() for p in clf.parameters()))


def test_linear_exactness_one_projection_gives_min_norm_interpolator():
    Xr, yr, _, _, model = _linear_problem()
    minnorm_og_step(model, Xr, coef=1.0)  # λ = 0
    theta = model.weight.detach().flatten()
    assert torch.allclose(theta, min_norm_interpolator(Xr, yr), atol=1e-10)
    assert torch.allclose(Xr @ theta, yr, atol=1e-10)


def test_projection_idempotent_and_orthogonal():
    g = torch.Generator().manual_seed(1)
    G = torch.randn(5, 40, generator=g)
    theta = torch.randn(40, generator=g)
    p = project_orthogonal(theta, G)
    assert torch.allclose(project_orthogonal(p, G), p, atol=1e-5)
    assert (G @ p).abs().max() < 1e-4
    assert torch.allclose(theta - p, (theta - p), atol=0)  # shape/dtype preserved
    assert p.dtype == theta.dtype


def test_gd_step_at_interpolator_is_zero_thm1():
    Xr, yr, Xf, yf, model = _linear_problem()
    before = parameters_to_vector(model.parameters()).clone()
    for method in ("gd", "ga", "neggrad_plus"):
        u = Unlearner(model, (Xr, yr.unsqueeze(1)), (Xf, yf.unsqueeze(1)), method, epochs=1, lr=1e-3)
        u.model.double()
        opt = torch.optim.SGD(u.model.parameters(), lr=1.0)
        u.unlearning_epoch(opt)
        moved = (parameters_to_vector(u.model.parameters()) - before).norm()
        assert moved < 1e-9, (method, moved)


def test_baselines_run_on_a_toy_and_trainer_matches_plain_loop():
    d = sine_poisoning_data(0, n_retain=12, n_forget=2, half_width=3.0, min_gap=0.1)
    torch.manual_seed(0)
    model = MLP(1, [16, 16], 1)
    retain, forget = (d["xr"], d["yr"]), (d["xf"], d["yf"])
    for m in METHODS:
        out = unlearn(model, retain, forget, m, epochs=4, n_pert=5, lr=1e-3)
        assert math.isfinite(sup_error(out, 3.0))
    a = unlearn(model, retain, forget, "minnorm_og", epochs=6, n_pert=5, proj_period=2)
    b = unlearn(model, retain, forget, "minnorm_og", epochs=6, n_pert=5, proj_period=2, trainer=True)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.allclose(p, q, atol=1e-6)
    assert {len(tuning_grid(m, T)) for m in METHODS for T in (10, 100, 1000)} == {4}  # equal budgets


def test_projection_matches_qr_and_is_idempotent_on_an_ill_conditioned_jacobian():
    """The Gram-matrix projection equals the QR one and leaves no component along G."""
    g = torch.Generator().manual_seed(0)
    base = torch.randn(6, 3000, generator=g, dtype=torch.float64)
    G = torch.cat([base, base[:2] + 1e-5 * torch.randn(2, 3000, generator=g, dtype=torch.float64)])
    theta = torch.randn(3000, generator=g, dtype=torch.float64)
    Q, _ = torch.linalg.qr(G.T)
    ref = theta - Q @ (Q.T @ theta)
    p = project_orthogonal(theta, G)
    assert torch.allclose(p, ref, atol=1e-9)
    assert (G @ p).abs().max() < 1e-9 * G.norm() * theta.norm()
    assert torch.allclose(project_orthogonal(p, G), p, atol=1e-12)


def test_sweep_rejects_overlapping_tuning_and_evaluation_seeds():
    with pytest.raises(ValueError, match="disjoint"):
        run_sine_sweep(seeds=(0, 1), tune_seeds=(1, 2))


def test_backdoor_data_and_metrics():
    data = backdoor_digits(0, n_train=100, n_forget=10)
    assert (data["xf"][:, -1] == 1).all() and (data["xr"][:, -1] == 0).all()
    assert (data["yf"] == data["target"]).all()
    m = backdoor_metrics(MLP(65, [8], 10), data)
    assert 0 <= m["clean_acc"] <= 1 and 0 <= m["attack_success"] <= 1


def test_invalid_arguments():
    Xr, yr, Xf, yf, model = _linear_problem()
    retain, forget = (Xr, yr), (Xf, yf)
    with pytest.raises(ValueError, match="lam"):
        Unlearner(model, retain, forget, lam=-1.0)
    with pytest.raises(ValueError, match="retain"):
        Unlearner(model, (Xr[:0], yr[:0]), forget)
    with pytest.raises(ValueError, match="coef"):
        minnorm_og_step(model, Xr, coef=1.5)
    with pytest.raises(ValueError, match="x_retain|non-empty"):
        minnorm_og_step(model, Xr[:0], coef=0.5)
    with pytest.raises(ValueError, match="method"):
        Unlearner(model, retain, forget, method="magic")
    with pytest.raises(ValueError, match="G must have shape"):
        project_orthogonal(torch.zeros(5), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="num_gd_epochs"):
        Unlearner(model, retain, forget, epochs=5, num_gd_epochs=9)


def test_non_finite_and_bool_arguments_are_rejected():
    Xr, yr, Xf, yf, model = _linear_problem()
    retain, forget = (Xr, yr), (Xf, yf)
    for name in ("lr", "lam", "reg", "noise_sigma", "ga_coef"):  # lr = inf used to give NaN weights
        with pytest.raises(ValueError, match=f"{name} must be a finite number >= 0"):
            unlearn(model, retain, forget, "minnorm_og", 3, **{name: math.inf})
    with pytest.raises(ValueError, match="lam must be a finite number >= 0"):
        Unlearner(model, retain, forget, lam=float("nan"))
    for bad in (0.5, True):
        with pytest.raises(ValueError, match="num_gd_epochs must be an int"):
            Unlearner(model, retain, forget, epochs=3, num_gd_epochs=bad)
    with pytest.raises(ValueError, match="epochs must be a positive int"):
        Unlearner(model, retain, forget, epochs=True)
    with pytest.raises(ValueError, match="proj_period must be a positive int"):
        Unlearner(model, retain, forget, proj_period=True)
    with pytest.raises(ValueError, match="n_pert must be a positive int"):
        Unlearner(model, retain, forget, n_pert=2.5)
    Xnan = Xr.clone()
    Xnan[0, 0] = float("nan")
    with pytest.raises(ValueError, match="retain: x and y must be finite"):
        unlearn(model, (Xnan, yr), forget, "gd", 3)
    with pytest.raises(ValueError, match="forget: x and y must be finite"):
        Unlearner(model, retain, (Xf, yf * math.inf), method="ga")
    with pytest.raises(ValueError, match="coef must be a number in"):
        minnorm_og_step(model, Xr, coef=True)
    with pytest.raises(ValueError, match="n_pert must be a positive int"):
        minnorm_og_step(model, Xr, coef=0.5, n_pert=True)
    net = sine_mlp(0, width=8)
    for hw in (float("nan"), math.inf, 0.0, -1.0):
        with pytest.raises(ValueError, match="half_width must be a positive finite number"):
            sup_error(net, hw)
    with pytest.raises(ValueError, match="n_test must be an int"):
        sup_error(net, 1.0, n_test=1)
    assert math.isfinite(sup_error(net, 1.0, n_test=50))


def test_median_sup_is_numpys_median_of_the_evaluation_seeds():
    """An even number of seeds takes the mean of the middle two, as the notebook and its criteria do."""
    from neurips25 import unlearning as U

    d = U.sine_poisoning_data(0, n_retain=10, n_forget=2)
    runs = {s: (d, sine_mlp(s, width=8)) for s in (0, 1, 2, 3, 100)}
    r = U._tune_and_evaluate(runs, "gd", 2, (0, 1, 2, 3), (100,), 1.0)
    srt = sorted(r["sup"])
    assert len(srt) == 4 and srt[1] != srt[2]
    assert r["median_sup"] == pytest.approx((srt[1] + srt[2]) / 2)


def test_every_method_runs_on_the_data_device(any_device):
    """Model and data on ``any_device``: every method (projection, noise, ascent) stays there."""
    d = sine_poisoning_data(0, n_retain=12, n_forget=2, half_width=3.0, min_gap=0.1)
    torch.manual_seed(0)
    model = MLP(1, [16, 16], 1).to(any_device)
    retain = (d["xr"].to(any_device), d["yr"].to(any_device))
    forget = (d["xf"].to(any_device), d["yf"].to(any_device))
    for m in METHODS:
        out = Unlearner(model, retain, forget, m, epochs=4, n_pert=5, lr=1e-3, seed=1).run()
        assert all(p.device.type == any_device.type for p in out.parameters()), m
        assert math.isfinite(sup_error(out, 3.0)), m
    delta = minnorm_og_step(model, retain[0], 0.5, 4, torch.Generator(device=any_device).manual_seed(0))
    assert delta.device.type == any_device.type
    if any_device.type == "cpu":  # seeded: the same seed gives the same noisy run
        ref = unlearn(model, retain, forget, "noisy_gd", epochs=3, seed=1)
        again = Unlearner(model, retain, forget, "noisy_gd", epochs=3, seed=1).run()
        assert all(torch.equal(p, q) for p, q in zip(ref.parameters(), again.parameters()))


def test_sweep_small_is_the_stored_sweep():
    from neurips25.results import load_results
    from neurips25.unlearning import SWEEP

    cfg = load_results("unlearning")["data"]["config"]
    small = SWEEP["small"]
    assert cfg["seeds"] == list(range(small["seeds"])) and cfg["budgets"] == small["budgets"]
    assert cfg["tune_seeds"] == small["tune_seeds"] and cfg["steps"] == small["steps"]
    assert set(SWEEP["full"]) == set(small)


def test_snapshots_of_a_constant_lr_run_are_shorter_runs():
    """fit_snapshots: the snapshot after k steps is exactly a k-step run (constant lr, one optimiser)."""
    d = sine_poisoning_data(3, n_retain=10, n_forget=2, half_width=5 * math.pi, min_gap=0.0)
    x, y = torch.cat([d["xr"], d["xf"]]), torch.cat([d["yr"], d["yf"]])
    long = fit_snapshots(sine_mlp(0, width=16), x, y, (200, 400))
    short = fit_snapshots(sine_mlp(0, width=16), x, y, (200,))
    assert all(torch.equal(p, q) for p, q in zip(long[200].parameters(), short[200].parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(long[400].parameters(), short[200].parameters()))
    with pytest.raises(ValueError, match="snapshots"):
        fit_snapshots(sine_mlp(0, width=16), x, y, (400, 200))
    with pytest.raises(ValueError, match="snapshots"):
        Interpolator(sine_mlp(0, width=16), x, y, steps=200, snapshots=(300,))
    with pytest.raises(ValueError, match="schedule"):
        Interpolator(sine_mlp(0, width=16), x, y, steps=200, schedule="linear")


def test_spiky_sweep_structure_and_inputs():
    out = run_spiky_sweep(seeds=(0,), tune_seeds=(1,), checkpoints=(100, 200), budgets=(2,))
    assert out["config"]["half_width"] == pytest.approx(5 * math.pi)
    assert set(out["checkpoints"]) == {"100", "200"}
    r = out["checkpoints"]["200"]["2"]
    assert set(r) == {"minnorm_og", "gd"} and len(r["gd"]["sup"]) == 1 and len(r["gd"]["grid"]) == 4
    assert set(out["poisoned"]["0"]["100"]) >= {"train_mse", "max_res_forget", "max_w1"}
    assert "eval_sup" not in r["gd"]["grid"][0] and "all_configs" not in out["config"]
    with pytest.raises(ValueError, match="disjoint"):
        run_spiky_sweep(seeds=(0, 1), tune_seeds=(1,))
    with pytest.raises(ValueError, match="methods"):
        run_spiky_sweep(seeds=(0,), tune_seeds=(1,), methods=("magic",))


def test_spiky_all_configs_keeps_every_configuration():
    out = run_spiky_sweep(seeds=(0, 1), tune_seeds=(2,), checkpoints=(100,), budgets=(2,), methods=("gd",),
                          all_configs=True)
    assert out["config"]["all_configs"] is True
    r = out["checkpoints"]["100"]["2"]["gd"]
    for g in r["grid"]:  # per-seed sup-errors of every configuration, on both splits
        assert len(g["tune_sup"]) == 1 and len(g["eval_sup"]) == 2
        assert g["tune_mean_sup"] == pytest.approx(g["tune_sup"][0])
    chosen = next(g for g in r["grid"] if g["hp"] == r["best_hp"])
    assert chosen["eval_sup"] == pytest.approx(r["sup"])  # the reported numbers are the chosen row's


def test_spiky_small_is_the_stored_spiky_sweep():
    from neurips25.results import load_results
    from neurips25.unlearning import SPIKY

    cfg = load_results("unlearning_spiky")["data"]["config"]
    small = SPIKY["small"]
    assert cfg["seeds"] == list(range(small["seeds"])) and cfg["tune_seeds"] == small["tune_seeds"]
    assert cfg["checkpoints"] == small["checkpoints"] and cfg["budgets"] == small["budgets"]
    assert set(SPIKY["full"]) == set(small) and SPIKY["full"]["checkpoints"][-1] == 100_000  # the paper's
    assert small["checkpoints"][-1] == 100_000  # the book's sweep trains the paper's length too


def test_spiky_selection_small_is_the_stored_selection_sweep():
    from neurips25.results import load_results
    from neurips25.unlearning import SPIKY_SELECTION

    payload = load_results("unlearning_spiky_selection")
    cfg, small = payload["data"]["config"], SPIKY_SELECTION["small"]
    assert payload["slug"] == "unlearning_spiky_selection" and cfg["all_configs"] is True
    assert cfg["seeds"] == list(range(small["seeds"])) and cfg["tune_seeds"] == small["tune_seeds"]
    assert cfg["checkpoints"] == small["checkpoints"] and cfg["budgets"] == small["budgets"]
    assert set(SPIKY_SELECTION["full"]) == set(small) and SPIKY_SELECTION["full"]["checkpoints"] == [100_000]


def test_spiky10_small_is_the_stored_ten_seed_sweep():
    from neurips25.results import load_results
    from neurips25.unlearning import SPIKY, SPIKY10

    payload = load_results("unlearning_spiky10")
    cfg, small = payload["data"]["config"], SPIKY10["small"]
    assert payload["slug"] == "unlearning_spiky10" and "--experiment spiky10" in payload["command"]
    assert cfg["seeds"] == list(range(small["seeds"])) and cfg["tune_seeds"] == small["tune_seeds"]
    assert cfg["checkpoints"] == small["checkpoints"] and cfg["budgets"] == small["budgets"]
    assert small["seeds"] == 10 and small["checkpoints"][-1] == 100_000  # the paper's trials and length
    assert small["tune_seeds"] == SPIKY["full"]["tune_seeds"] and set(SPIKY10["full"]) == set(small)


def test_spiky_table1_small_is_the_stored_sweep():
    from neurips25.results import load_results
    from neurips25.unlearning import METHODS, SPIKY10, SPIKY_TABLE1

    payload = load_results("unlearning_spiky_table1")
    cfg, small = payload["data"]["config"], SPIKY_TABLE1["small"]
    assert payload["slug"] == "unlearning_spiky_table1" and "--experiment spiky_table1" in payload["command"]
    assert cfg["seeds"] == list(range(small["seeds"])) and cfg["tune_seeds"] == small["tune_seeds"]
    assert cfg["checkpoints"] == small["checkpoints"] == [100_000] and cfg["budgets"] == [10, 100, 1000]
    assert cfg["methods"] == list(METHODS) == small["methods"]  # Table 1: every method
    # the same evaluation and tuning seeds as the ten-seed spiky run, so the shared runs must agree
    assert small["seeds"] == SPIKY10["small"]["seeds"] and small["tune_seeds"] == SPIKY10["small"]["tune_seeds"]
    assert SPIKY_TABLE1["full"] == small


@pytest.mark.parametrize("experiment, extra, key, value", [
    ("spiky10", ["--checkpoints", "100"], "checkpoints", [100]),
    ("poison10", ["--steps", "100"], "budgets", [2]),
])
def test_cli_ten_seed_sweeps_write_their_own_files(tmp_path, monkeypatch, experiment, extra, key, value):
    import json

    from neurips25.unlearning import main

    monkeypatch.setenv("NEURIPS25_SMOKE", "1")  # capped loops: checks the plumbing, not the numbers
    out = tmp_path / "s.json"
    det, warn, threads = (torch.are_deterministic_algorithms_enabled(),
                          torch.is_deterministic_algorithms_warn_only_enabled(), torch.get_num_threads())
    try:  # main() sets torch's global determinism and thread count: put them back afterwards
        main(["--experiment", experiment, "--seeds", "1", "--tune-seeds", "100", *extra,
              "--budgets", "2", "--out", str(out)])
    finally:
        torch.use_deterministic_algorithms(det, warn_only=warn)
        torch.set_num_threads(threads)
    payload = json.loads(out.read_text())
    assert payload["slug"] == f"unlearning_{experiment}" and payload["smoke"] is True
    assert payload["data"]["config"]["seeds"] == [0] and payload["data"]["config"][key] == value


def test_poison10_small_is_the_stored_ten_seed_table1_sweep():
    from neurips25.results import load_results
    from neurips25.unlearning import POISON10, SWEEP

    payload = load_results("unlearning_poison10")
    cfg, small = payload["data"]["config"], POISON10["small"]
    assert payload["slug"] == "unlearning_poison10" and "--experiment poison10" in payload["command"]
    assert cfg["seeds"] == list(range(small["seeds"])) and cfg["tune_seeds"] == small["tune_seeds"]
    assert cfg["budgets"] == small["budgets"] and cfg["steps"] == small["steps"]
    # the 3-seed sweep's settings, only more evaluation seeds: same tuning, so seeds 0-2 repeat it
    assert small == {**SWEEP["small"], "seeds": 10} and POISON10["full"] == small
    stored = load_results("unlearning")["data"]
    for T, res in stored["budgets"].items():
        for m, r in res.items():
            new = payload["data"]["budgets"][T][m]
            assert new["best_hp"] == r["best_hp"] and new["sup"][:len(r["sup"])] == r["sup"], (T, m)


def test_paper_grid_is_the_official_codes_grid():
    from neurips25.unlearning import PAPER_GRIDS

    g10, g100 = tuning_grid("minnorm_og", 10, "paper"), tuning_grid("minnorm_og", 100, "paper")
    assert len(g10) == 3 * 2 * 3 * 3 * 3 == 162 and len(g100) == 3 * 2 * 3 * 2 * 2 == 72
    assert {hp["n_pert"] for hp in g10 + g100} == {None}  # grad_sample_size 50 = every retain point
    assert {1 / (1 + hp["lam"]) for hp in g100} == {0.1, 1.0}  # the official reg_coef c
    assert len({tuple(sorted(hp.items())) for hp in g100}) == 72  # no duplicates
    assert [hp["lr"] for hp in tuning_grid("gd", 100, "paper")] == PAPER_GRIDS[100]["lr"]
    assert tuning_grid("gd", 10) == tuning_grid("gd", 10, "book")  # the book's grid stays the default


@pytest.mark.parametrize("args, match", [
    (("minnorm_og", 10, "large"), "grid must be"),
    (("ridge", 10, "paper"), "grid='paper' covers"),
    (("minnorm_og", 1000, "paper"), "grid='paper' covers"),
])
def test_tuning_grid_rejects_unknown_grids(args, match):
    with pytest.raises(ValueError, match=match):
        tuning_grid(*args)


def test_spiky_snapshot_cache_round_trips(tmp_path):
    from neurips25.unlearning import _spiky_snapshots

    d = sine_poisoning_data(0, half_width=3.0, min_gap=0.0)
    a = _spiky_snapshots(0, d, (2, 4), 1e-3, 3.0, str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "spiky_s0_k2_lr0.001_w3.000000.pt", "spiky_s0_k4_lr0.001_w3.000000.pt"]
    b = _spiky_snapshots(0, d, (2, 4), 1e-3, 3.0, str(tmp_path))  # loaded, not retrained
    for k in (2, 4):
        assert all(torch.equal(p, q) for p, q in zip(a[k].parameters(), b[k].parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(a[2].parameters(), a[4].parameters()))


def test_paper_grid_small_is_the_stored_sweep():
    from neurips25.results import load_results
    from neurips25.unlearning import PAPER_GRID, SPIKY10

    payload = load_results("unlearning_paper_grid")
    cfg, small = payload["data"]["config"], PAPER_GRID["small"]
    assert payload["slug"] == "unlearning_paper_grid" and "--experiment paper_grid" in payload["command"]
    assert cfg["grid"] == "paper" and cfg["all_configs"] is True and cfg["budgets"] == small["budgets"]
    assert cfg["seeds"] == list(range(small["seeds"])) and cfg["tune_seeds"] == small["tune_seeds"]
    assert cfg["checkpoints"] == small["checkpoints"] == [100_000] and PAPER_GRID["full"] == small
    # the ten-seed run's seeds and networks, so its 100,000-step diagnostics must agree
    assert small["seeds"] == SPIKY10["small"]["seeds"] and small["tune_seeds"] == SPIKY10["small"]["tune_seeds"]
    res = payload["data"]["checkpoints"]["100000"]
    for T in map(str, small["budgets"]):
        assert len(res[T]["minnorm_og"]["grid"]) == len(tuning_grid("minnorm_og", int(T), "paper"))
        assert all(len(g["eval_sup"]) == 10 and len(g["tune_sup"]) == 3 for g in res[T]["minnorm_og"]["grid"])


def test_fixed_configs_are_the_papers_table6_and_run_without_tuning(tmp_path):
    import math as _m

    from neurips25.unlearning import PAPER_GRIDS, PAPER_TABLE6, TABLE6, run_fixed_configs

    # every Table-6 configuration is a point of the official grid (so the stored grid holds its results)
    for (m, T), hp in PAPER_TABLE6.items():
        if m == "minnorm_og":
            assert all(v in PAPER_GRIDS[T][k] for k, v in hp.items()), (m, T)
    # fresh seeds, disjoint from the evaluation (0-9) and tuning (100-102) seeds
    assert TABLE6["small"]["seeds"] == list(range(10, 20)) and TABLE6["small"]["checkpoints"] == [100_000]
    cfgs = {("minnorm_og", 3): dict(lr=1e-3, lam=9.0, reg_decay=0.9, num_gd_epochs=1, proj_period=1),
            ("gd", 3): dict(lr=1e-3)}
    out = run_fixed_configs((0, 1), cfgs, steps=5, half_width=3.0, model_cache=str(tmp_path))
    assert set(out["sup"]) == {"minnorm_og", "gd"} and all(len(out["sup"][m]["3"]) == 2 for m in out["sup"])
    assert all(_m.isfinite(v) for m in out["sup"] for v in out["sup"][m]["3"])
    assert set(out["poisoned"]) == {"0", "1"} and len(out["config"]["configs"]) == 2
    again = run_fixed_configs((0, 1), cfgs, steps=5, half_width=3.0, model_cache=str(tmp_path))
    assert again["sup"] == out["sup"]  # deterministic, from the cached networks
    with pytest.raises(ValueError, match="seeds"):
        run_fixed_configs((), cfgs)
    with pytest.raises(ValueError, match="methods"):
        run_fixed_configs((0,), {("bogus", 3): {}})


def test_table6_small_is_the_stored_fresh_seed_run():
    from neurips25.results import load_results
    from neurips25.unlearning import PAPER_TABLE6, TABLE6

    payload = load_results("unlearning_table6")
    cfg = payload["data"]["config"]
    assert "--experiment table6" in payload["command"] and cfg["seeds"] == TABLE6["small"]["seeds"]
    assert cfg["steps"] == TABLE6["small"]["checkpoints"][-1] == 100_000
    assert cfg["configs"] == [{"method": m, "T": T, **hp} for (m, T), hp in PAPER_TABLE6.items()]
    sup = payload["data"]["sup"]
    assert all(len(sup[m][str(T)]) == 10 for m, T in PAPER_TABLE6)
    assert set(payload["data"]["poisoned"]) == {str(s) for s in cfg["seeds"]}
