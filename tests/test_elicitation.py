import numpy as np
import pytest
import torch

from neurips25 import elicitation as E
from neurips25.lm import tiny_model


@pytest.fixture(scope="module")
def setup():
    tok = E.task_tokenizer()
    model = tiny_model(tok, n_layer=1, n_embd=32, n_head=4, n_positions=16, seed=0)
    X, y = E.encode_pairs(tok, E.majority_pairs(32, marker="#", seed=0))
    choices = torch.tensor([tok.convert_tokens_to_ids(c) for c in E.DIGITS])
    return tok, model, X, y, choices


def test_majority_pairs_answers_are_majorities():
    for prompt, ans in E.majority_pairs(50, marker="!", seed=1):
        seq = prompt[:-1]
        counts = [seq.count(c) for c in E.LETTERS]
        assert counts.count(max(counts)) == 1
        assert ans == E.DIGITS[int(np.argmax(counts))]
    with pytest.raises(ValueError, match="marker"):
        E.majority_pairs(3, marker="$")


def test_p_zero_leaves_model_identical(setup):
    _, model, X, y, _ = setup
    net = E.ExactPLoRA(model, 0, seed=0)
    assert E.finetune(net, X, y, steps=5, lr=0.1) == []
    assert net.n_changed() == 0
    with torch.no_grad():
        assert torch.equal(net(X), model(input_ids=X).logits)


@pytest.mark.parametrize("p", [7, 40])
def test_exactly_the_chosen_entries_change(setup, p):
    _, model, X, y, _ = setup
    net = E.ExactPLoRA(model, p, seed=3)
    assert sum(q.numel() for q in net.parameters() if q.requires_grad) == p
    E.finetune(net, X, y, steps=5, lr=0.1)
    flat = torch.cat([t.detach().flatten() for t in net.lora_tensors().values()])
    changed = set(torch.nonzero(flat != net.theta0).flatten().tolist())
    assert changed <= set(net.idx.tolist())  # nothing outside the subset moved
    assert len(changed) == net.n_effective() <= p  # and every entry that can move did


def test_all_lora_entries_change_with_full_budget(setup):
    _, model, X, y, _ = setup
    n = E.ExactPLoRA(model, 0).n_lora
    net = E.ExactPLoRA(model, n, seed=0)
    E.finetune(net, X, y, steps=3, lr=0.05)
    assert net.n_effective() == n and net.n_changed() == n
    base = {k: v.clone() for k, v in model.state_dict().items()}
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in base.items())  # base untouched


def test_invalid_budgets(setup):
    _, model, *_ = setup
    n = E.ExactPLoRA(model, 0).n_lora
    with pytest.raises(ValueError, match="p must be in"):
        E.ExactPLoRA(model, -1)
    with pytest.raises(ValueError, match="p must be in"):
        E.ExactPLoRA(model, n + 1)
    with pytest.raises(TypeError, match="p must be an int"):
        E.select_entries(10, 2.5)


def test_gap_closure_arithmetic():
    np.testing.assert_allclose(E.gap_closure([0.25, 0.625, 1.0], 0.25, 1.0), [0, 0.5, 1])
    np.testing.assert_allclose(E.gap_closure(0.55, 0.3, 0.8), 0.5)
    with pytest.raises(ValueError, match="ceiling"):
        E.gap_closure(0.5, 0.6, 0.6)


def test_frontier_picks_best_validation_lr():
    recs = [dict(p=1, lr=0.1, seed=s, val=0.5, test=0.4) for s in (0, 1)]
    recs += [dict(p=1, lr=1.0, seed=s, val=0.7, test=0.6 + 0.1 * s) for s in (0, 1)]
    f = E.frontier(recs)
    assert f[1]["lr"] == 1.0 and f[1]["test"] == pytest.approx(0.65)


def test_logistic_fit_recovers_known_parameters():
    p = np.repeat(np.logspace(0, 4, 12), 2)
    true = (0.95, 1.5, np.log(50.0))
    acc = E.MODELS["logistic"][0](p, *true, 0.25)
    acc = acc + np.random.default_rng(0).normal(0, 0.003, len(p))
    fit = E.fit_curve("logistic", p, acc, 0.25)
    np.testing.assert_allclose(fit["params"], true, rtol=0.05)
    # G = 0.5 of a ceiling equal to the asymptote is reached at p = exp(b) = 50
    assert E.params_for_gap(fit, 0.5, 0.95) == pytest.approx(50, rel=0.05)
    best = E.compare_fits(p, acc, 0.25)[0]
    assert best["name"] == "logistic"
    boot = E.bootstrap_params_for_gap(p, acc, 0.25, 0.95, n_boot=30)
    assert boot[0.5]["lo"] <= 50 <= boot[0.5]["hi"]
    with pytest.raises(ValueError, match="name"):
        E.fit_curve("cubic", p, acc, 0.25)
    with pytest.raises(ValueError, match="q must be"):
        E.params_for_gap(fit, 1.5, 0.95)


def test_fit_restarts_never_worsen_the_fit_and_are_validated():
    # a steep step in log p: the default start can stop in a local minimum, restarts cannot do worse
    p = np.logspace(0, 3.5, 15)
    acc = E.MODELS["logistic"][0](p, 0.98, 8.0, np.log(40.0), 0.3)
    acc = acc + np.random.default_rng(2).normal(0, 0.03, len(p))
    for name in E.MODELS:
        one, many = E.fit_curve(name, p, acc, 0.3), E.fit_curve(name, p, acc, 0.3, restarts=10)
        assert many["rss"] <= one["rss"] + 1e-12
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="restarts"):
            E.fit_curve("logistic", p, acc, 0.3, restarts=bad)


def test_aic_null_test_rates_and_validation():
    p = np.logspace(0, 3.5, 12)
    acc = E.MODELS["logistic"][0](p, 0.95, 3.0, np.log(40.0), 0.3)
    acc = acc + np.random.default_rng(3).normal(0, 0.02, len(p))
    out = E.aic_null_test(p, acc, 0.3, n_sim=5, restarts=0)
    assert out["n_sim"] == min(5, out["n_sim"]) and out["sigma"] > 0
    assert set(out["observed"]) == set(out["p_margin"]) == set(E.MODELS) - set(E.LOGISTIC)
    assert 0 <= out["p_not_best"] <= 1 and all(0 <= v <= 1 for v in out["p_margin"].values())
    pb = out["p_best"]
    assert pb["both"] <= min(pb["aic"], pb["bic"]) and out["p_not_best"] == pytest.approx(1 - pb["aic"])
    # a given noise level replaces the fit's residual sd; with a tiny one only the smooth broken power
    # law, which contains the logistic, can still beat it (by chance, through its extra parameter)
    tiny = E.aic_null_test(p, acc, 0.3, n_sim=5, restarts=0, sigma=1e-4)
    assert tiny["sigma"] == 1e-4 and all(v == 0 for k, v in tiny["p_margin"].items() if k != "smooth broken power law")
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="n_sim"):
            E.aic_null_test(p, acc, 0.3, n_sim=bad)
    with pytest.raises(ValueError, match="sigma"):
        E.aic_null_test(p, acc, 0.3, n_sim=2, sigma=0.0)


def test_bootstrap_interval_with_unreachable_draws():
    # resamples whose logistic never reaches the gap give p = inf: the upper end of the
    # interval is then inf (an unbounded interval), never the nan of inf - inf
    p = np.repeat(np.logspace(0, 4, 8), 2)
    acc = E.MODELS["logistic"][0](p, 0.6, 1.5, np.log(500.0), 0.25)
    acc = acc + np.random.default_rng(1).normal(0, 0.02, len(p))
    with np.errstate(invalid="raise"):
        boot = E.bootstrap_params_for_gap(p, acc, 0.25, 0.64, n_boot=40)
    assert boot[0.9]["hi"] == np.inf and np.isfinite(boot[0.9]["lo"])


def test_smoke_run_budget(setup):
    tok, model, X, y, choices = setup
    data = dict(X_train=X, y_train=y, X_val=X, y_val=y, X_test=X, y_test=y, choices=choices)
    rec = E.run_budget(model, 5, 0.1, 0, data, steps=3)
    assert 0 <= rec["test"] <= 1 and rec["n_changed"] == rec["n_effective"] <= 5
    full = E.run_budget(model, "full", 1e-3, 0, data, steps=2)
    assert "n_changed" not in full


def test_rival_laws_have_ceilings_and_the_broken_power_laws_nest_the_logistic():
    p = np.logspace(0, 4, 30)
    assert set(E.MODELS) == {"logistic", "generalised logistic", "power law", "saturating exp",
                             "broken power law", "smooth broken power law"}
    assert set(E.LOGISTIC) == {"logistic", "generalised logistic"}
    # nu = 1 is the logistic; the generalised form stays finite where (1 + e^-z)^(-1/nu) would overflow
    np.testing.assert_allclose(E.MODELS["generalised logistic"][0](p, 0.95, 1.7, 3.0, 1.0, 0.25),
                               E.MODELS["logistic"][0](p, 0.95, 1.7, 3.0, 0.25), rtol=1e-12)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        g = E.MODELS["generalised logistic"][0](p, 0.95, 20.0, 9.0, 0.05, 0.25)
    assert np.all(np.isfinite(g)) and g.min() == pytest.approx(0.25) and g.max() <= 0.95
    # every law saturates: none exceeds its ceiling parameter acc_inf
    assert E.MODELS["power law"][0](p, 0.9, 0.2, 0.5, 0.25).max() == pytest.approx(0.9)
    assert E.MODELS["smooth broken power law"][0](p, 0.9, 30.0, 1.0, 0.5, 0.25).max() <= 0.9
    assert E.MODELS["broken power law"][0](p, 0.9, 30.0, 1.0, 0.25).max() <= 0.9
    # with sharpness f = 1/a and slope c = a, the smooth broken power law is the logistic in log p
    a, b = 1.7, np.log(40.0)
    np.testing.assert_allclose(E.MODELS["smooth broken power law"][0](p, 0.95, np.exp(b), a, 1 / a, 0.25),
                               E.MODELS["logistic"][0](p, 0.95, a, b, 0.25), rtol=1e-10)
    # the piecewise law is flat at Acc_0 up to its break and is the smooth law's sharp-break limit
    pw = E.MODELS["broken power law"][0](p, 0.95, 40.0, 0.8, 0.25)
    assert np.all(pw[p <= 40] == 0.25) and np.all(np.diff(pw) >= 0)
    np.testing.assert_allclose(E.MODELS["smooth broken power law"][0](p, 0.95, 40.0, 0.8, 1e-3, 0.25), pw,
                               atol=1e-3)
    # a pure (capped) power law is recognised as such by AIC
    acc = E.MODELS["power law"][0](p, 0.9, 0.05, 0.4, 0.25) + np.random.default_rng(1).normal(0, 0.002, len(p))
    assert E.compare_fits(p, acc, 0.25)[0]["name"] in ("power law", "smooth broken power law")


def test_lr_grid_is_per_budget_and_validated():
    assert E.lr_grid(1) == [0.3, 1.0, 3.0]
    assert E.lr_grid(100)[2] == pytest.approx(0.3) and E.lr_grid(3072)[2] < E.lr_grid(100)[2]
    assert E.lr_grid("full") == [1e-3, 3e-3]
    for bad in (0, -3, 2.5, True, "all"):
        with pytest.raises(ValueError, match="p must be"):
            E.lr_grid(bad)


def test_prequential_mdl(setup):
    tok, model, X, y, choices = setup
    r = E.prequential_mdl(model, X, y, choices, block=8, steps_per_block=1, lr=1e-3)
    assert len(r["per_block"]) == 4 and r["uniform_bits"] == pytest.approx(32 * 2.0)
    assert r["bits"] == pytest.approx(sum(r["per_block"])) and r["bits"] > 0
    # the first block is coded by the untrained model: equal to its cross-entropy in bits
    with torch.no_grad():
        lp = torch.log_softmax(model(input_ids=X[:8]).logits[:, -1][:, choices], -1)
    pos = (y[:8, None] == choices[None]).float().argmax(1)
    assert r["per_block"][0] == pytest.approx(float(-lp[torch.arange(8), pos].sum() / np.log(2)), rel=1e-5)
    with pytest.raises(ValueError, match="block"):
        E.prequential_mdl(model, X, y, choices, block=0)


def test_exact_p_training_and_mdl_run_on_the_given_device(setup, any_device):
    tok, model, X, y, choices = setup
    X, y, choices = X.to(any_device), y.to(any_device), choices.to(any_device)
    net = E.ExactPLoRA(model, 40, seed=3).to(any_device)
    hist = E.finetune(net, X, y, steps=3, lr=0.1)
    assert len(hist) == 3 and all(np.isfinite(hist))
    assert net.delta.device.type == any_device.type
    assert 0 <= E.accuracy(net, X, y, choices) <= 1
    assert net.n_changed() == net.n_effective() <= 40
    r = E.prequential_mdl(model.to(any_device), X, y, choices, block=16, steps_per_block=1, lr=1e-3)
    r_lora = E.prequential_mdl(model, X, y, choices, p=20, block=16, steps_per_block=1, lr=0.1)
    model.to("cpu")
    assert len(r["per_block"]) == 2 and r["bits"] > 0
    assert len(r_lora["per_block"]) == 2 and r_lora["bits"] > 0


def test_mdl_code_pays_for_the_chosen_rate(setup):
    tok, model, X, y, choices = setup
    runs = [dict(lr=lr, **E.prequential_mdl(model, X, y, choices, p=30, block=8, steps_per_block=1, lr=lr))
            for lr in (0.01, 0.1, 1.0)]
    best = min(runs, key=lambda r: r["bits"])
    code = E.mdl_code(runs)
    assert code["lr"] == best["lr"] and code["n_rates"] == 3
    assert code["bits"] == pytest.approx(best["bits"] + np.log2(3))
    assert code["bits_per_example"] == pytest.approx(code["bits"] / len(y))
    with pytest.raises(ValueError, match="non-empty"):
        E.mdl_code([])


def test_smoke_caps_the_sweep(setup, monkeypatch):
    tok, model, X, y, choices = setup
    data = dict(X_train=X, y_train=y, X_val=X, y_val=y, X_test=X, y_test=y, choices=choices)
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    out = E._sweep_model(model, data, E.ExactPLoRA(model, 0).n_lora, steps=50, seeds=range(3),
                         budgets=E.SWEEP["full"]["budgets"])
    # two budgets (the first and "all") + full fine-tuning, their lr grids, two seeds; two steps each
    assert {r["p"] for r in out["records"]} == {1, E.ExactPLoRA(model, 0).n_lora, "full"}
    assert {r["seed"] for r in out["records"]} == {0, 1}
    assert E.finetune(E.ExactPLoRA(model, 5), X, y, steps=50, lr=0.1).__len__() == 2
    assert set(E.SWEEP) == {"small", "full"} and E.SWEEP["small"]["budgets"] == E.BUDGETS


def test_entry_point_runs_from_a_gpt2_style_checkpoint(gpt2_style_checkpoint):
    from neurips25.lm import pretrained

    model, tok = pretrained(str(gpt2_style_checkpoint))
    assert tok.pad_token_id != 0
    # a BPE that merges symbols still gives one token per symbol (equal prompt lengths)
    from neurips25.lm import build_tokenizer

    bpe = build_tokenizer("bpe", [p for p, _ in E.majority_pairs(200, seed=5)] + list("1234"), vocab_size=300)
    assert len(bpe("aabba", add_special_tokens=False)["input_ids"]) < 5
    X, _ = E.encode_pairs(bpe, E.majority_pairs(8, marker="#", seed=0))
    assert X.shape == (8, 11)
    data = E.make_data(tok, n_train=16, n_val=16, n_test=16)
    assert data["X_train"].shape[0] == 16 and data["choices"].shape == (4,)
    assert int(data["X_train"].max()) < len(tok)
    rec = E.run_budget(model, 10, 0.3, 0, data, steps=2)
    assert 0 <= rec["test"] <= 1 and rec["n_changed"] == rec["n_effective"] <= 10
    r = E.prequential_mdl(model, data["X_train"], data["y_train"], data["choices"], block=8, steps_per_block=1)
    assert len(r["per_block"]) == 2 and r["uniform_bits"] == pytest.approx(16 * 2.0) and r["bits"] > 0
    out = E.run_all(tok=tok, base_models={"gpt2-style": model}, steps=1, budgets=(3, "all"), mdl_block=32,
                    mdl_steps=1, mdl_labels=64, mdl_budgets=(3,))
    assert set(out["pretrained"]) == {"gpt2-style"} and "random_init" not in out
    assert 0 <= out["pretrained"]["gpt2-style"]["acc0"] <= 1


def test_rise_study_validates_budgets_and_adds_only_rise_budgets():
    # the extra budgets lie strictly inside the stored grid's rise and are new points
    assert all(1 < p < 300 and p not in E.BUDGETS for p in E.RISE_BUDGETS)
    for bad in ([], [0], [2.5], [True], ["all"]):
        with pytest.raises(ValueError, match="budgets"):
            E.rise_study(bad)


def test_subset_study_covers_every_budget():
    assert E.SUBSET_BUDGETS[-1] == "all" and len(E.SUBSET_BUDGETS) == len(E.BUDGETS) + len(E.RISE_BUDGETS)
    assert set(E.BUDGETS[:-1]) | set(E.RISE_BUDGETS) == set(E.SUBSET_BUDGETS[:-1])
    assert set(E.SUBSETS) == {"small", "full"} and all(s["subsets"] >= 3 for s in E.SUBSETS.values())


@pytest.mark.parametrize("study", [E.subset_study, E.teaching_study])
def test_multi_subset_studies_validate_budgets_and_sizes(study):
    for bad in ([], [0], [2.5], [True], ["full"]):
        with pytest.raises(ValueError, match="budgets"):
            study(bad)
    for name in ("subsets", "n_val", "n_test"):
        with pytest.raises(ValueError, match=name):
            study(**{name: 0})


def test_subsets_cli_merges_one_model_into_the_stored_file(tmp_path, monkeypatch):
    from neurips25.results import load_results, save_results

    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    out = tmp_path / "elicitation.json"
    save_results("elicitation", {"pretrained": {}, "subsets": {"7": {"acc0": 0.5, "records": []}}},
                 command="python -m neurips25.elicitation", seed=0, path=out)
    E.main(["--subsets", "--models", "0", "--out", str(out)])
    E.main(["--subsets", "--models", "0", "--out", str(out)])  # a re-run replaces, never duplicates
    got = load_results("elicitation", out)
    assert got["command"] == "python -m neurips25.elicitation; python -m neurips25.elicitation --subsets --models 0"
    data = got["data"]
    assert list(data["subsets"]) == ["0", "7"] and data["subsets"]["7"]["records"] == []
    recs = data["subsets"]["0"]["records"]
    # smoke: two budgets (the first and "all"), two subsets (seeds 0, 1), no full fine-tuning
    assert {r["seed"] for r in recs} == {0, 1} and "full" not in {r["p"] for r in recs}
    assert data["subset_settings"]["subsets"] == E.SUBSETS["small"]["subsets"]


def test_extend_lr_edges_follows_a_winning_edge_and_stops_inside(monkeypatch):
    def fake(model, p, lr, seed, data, steps=40):  # validation accuracy peaks at lr = 1
        return dict(p=p, lr=lr, seed=seed, val=1 - abs(np.log10(lr)) / 10, test=0.5)

    monkeypatch.setattr(E, "run_budget", fake)
    recs = [fake(None, p, lr, s, None) for p, lrs in {5: [0.01, 0.033, 0.111], 50: [0.3, 1.0, 3.0]}.items()
            for lr in lrs for s in (0, 1)]
    out = E.extend_lr_edges(None, recs, {}, max_steps=3)
    new = [r for r in out[len(recs):]]
    # p = 5: the top rate wins, so x3 steps follow it up to the peak (0.333, 1.0), then stop past it
    assert sorted({r["lr"] for r in new if r["p"] == 5}) == [0.333, 0.999, 2.997]
    assert {r["seed"] for r in new} == {0, 1} and not any(r["p"] == 50 for r in new)  # interior: unchanged
    assert E.frontier(out)[5]["lr"] == 0.999
    with pytest.raises(ValueError, match="factor"):
        E.extend_lr_edges(None, recs, {}, factor=1.0)
    with pytest.raises(ValueError, match="max_steps"):
        E.extend_lr_edges(None, recs, {}, max_steps=-1)


def test_teaching_study_is_the_stored_random_init_control(monkeypatch):
    # finer budgets where the single-subset control crossed G = 0.9, ending at every LoRA entry
    assert E.TEACHING_BUDGETS[-1] == "all" and {1000, 2000} <= set(E.TEACHING_BUDGETS)
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    out = E.teaching_study((3, "all"), steps=1, subsets=2, n_val=8, n_test=8)
    # the control is the sweep's random-init model: its weights do not depend on the global seed
    tok = E.task_tokenizer()
    torch.manual_seed(123)
    a = E.random_init(tok).state_dict()
    torch.manual_seed(456)
    assert all(torch.equal(v, E.random_init(tok).state_dict()[k]) for k, v in a.items())
    assert {r["seed"] for r in out["records"]} == {0, 1} and "full" not in {r["p"] for r in out["records"]}
    assert 0 <= out["acc0"] <= 1
