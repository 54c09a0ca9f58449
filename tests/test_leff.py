"""Tests for neurips25.leff: partitions, capacities, importance, sampling, aggregation, compression,
the accountant and one federated round per method."""
import numpy as np
import pytest
import torch

from neurips25.data import load_digits_tensors
from neurips25.leff import (
    Client,
    LoRALinear,
    Method,
    Server,
    add_lora,
    block_probabilities,
    capacity_profile,
    check_capacities,
    choose_blocks,
    compress_segment,
    dirichlet_split,
    distill_loss,
    fedavg,
    layerwise_aggregate,
    n_compressed,
    round_time,
    run_blocks,
    run_method,
    step_cost,
    taylor_importance,
)
from neurips25.runtime import seed_everything
from neurips25.vision import TinyViT


def _setup(n_clients=3, per=40):
    seed_everything(0)
    X, y = load_digits_tensors()
    clients = [Client(i, X[i * per:(i + 1) * per], y[i * per:(i + 1) * per] % 5) for i in range(n_clients)]
    return TinyViT(num_classes=5), clients, X[-64:], y[-64:] % 5


def _run_round(model, clients, caps, method, proxy=None, seed=0):
    srv = Server(model, clients, caps, method, proxy, local_steps=3, batch_size=16, seed=seed)
    before = srv.state()
    results = [c.fit(s, p) for c, s, p in srv.configure_round(0)]
    srv.aggregate(results)
    return before, srv.state(), srv


# --- aggregation ----------------------------------------------------------------------------------

def test_leff_with_full_capacity_equals_fedavg_exactly():
    model, clients, _, _ = _setup()
    import copy

    _, fa, _ = _run_round(copy.deepcopy(model), clients, [6, 6, 6], Method("fedavg"))
    _, lf, srv = _run_round(copy.deepcopy(model), clients, [6, 6, 6], Method("leff", r=1.0))
    assert all(p.block == tuple(range(6)) for p in srv.last_plans)
    assert fa.keys() == lf.keys()
    for k in fa:
        assert torch.equal(fa[k], lf[k]), k


def test_layerwise_aggregate_reduces_to_fedavg_and_keeps_untouched():
    g = {"a": torch.randn(3), "b": torch.randn(2, 2), "c": torch.randn(4)}
    states = [{k: v + i for k, v in g.items()} for i in range(1, 4)]
    n = [5, 1, 7]
    full = layerwise_aggregate(g, list(zip(states, n)))
    ref = fedavg(states, n)
    for k in g:
        assert torch.equal(full[k], ref[k])
    part = layerwise_aggregate(g, [({"a": states[0]["a"]}, 5), ({"a": states[1]["a"], "b": states[1]["b"]}, 1)])
    assert part["c"] is g["c"]
    assert torch.equal(part["b"], states[1]["b"])                      # S_l = {client 1} only
    assert torch.allclose(part["a"], (5 * states[0]["a"] + states[1]["a"]) / 6)


@pytest.mark.parametrize("n", [[0, 0], [-1, 1], [1.5, 2], [True, 1]])
def test_fedavg_and_layerwise_aggregate_reject_bad_n_samples(n):
    g = {"a": torch.zeros(2)}
    states = [{"a": torch.ones(2)}, {"a": 2 * torch.ones(2)}]
    with pytest.raises(ValueError, match="n_samples"):
        fedavg(states, n)
    with pytest.raises(ValueError, match="n_samples"):
        layerwise_aggregate(g, list(zip(states, n)))


def test_unselected_layers_stay_bit_identical_in_a_round():
    model, clients, X, _ = _setup(2)
    before, after, srv = _run_round(model, clients, [1, 2], Method("leff", sampling="roundrobin", r=0.5),
                                    proxy=X)
    trained = {l for p in srv.last_plans for l in p.block}
    assert trained == {0, 1, 2}                                        # round 0: starts 0 and 1
    for k in before:
        if k.startswith("blocks."):
            changed = not torch.equal(before[k], after[k])
            if int(k.split(".")[1]) not in trained or "omega" in k:
                assert not changed, k
    assert not torch.equal(before["blocks.0.attn.qkv.weight"], after["blocks.0.attn.qkv.weight"])
    assert torch.equal(before["pos_embed"], after["pos_embed"])


def test_aggregate_validation():
    g = {"a": torch.zeros(3)}
    with pytest.raises(ValueError, match="at least one"):
        layerwise_aggregate(g, [])
    with pytest.raises(ValueError, match="not in the global state"):
        layerwise_aggregate(g, [({"z": torch.zeros(3)}, 1)])
    with pytest.raises(ValueError, match="shape"):
        layerwise_aggregate(g, [({"a": torch.zeros(2)}, 1)])
    with pytest.raises(ValueError, match="n_samples"):
        layerwise_aggregate(g, [({"a": torch.zeros(3)}, 0)])


# --- sampling --------------------------------------------------------------------------------------

@pytest.mark.parametrize("L", [1, 2, 3, 6])
def test_block_probabilities_are_a_softmax_over_valid_starts(L):
    imp = torch.tensor([0.1, 3.0, 0.5, 0.2, 2.0, 0.05], dtype=torch.float64)
    p = block_probabilities(imp, L, temperature=0.2)
    assert p.shape == (6 - L + 1,)
    assert torch.isclose(p.sum(), torch.tensor(1.0, dtype=torch.float64))
    share = imp / imp.sum()
    B = torch.stack([share[k:k + L].sum() for k in range(6 - L + 1)])
    assert torch.allclose(p, torch.softmax(B / 0.2, 0))
    assert torch.allclose(p, block_probabilities(1e6 * imp, L, 0.2))     # scale-free (normalised shares)
    assert torch.allclose(block_probabilities(imp, L, 1e9), torch.full_like(p, 1 / len(p)))


def test_choose_blocks_respects_capacity():
    rng = np.random.default_rng(0)
    imp = torch.rand(6)
    for sampling in ("importance", "random", "roundrobin"):
        for t in range(5):
            ks = choose_blocks([1, 2, 3, 6], 6, sampling, t, rng, imp)
            assert all(0 <= k <= 6 - L for k, L in zip(ks, [1, 2, 3, 6]))
    with pytest.raises(ValueError, match="sampling"):
        choose_blocks([1], 6, "greedy", 0, rng, imp)
    with pytest.raises(ValueError, match="importance"):
        choose_blocks([1], 6, "importance", 0, rng, None)


@pytest.mark.parametrize("bad", [0, 7, -1])
def test_invalid_capacities_raise(bad):
    with pytest.raises(ValueError, match="between 1 and depth=6"):
        check_capacities([1, bad], 6)
    with pytest.raises(ValueError, match="between 1 and depth=6"):
        capacity_profile(4, (1, bad), 6)
    with pytest.raises(ValueError, match="between 1 and depth=6"):
        block_probabilities(torch.ones(6), bad)
    model, clients, _, _ = _setup(2)
    with pytest.raises(ValueError, match="between 1 and depth=6"):
        Server(model, clients, [1, bad], Method())


def test_capacity_and_method_validation():
    assert capacity_profile(8) == (1, 2, 3, 1, 2, 3, 1, 2)
    with pytest.raises(ValueError, match="capacities"):
        check_capacities([], 6)
    with pytest.raises(ValueError, match="int"):
        check_capacities([1.5], 6)
    with pytest.raises(ValueError, match="kind"):
        Method("fedprox")
    with pytest.raises(ValueError, match="r must"):
        Method(r=0.0)
    with pytest.raises(ValueError, match="sampling"):
        Method(sampling="best")
    with pytest.raises(ValueError, match="temperature"):
        block_probabilities(torch.ones(6), 2, temperature=0)
    with pytest.raises(ValueError, match="non-negative"):
        block_probabilities(torch.tensor([1.0, -1.0]), 1)
    model, clients, _, _ = _setup(2)
    with pytest.raises(ValueError, match="entries"):
        Server(model, clients, [1, 2, 3], Method())
    with pytest.raises(ValueError, match="proxy"):
        Server(model, clients, [1, 2], Method(r=0.5))


# --- data ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.1, 1.0, 100.0])
def test_dirichlet_split_covers_every_sample_once(alpha):
    y = np.repeat(np.arange(5), 60)
    parts = dirichlet_split(y, 8, alpha, seed=1)
    assert len(parts) == 8 and min(len(p) for p in parts) >= 8
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(len(y)))


def test_dirichlet_alpha_controls_heterogeneity():
    y = np.repeat(np.arange(5), 200)

    def n_classes(alpha):
        return np.mean([len(np.unique(y[p])) for p in dirichlet_split(y, 8, alpha, seed=0)])

    assert n_classes(0.1) < n_classes(100.0) == 5


def test_dirichlet_validation():
    with pytest.raises(ValueError, match="alpha"):
        dirichlet_split([0, 1], 2, 0.0)
    with pytest.raises(ValueError, match="n_clients"):
        dirichlet_split([0, 1], 0, 1.0)
    with pytest.raises(ValueError, match="labels"):
        dirichlet_split([], 2, 1.0)
    with pytest.raises(ValueError, match="exceeds"):
        dirichlet_split([0, 1, 0], 2, 1.0, min_size=2)
    with pytest.raises(ValueError, match="alpha"):
        dirichlet_split([0, 1], 2, True)


# --- importance, compression, LoRA, accountant ---------------------------------------------------------

def test_taylor_importance_matches_definition():
    torch.manual_seed(0)
    layers = [torch.nn.Linear(3, 3), torch.nn.Linear(3, 2)]
    x = torch.randn(5, 3)
    loss = layers[1](torch.tanh(layers[0](x))).pow(2).sum()
    imp = taylor_importance(loss, layers)
    loss = layers[1](torch.tanh(layers[0](x))).pow(2).sum()
    loss.backward()
    ref = [sum(((p.grad * p) ** 2).sum() for p in layer.parameters()) for layer in layers]
    assert torch.allclose(imp, torch.stack(ref).double())
    with pytest.raises(ValueError, match="scalar"):
        taylor_importance(torch.ones(2), layers)


def test_compression_shrinks_and_distillation_lowers_E():
    assert [n_compressed(n, 0.5) for n in range(6)] == [0, 1, 1, 2, 2, 3]
    assert n_compressed(5, 1.0) == 5 and n_compressed(4, 0.25) == 1
    with pytest.raises(ValueError, match="r must"):
        n_compressed(3, 1.5)
    with pytest.raises(ValueError, match="r must"):
        n_compressed(3, True)
    with pytest.raises(ValueError, match="n_layers"):
        n_compressed(True, 0.5)
    model, _, X, _ = _setup()
    with torch.no_grad():
        x0 = model.embed(X)
        hidden, attns = run_blocks(model.blocks, x0, model.n_patches)
    blocks = list(model.blocks[1:5])

    def E(students):
        with torch.no_grad():
            h, a = run_blocks(students, hidden[0], model.n_patches)
        return float(distill_loss(h, [hidden[2], hidden[4]], a, [attns[2], attns[4]], 0.5))

    init = compress_segment(blocks, hidden[0], hidden[1:5], attns[1:5], 0.5, model.n_patches, steps=0)
    tuned = compress_segment(blocks, hidden[0], hidden[1:5], attns[1:5], 0.5, model.n_patches, steps=15)
    assert len(init) == len(tuned) == 2
    assert E(tuned) < E(init)
    assert len(compress_segment(blocks, hidden[0], hidden[1:5], attns[1:5], 1.0, model.n_patches)) == 4


def test_lora_starts_at_the_base_model():
    model, _, X, _ = _setup()
    with torch.no_grad():
        ref = model(X)
        out = add_lora(model, 2)(X)
    assert torch.allclose(ref, out)
    assert isinstance(model.blocks[0].attn.qkv, LoRALinear)
    with pytest.raises(ValueError, match="rank"):
        LoRALinear(torch.nn.Linear(2, 2), 0)


def test_step_cost_and_round_time():
    model, _, X, y = _setup()
    full = step_cost(model, X[:16], y[:16])
    for p in model.parameters():
        p.requires_grad_(False)
    for p in model.blocks[5].parameters():
        p.requires_grad_(True)
    last = step_cost(model, X[:16], y[:16])
    assert last.trainable == sum(p.numel() for p in model.blocks[5].parameters())
    assert last.flops < full.flops and last.memory < full.memory
    assert all(p.grad is None for p in model.parameters())
    assert round_time([2.0, 4.0], [1.0, 4.0], K=3) == 6.0
    with pytest.raises(ValueError, match="speeds"):
        round_time([1.0], [0.0], 1)


@pytest.mark.parametrize("flops, speeds, K, arg", [
    ([1.0, 2.0], [1.0, float("nan")], 1, "speeds"),
    ([1.0, 2.0], [1.0, float("inf")], 1, "speeds"),
    ([1.0, float("nan")], [1.0, 1.0], 1, "flops_per_step"),
    ([1.0, -2.0], [1.0, 1.0], 1, "flops_per_step"),
    ([1.0, 2.0], [1.0, 1.0], -3, "K"),
    ([1.0, 2.0], [1.0, 1.0], 0, "K"),
    ([1.0, 2.0], [1.0, 1.0], 2.5, "K"),
    ([1.0, 2.0], [1.0, 1.0], True, "K"),
])
def test_round_time_validation(flops, speeds, K, arg):
    with pytest.raises(ValueError, match=arg):
        round_time(flops, speeds, K)


def test_leff_client_cost_counts_the_built_sub_model_once_per_shape():
    from neurips25.leff import ModelSpec, build_model, leff_client_cost, set_trainable
    from neurips25.leff.federation import trainable_names

    # L = 2 at k = 1, r = 0.5: one compressed layer before the block and two after it
    torch.manual_seed(0)
    model = build_model(ModelSpec(layer_map=(-1, 1, 2, -1, -1)))
    set_trainable(model, trainable_names(model, "leff", range(1, 3)))
    x, y = torch.rand(32, 64), torch.arange(32) % 5
    direct = step_cost(model, x, y)
    state = torch.get_rng_state()
    c = leff_client_cost(2, 1, 0.5)
    assert c == direct
    assert torch.equal(torch.get_rng_state(), state)          # the global RNG is left alone
    c.parts["mutated"] = 1                                     # a copy: the cache is unharmed
    assert leff_client_cost(2, 1, 0.5) == direct
    # L = 1 at k = 1 and at k = 2 (r = 0.5): the same shape (1 before, 2 after), the same count
    assert leff_client_cost(1, 1, 0.5) == leff_client_cost(1, 2, 0.5)
    # every layer trained, nothing compressed: LEFF's client is FedAvg's
    assert leff_client_cost(6, 0, 1.0, kind="fedavg") == leff_client_cost(6, 0, 1.0)
    with pytest.raises(ValueError, match="k must be"):
        leff_client_cost(2, 5, 0.5)


# --- smoke -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["fedavg", "bitfit", "lora", "leff"])
def test_one_round_per_method(name):
    model, clients, X, y = _setup(2)
    before, after, srv = _run_round(model, clients, [1, 3], Method(name, r=0.5), proxy=X)
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert "head.weight" in changed and 0.0 <= srv.evaluate(X, y) <= 1.0
    if name == "lora":
        assert any("lora_B" in k for k in changed) and not any("base" in k for k in changed)
    if name == "bitfit":
        assert all(k.endswith("bias") or "norm" in k or k.startswith("head") for k in changed)


def test_run_method_smoke():
    out = run_method(Method("leff", r=0.5), alpha=1.0, seed=0, rounds=1, pretrain_epochs=1, local_steps=2)
    assert len(out["acc"]) == 1 and out["capacities"] == [1, 2, 3, 1, 2, 3, 1, 2]
    assert out["flops"] > 0 and out["round_time"] > 0 and len(out["importance"]) == 6


def test_importance_controls_without_compression():
    """The r = 1 controls differ from LEFF (r=1) only in how blocks are chosen."""
    from dataclasses import replace

    from neurips25.leff.experiment import METHODS

    ref = METHODS["LEFF (r=1)"]
    for name, sampling in (("LEFF (random, r=1)", "random"), ("LEFF (round-robin, r=1)", "roundrobin")):
        assert METHODS[name] == replace(ref, sampling=sampling)


def test_cli_rejects_unknown_methods():
    from neurips25.leff.experiment import main

    with pytest.raises(SystemExit):
        main(["--methods", "LEFF (typo)", "--seeds", "0"])


def test_sweep_small_is_the_stored_sweep():
    """``python -m neurips25.leff`` (SWEEP["small"]) regenerates notebooks/results/leff.json."""
    from neurips25.leff.experiment import METHODS, SWEEP, TUNED
    from neurips25.results import load_results

    data = load_results("leff")["data"]
    small = SWEEP["small"]
    assert data["rounds"] == small["run"]["rounds"] and set(data["runs"]) == set(METHODS)
    for by_alpha in data["runs"].values():
        assert sorted(by_alpha, key=float) == [str(a) for a in small["alphas"]]
        assert all(sorted(map(int, by_seed)) == small["seeds"] for by_seed in by_alpha.values())
    assert set(SWEEP["full"]) == set(small) and {"0.1", "1.0"} <= {str(a) for a in SWEEP["full"]["alphas"][:2]}
    tuning, grid = data["tuning"], small["tune"]
    assert set(tuning["selected"]) == set(tuning["validation"]) == set(TUNED) and tuning["alpha"] == grid["alpha"]
    for by_lr in tuning["validation"].values():   # equal budgets: the same grid and seeds for every method
        assert sorted(map(float, by_lr)) == sorted(grid["lrs"])
        assert all(sorted(map(int, by_seed)) == grid["seeds"] for by_seed in by_lr.values())
    for name, lr in tuning["selected"].items():   # re-run on the test split exactly where the lr changed
        assert (name in tuning["runs"]) == (lr != METHODS[name].lr)
    for key in ("capacities", "dynamic"):
        study, cfg = data[key], small[key]
        names = [",".join(map(str, p)) + ("" if s == "fixed" else f" {s}")
                 for p in cfg["profiles"] for s in cfg.get("schedules", ["fixed"])]
        assert study["alpha"] == cfg["alpha"] and list(study["runs"]) == names
        assert all(sorted(map(int, by_seed)) == cfg["seeds"] for by_seed in study["runs"].values())
    assert all("round_capacities" in r for by_seed in data["dynamic"]["runs"].values() for r in by_seed.values())
    ep, cfg = data["epochs"], small["epochs"]   # the one-epoch protocol: every method re-tuned and re-run
    assert ep["run"] == {**small["run"], **cfg["run"]} and set(ep["selected"]) == set(ep["runs"]) == set(cfg["methods"])
    for name, by_alpha in ep["runs"].items():
        assert sorted(map(float, ep["validation"][name])) == sorted(cfg["lrs"])
        assert [float(a) for a in by_alpha] == cfg["test_alphas"]
        assert all(sorted(map(int, by_seed)) == cfg["test_seeds"] for by_seed in by_alpha.values())
        assert all(len(r["acc"]) == cfg["run"]["rounds"] for by_seed in by_alpha.values() for r in by_seed.values())
    dr, cfg = data["draw"], small["draw"]   # per-round capacity draws, LEFF re-tuned
    assert dr["run"] == {**small["run"], **cfg["run"]} and set(dr["selected"]) == set(dr["runs"]) == {"LEFF"}
    assert sorted(map(float, dr["validation"]["LEFF"])) == sorted(cfg["lrs"]) == sorted(grid["lrs"])
    assert all(sorted(map(int, by_seed)) == grid["seeds"] for by_seed in dr["validation"]["LEFF"].values())
    assert [float(a) for a in dr["runs"]["LEFF"]] == cfg["test_alphas"] == small["alphas"]
    for by_seed in dr["runs"]["LEFF"].values():
        assert sorted(map(int, by_seed)) == cfg["test_seeds"] == small["seeds"]
        assert all(len(r["round_capacities"]) == small["run"]["rounds"] for r in by_seed.values())


def test_capacity_study_runs_uniform_profiles_and_validates():
    from neurips25.leff import capacity_study

    out = capacity_study([(2,)], alpha=1.0, seeds=[0], rounds=1, pretrain_epochs=1, local_steps=1)
    (run,) = out["runs"]["2"].values()
    assert out["alpha"] == 1.0 and run["capacities"] == [2] * 8 and len(run["acc"]) == 1
    assert all(len(b) == 2 for b in run["blocks"][0])         # every client trained a 2-layer block
    with pytest.raises(ValueError, match="profiles"):
        capacity_study([])
    with pytest.raises(ValueError, match="capacities"):
        capacity_study([(7,)])
    with pytest.raises(ValueError, match="seeds"):
        capacity_study([(1,)], seeds=[])


@pytest.mark.parametrize("schedule", ["rotate", "shuffle"])
def test_capacity_schedules_move_the_same_levels_and_local_epochs_set_the_steps(schedule):
    model, clients, X, _ = _setup(3)
    sizes = [len(c.X) for c in clients]
    srv = Server(model, clients, [1, 2, 3], Method("leff", r=1.0), X, local_steps=4, batch_size=16,
                 local_epochs=2, capacity_schedule=schedule)
    seen = []
    for t in range(4):
        plans = [p for _, _, p in srv.configure_round(t)]
        assert sorted(srv.capacities) == [1, 2, 3]                       # the same levels every round
        assert [len(p.block) for p in plans] == list(srv.capacities)     # block length = this round's L_i
        assert [p.steps for p in plans] == [2 * int(np.ceil(n / 16)) for n in sizes]
        seen.append(srv.capacities)
    assert len(set(seen)) > 1                                            # ... on different clients
    if schedule == "rotate":
        assert seen[:3] == [(1, 2, 3), (2, 3, 1), (3, 1, 2)]
    fixed = Server(model, clients, [1, 2, 3], Method("fedavg"), local_steps=4)
    fixed.configure_round(0)
    assert fixed.capacities == (1, 2, 3) and all(p.steps == 4 for p in fixed.last_plans)
    with pytest.raises(ValueError, match="local_epochs"):
        Server(model, clients, [1, 2, 3], Method("fedavg"), local_epochs=0)
    with pytest.raises(ValueError, match="capacity_schedule"):
        Server(model, clients, [1, 2, 3], Method("fedavg"), capacity_schedule="random")


def test_drawn_capacities_are_fresh_each_round_and_leave_the_other_methods_alone():
    model, clients, X, _ = _setup(3)
    srv = Server(model, clients, [1, 2, 3], Method("leff", r=1.0), X, local_steps=1, capacity_schedule="draw")
    seen = []
    for t in range(12):
        plans = [p for _, _, p in srv.configure_round(t)]
        assert set(srv.capacities) <= {1, 2, 3} and [len(p.block) for p in plans] == list(srv.capacities)
        seen.append(srv.capacities)
    assert len({c for caps in seen for c in caps}) == 3 and any(len(set(c)) < 3 for c in seen)  # not a permutation
    again = Server(model, clients, [1, 2, 3], Method("leff", r=1.0), X, local_steps=1, capacity_schedule="draw")
    for t, caps in enumerate(seen):                                      # seeded: the same draws again
        again.configure_round(t)
        assert again.capacities == caps
    # FedAvg's plans (hence its runs) do not depend on the capacities or their schedule
    plans = {}
    for sched in ("fixed", "draw"):
        srv = Server(model, clients, [1, 2, 3], Method("fedavg"), local_steps=2, capacity_schedule=sched)
        plans[sched] = [p for t in range(3) for _, _, p in srv.configure_round(t)]
    assert plans["fixed"] == plans["draw"]


def test_capacity_study_schedules_record_the_round_capacities():
    from neurips25.leff import capacity_study

    out = capacity_study([(1, 2, 3)], alpha=1.0, seeds=[0], rounds=2, pretrain_epochs=1, local_steps=1,
                         schedules=["rotate"])
    (run,) = out["runs"]["1,2,3 rotate"].values()
    assert out["schedules"] == ["rotate"] and len(run["round_capacities"]) == 2
    for caps, blocks in zip(run["round_capacities"], run["blocks"]):
        assert sorted(caps) == sorted(run["capacities"]) and [len(b) for b in blocks] == caps
    with pytest.raises(ValueError, match="schedules"):
        capacity_study([(1,)], schedules=["weekly"])


def test_epoch_study_reruns_every_method_under_the_paper_protocol():
    from neurips25.leff import epoch_study

    out = epoch_study(["FedAvg"], lrs=[3e-3], seeds=[0], test_seeds=[0], test_alphas=[1.0],
                      run=dict(rounds=1, local_epochs=1), base=dict(rounds=15, pretrain_epochs=1))
    assert out["run"] == {"rounds": 1, "local_epochs": 1, "pretrain_epochs": 1}
    assert out["selected"] == {"FedAvg": 3e-3}                           # the sweep's rate, re-run anyway
    assert len(out["runs"]["FedAvg"]["1.0"]["0"]["acc"]) == 1


def test_draw_study_retunes_leff_under_per_round_capacity_draws():
    from neurips25.leff import draw_study, protocol_study

    out = draw_study(lrs=[3e-3], seeds=[0], test_seeds=[0], test_alphas=[1.0],
                     base=dict(rounds=1, pretrain_epochs=1, local_steps=1))
    assert out["run"] == {"rounds": 1, "pretrain_epochs": 1, "local_steps": 1, "capacity_schedule": "draw"}
    assert set(out["runs"]) == {"LEFF"} and len(out["runs"]["LEFF"]["1.0"]["0"]["round_capacities"]) == 1
    with pytest.raises(TypeError, match="run"):
        protocol_study(["LEFF"], run="draw")


def test_label_skew_units():
    from neurips25.leff import label_skew

    y = np.arange(400) % 4
    mild, harsh = label_skew(y, 100.0, seeds=[0, 1]), label_skew(y, 0.05, seeds=[0, 1])
    assert mild["classes"] == 4 and len(mild["layer_tv"]) == 3 and mild["layer_tv"][0] == pytest.approx(0)
    assert mild["entropy"] > 0.95 > 0.5 > harsh["entropy"] and harsh["layer_tv"][2] > mild["layer_tv"][2]
    with pytest.raises(ValueError, match="labels"):
        label_skew(np.zeros(10), 1.0)
    with pytest.raises(ValueError, match="seeds"):
        label_skew(y, 1.0, seeds=[])


def test_validation_split_is_held_out_of_the_clients_data():
    from neurips25.leff import task_data

    base, tuned = task_data(0), task_data(0, val_fraction=0.25)
    n = len(base["train"][1])
    assert len(tuned["train"][1]) + len(tuned["val"][1]) == n and len(tuned["val"][1]) == int(np.ceil(0.25 * n))
    assert torch.equal(tuned["test"][0], base["test"][0]) and "val" not in base
    with pytest.raises(ValueError, match="val_fraction"):
        task_data(0, val_fraction=1.0)


def test_final_accuracy_and_tune_validation():
    from neurips25.leff import final_accuracy, tune_lr

    assert final_accuracy([0.1, 0.5, 0.6, 0.7]) == pytest.approx(0.6)
    assert final_accuracy([0.4], last=3) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="acc"):
        final_accuracy([])
    with pytest.raises(ValueError, match="last"):
        final_accuracy([0.5], last=0)
    with pytest.raises(ValueError, match="methods"):
        tune_lr(["LEFF (typo)"])
    with pytest.raises(ValueError, match="lrs"):
        tune_lr(lrs=[0.0])
    with pytest.raises(ValueError, match="val_fraction"):
        tune_lr(val_fraction=0.0)


def test_model_side_on_any_device(any_device):
    """Importance, block runs, distillation loss, cost and evaluation run where the model lives."""
    model, clients, X, y = _setup(2)
    model = model.to(any_device)
    Xd, yd = X.to(any_device), y.to(any_device)
    loss = torch.nn.functional.cross_entropy(model(Xd), yd)
    imp = taylor_importance(loss, list(model.blocks))
    assert imp.shape == (6,) and imp.device.type == any_device.type and bool((imp >= 0).all())
    with torch.no_grad():
        hidden, attns = run_blocks(model.blocks, model.embed(Xd), model.n_patches)
        assert hidden[-1].device.type == any_device.type
        assert torch.isfinite(distill_loss(hidden[-1:], hidden[-1:], attns[-1:], attns[-1:], 0.5))
    assert step_cost(model, Xd[:16], yd[:16]).flops > 0
    srv = Server(model, clients, [1, 3], Method("fedavg"), local_steps=1, batch_size=16)
    assert 0.0 <= srv.evaluate(X, y) <= 1.0   # CPU data, model on any_device


def test_peft_study_guards_and_smoke_cli(tmp_path, monkeypatch):
    """``--peft-study`` runs alone, at the stored sweep's rounds; under NEURIPS25_SMOKE=1 it writes
    the shared-rate runs and the re-tuned rank-1 FedLoRA (a capped run, flagged as smoke)."""
    import json

    from neurips25.leff import peft_study
    from neurips25.leff.experiment import main

    for argv in (["--peft-study", "--tune"], ["--peft-study", "--alphas", "1.0"],
                 ["--peft-study", "--methods", "LEFF"], ["--jobs", "2"], ["--peft-study", "--jobs", "0"],
                 ["--peft-study", "--draw"]):
        with pytest.raises(SystemExit):
            main(argv)
    for bad, match in ((dict(shared_lr=0.0), "shared_lr"), (dict(shared_lr=1e-3, rank=0), "rank"),
                       (dict(shared_lr=1e-3, methods=["LoRA"]), "methods"),
                       (dict(shared_lr=1e-3, seeds=[]), "seeds"), (dict(shared_lr=1e-3, jobs=0), "jobs")):
        with pytest.raises(ValueError, match=match):
            peft_study(**bad)
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    out = tmp_path / "peft.json"
    main(["--peft-study", "--out", str(out)])
    payload = json.loads(out.read_text())
    data = payload["data"]
    assert payload["smoke"] and payload["command"] == "python -m neurips25.leff --peft-study --jobs 1"
    assert data["shared_lr"] == 1e-3 and data["rank"] == 1 and data["alpha"] == 0.1
    assert set(data["shared"]) == {"LEFF", "FedLoRA", "FedBitFit"} and list(data["shared"]["LEFF"]) == ["0"]
    lora = data["lora"]
    assert set(lora["selected"]) == set(lora["runs"]) == {"FedLoRA (r=1)"}
    assert list(lora["runs"]["FedLoRA (r=1)"]) == ["0.1"] and len(lora["validation"]["FedLoRA (r=1)"]) == 2


def test_peft_study_is_the_stored_study():
    """``python -m neurips25.leff --peft-study`` (SWEEP["small"]["peft"]) regenerates
    notebooks/results/leff_peft_study.json, at the sweep's rounds and FedAvg's selected rate."""
    from neurips25.leff.experiment import SWEEP
    from neurips25.results import load_results

    payload, cfg = load_results("leff_peft_study"), SWEEP["small"]["peft"]
    study, sweep = payload["data"], load_results("leff")["data"]
    assert not payload.get("smoke") and payload["command"].startswith("python -m neurips25.leff --peft-study")
    assert study["run"] == SWEEP["small"]["run"] and study["run"]["rounds"] == sweep["rounds"]
    assert study["shared_lr"] == cfg["shared_lr"] == sweep["tuning"]["selected"]["FedAvg"]
    assert (study["alpha"], study["rank"]) == (cfg["alpha"], cfg["rank"])
    assert sorted(study["shared"]) == sorted(cfg["methods"])
    assert all(sorted(map(int, by_seed)) == cfg["seeds"] for by_seed in study["shared"].values())
    name = f"FedLoRA (r={cfg['rank']})"
    val = study["lora"]["validation"][name]
    assert sorted(map(float, val)) == cfg["lrs"] and all(sorted(map(int, v)) == cfg["tune_seeds"] for v in val.values())
    assert sorted(map(int, study["lora"]["runs"][name][str(cfg["alpha"])])) == cfg["seeds"]
