"""Tests for neurips25.token_reduction (frequency-aware token reduction)."""
import math

import pytest
import torch

from neurips25.runtime import seed_everything
from neurips25.token_reduction import (
    METHODS,
    ReductionPlan,
    TinyViT,
    TokenState,
    apply_reduction,
    cls_probe,
    dc_cosine_stats,
    evaluate,
    fine_tune,
    hf_amplitude_per_layer,
    hf_energy,
    hf_energy_per_layer,
    hf_lf_partition,
    hf_scores,
    high_pass,
    measure_macs,
    reduce_evit,
    reduce_ours,
    reduce_random,
    reduce_tome,
    reduction_step,
    single_thread,
    train_tiny_vit,
    unmerged_map,
)


@pytest.fixture(scope="module")
def model():
    seed_everything(0)
    return TinyViT(dim=32, depth=4, heads=4).eval()


@pytest.fixture(scope="module")
def images():
    g = torch.Generator().manual_seed(1)
    return torch.rand(6, 64, generator=g)


def _inputs(B=3, n_patches=16, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, 1 + n_patches, d, generator=g)
    attn = torch.rand(B, 2, 1 + n_patches, 1 + n_patches, generator=g).softmax(-1)
    return x, attn, TokenState.initial(B, n_patches)


def _reduce(method, x, attn, state, n_keep, window=1):
    if method in ("ours", "keep_lf"):
        C, is_dc = reduce_ours(attn, state, n_keep, 4, window, keep_high=method == "ours")
        return apply_reduction(x, state, C, is_dc)
    if method == "evit":
        C, W = reduce_evit(attn, state, n_keep)
        return apply_reduction(x, state, C, W=W)
    if method == "tome":
        return apply_reduction(x, state, reduce_tome(x, state, n_keep))
    return apply_reduction(x, state, reduce_random(state, n_keep, torch.Generator().manual_seed(0)))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n_keep", [3, 8, 12])
def test_reducers_token_count_and_cls(method, n_keep):
    x, attn, state = _inputs()
    x2, s2 = _reduce(method, x, attn, state, n_keep)
    assert x2.shape == (3, 1 + n_keep, 8)
    assert torch.equal(x2[:, 0], x[:, 0])                   # CLS untouched and first
    assert torch.equal(s2.src[:, 0], state.src[:, 0])
    assert (s2.src.sum(1) <= 1 + 1e-6).all()               # each original token used at most once


def test_tome_conserves_total_size():
    x, attn, state = _inputs()
    _, s2 = _reduce("tome", x, attn, state, 4)               # needs two matching rounds
    assert torch.allclose(s2.size.sum(-1), torch.full((3,), 17.0))


def test_dc_token_is_lf_mean():
    x, attn, state = _inputs()
    C, is_dc = reduce_ours(attn, state, 6, grid=4, window=1)
    x2, s2 = apply_reduction(x, state, C, is_dc)
    lf = C[:, -1, :].bool()
    assert is_dc[:, -1].all() and not is_dc[:, :-1].any()
    assert int(lf.sum(-1)[0]) == 16 - 5
    for b in range(3):
        assert torch.allclose(x2[b, -1], x[b, lf[b]].mean(0), atol=1e-6)
    # second reduction: the DC token is updated recursively (size-weighted mean of all its tokens)
    attn2 = torch.rand(3, 2, 7, 7).softmax(-1)
    C2, d2 = reduce_ours(attn2, s2, 3, grid=4, window=1)
    x3, s3 = apply_reduction(x2, s2, C2, d2)
    members = (s3.src[:, -1, :] > 0)
    for b in range(3):
        assert torch.allclose(x3[b, -1], x[b, members[b]].mean(0), atol=1e-5)


def test_local_windows_assign_by_position():
    x, attn, state = _inputs(B=1)
    C, is_dc = reduce_ours(attn, state, 8, grid=4, window=2)
    assert int(is_dc.sum()) == 4
    patch_rows = torch.arange(16) // 4
    patch_cols = torch.arange(16) % 4
    for j in range(4):
        members = C[0, 5 + j, 1:].bool()
        win = (patch_rows[members] // 2) * 2 + patch_cols[members] // 2
        assert (win == j).all()


def test_no_reduction_path_equals_plain_vit(model, images):
    plain = model(images)
    full = model(images, ReductionPlan("ours", keep_ratio=1.0, layers=(0, 1, 2), window=1))
    # keep_ratio=1 with ours still forms an (empty) DC slot, so compare the identity plans below
    assert full.shape == plain.shape
    for method in ("evit", "tome", "random"):
        out = model(images, ReductionPlan(method, keep_ratio=1.0, layers=(1,)))
        assert torch.allclose(out, plain, atol=1e-5), method
    rew = model(images, ReductionPlan("ours", keep_ratio=0.5, layers=(), reweight=True))
    assert torch.allclose(rew, plain, atol=1e-5)            # omega = 0 leaves attention unchanged


@pytest.mark.parametrize("method", METHODS)
def test_prop31_hf_energy_never_increases(method):
    for seed in range(5):
        x, attn, state = _inputs(seed=seed)
        before = hf_energy(x, relative=False)
        x2, s2 = _reduce(method, x, attn, state, 6)
        after = hf_energy(x2, s2.valid, relative=False)
        assert (after <= before + 1e-5).all()


def test_sized_hf_energy_is_that_of_the_unmerged_map():
    # weighting tokens by their sizes = broadcasting each merged token back onto its patches
    x, attn, state = _inputs(B=2, seed=3)
    x2, s2 = _reduce("tome", x, attn, state, 6)
    unmerged = s2.src.transpose(1, 2) @ x2            # (B, 1+N, d): each patch gets its token
    sized = hf_energy(x2, s2.valid, weight=s2.size)
    assert torch.allclose(sized, hf_energy(unmerged), atol=1e-5)
    assert torch.allclose(hf_energy(x2, s2.valid, weight=s2.valid), hf_energy(x2, s2.valid))


@pytest.mark.parametrize("keep_high", [True, False])
def test_no_dc_keeps_top_or_bottom_scores_and_drops_the_rest(keep_high):
    # "HF only" / "LF only" (dc=False): the whole budget goes to kept tokens, nothing is aggregated
    x, attn, state = _inputs()
    C, is_dc = reduce_ours(attn, state, 6, grid=4, keep_high=keep_high, dc=False)
    assert C.shape == (3, 7, 17) and not is_dc.any()
    assert torch.equal(C.sum(-1), torch.ones(3, 7))                   # every row a single token
    s = hf_scores(attn, state)[:, 1:]
    kept = C[:, 1:, 1:].sum(1).bool()
    for b in range(3):
        order = s[b].argsort(descending=keep_high)[:6]
        assert set(order.tolist()) == set(kept[b].nonzero().flatten().tolist())
    x2, _ = apply_reduction(x, state, C, is_dc)
    assert torch.equal(x2[:, 1:], (C[:, 1:] @ x))                     # kept tokens unchanged
    with pytest.raises(ValueError, match="dc must be a bool"):
        ReductionPlan("keep_lf", 0.5, (1,), dc="no")
    C1, d1 = reduce_ours(attn, state, 6, grid=4)                       # one with a DC token ...
    _, s1 = apply_reduction(x, state, C1, d1)
    with pytest.raises(ValueError, match="cannot follow"):             # ... cannot go on without one
        reduce_ours(torch.rand(3, 2, 7, 7).softmax(-1), s1, 3, grid=4, dc=False)


def test_unmerged_map_and_fourier_amplitude(model, images):
    x, attn, state = _inputs(B=2, seed=3)
    x2, s2 = _reduce("tome", x, attn, state, 6)
    U = unmerged_map(x2, s2, grid=4)                                   # (B, d, 4, 4)
    assert U.shape == (2, 8, 4, 4)
    assert torch.allclose(U.flatten(2).transpose(1, 2), (s2.src.transpose(1, 2) @ x2)[:, 1:], atol=1e-6)
    # a pruned patch gets the mean of the covered ones
    x3, s3 = _reduce("random", x, attn, state, 6)
    U3 = unmerged_map(x3, s3, grid=4).flatten(2).transpose(1, 2)
    gone = s3.src[:, 1:, 1:].sum(1) == 0
    assert torch.allclose(U3[0, gone[0]], x3[0, 1:].mean(0).expand(int(gone[0].sum()), -1), atol=1e-6)
    with pytest.raises(ValueError, match="must match"):
        unmerged_map(x2, s2, grid=3)
    amp = hf_amplitude_per_layer(model, images)
    assert amp.shape == (model.depth,) and (amp < 0).all()             # HF below DC for these maps
    with pytest.raises(ValueError, match="non-empty"):
        hf_amplitude_per_layer(model, images[:0])


def test_paper_ablations_runs_and_validates(model, images):
    from neurips25.token_reduction import paper_ablations

    y = torch.arange(len(images)) % 10
    out = paper_ablations(model, images, y, layers=(1, 2), n_amp=4, n_step=3, train=(images, y))
    assert set(out["acc"]) == {"LF only", "HF only"} and set(out["schedule"]) == {"0,1,2", "1,2,3"}
    assert all(set(v) == {"ours", "LF only", "ToMe", "EViT", "random"} for v in out["schedule"].values())
    assert all(len(v) == model.depth for v in out["amplitude"].values())
    assert "ToMe (every block)" in out["amplitude"] and 0 < out["macs_ratio"]["ours"] < 1
    assert set(out["amplitude_noisy"]) == set(out["step"]) == {"ours", "EViT", "ToMe", "random"}
    assert len(out["probe"]) == model.depth
    assert "probe" not in paper_ablations(model, images, y, layers=(1, 2), n_amp=2, n_step=2)
    with pytest.raises(ValueError, match="n_amp"):
        paper_ablations(model, images, y, layers=(1, 2), n_amp=0)
    with pytest.raises(ValueError, match="n_step"):
        paper_ablations(model, images, y, layers=(1, 2), n_step=0)
    with pytest.raises(ValueError, match="noise"):
        paper_ablations(model, images, y, layers=(1, 2), noise=-1.0)
    with pytest.raises(ValueError, match="equally long"):
        paper_ablations(model, images, y[:2], layers=(1, 2))


def test_paper_protocols_runs_and_validates(model, images, monkeypatch):
    """The paper's Fig. 5a/6 protocols: every reducer fine-tuned (a bounded smoke run here) and
    training-free, one 50% reduction per layer, Fourier amplitude per block; inputs are checked."""
    from neurips25.token_reduction import PAPER_PROTOCOLS, paper_protocols

    monkeypatch.setenv("NEURIPS25_SMOKE", "1")        # fine-tuning: 4 batches
    y = torch.arange(len(images)) % 10
    out = paper_protocols(model, images, y, ft_epochs=1, single_layers=(1,), methods=("ours", "ToMe"),
                          ablation_layers=(1, 2), n_amp=3)
    assert set(out["single"]) == {"1"} and set(out["single"]["1"]) == {"ours", "ToMe"}
    r = out["single"]["1"]["ToMe"]
    assert len(r["amp"]) == len(r["amp_free"]) == model.depth and 0 <= r["acc"] <= 1
    # training-free numbers are the unreduced-weights ones: the same for any fine-tuning length
    assert r["amp_free"] == hf_amplitude_per_layer(model, images[:3], ReductionPlan("tome", 0.5, (1,))).tolist()
    assert set(out["ablation"]) == {"LF only", "HF only", "ours"}
    assert all(0 <= v["ft"] <= 1 and 0 <= v["free"] <= 1 for v in out["ablation"].values())
    assert set(PAPER_PROTOCOLS["full"]) == set(PAPER_PROTOCOLS["small"])
    with pytest.raises(ValueError, match="ft_epochs"):
        paper_protocols(model, images, y, ft_epochs=0)
    with pytest.raises(ValueError, match="n_amp"):
        paper_protocols(model, images, y, n_amp=0)
    with pytest.raises(ValueError, match="equally long"):
        paper_protocols(model, images, y[:2])


@pytest.mark.parametrize("argv", [["--paper-protocols"], ["--paper-ablations"], ["--replication"],
                                  ["--model", "vit64", "--paper-protocols", "--paper-ablations"],
                                  ["--model", "vit64", "--replication", "--paper-ablations"],
                                  ["--model", "vit64", "--early"], ["--model", "vit64", "--ft-epochs", "10"]])
def test_paper_cli_flags_need_vit64_and_one_run(argv, capsys):
    from neurips25.token_reduction import main

    with pytest.raises(SystemExit):
        main(argv)
    err = capsys.readouterr().err
    assert "needs --model vit64" in err or "separate runs: give one" in err or "needs --replication" in err


def test_replication_rejects_bad_ft_epochs():
    from neurips25.token_reduction import main_replication

    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="ft_epochs must be a positive int"):
            main_replication(ft_epochs=bad)


def test_main_replication_stores_fine_tuned_accuracies(tmp_path, monkeypatch):
    import json

    from neurips25.token_reduction import REPLICATION, VIT64_SWEEP, main_replication

    for scale, cfg in REPLICATION.items():  # fresh seeds, the scale's own protocol
        assert not set(cfg["seeds"]) & set(VIT64_SWEEP[scale]["seeds"]) and len(cfg["seeds"]) == 30
        assert cfg["epochs"] == VIT64_SWEEP[scale]["epochs"]
        assert cfg["ft_epochs"] == VIT64_SWEEP[scale]["ft_epochs"]
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")      # one seed, a few training batches, 64 test images
    out = main_replication("small", seeds=[5], out=tmp_path / "rep.json")
    stored = json.loads(out.read_text())
    assert stored["command"].endswith("--model vit64 --replication --seeds 5")
    (r,) = stored["data"]["runs"]
    assert r["seed"] == 5 and r["n_test"] == 64 and set(r["finetuned"]) == {"ours", "EViT", "ToMe"}
    assert all(0.0 <= a <= 1.0 for a in (r["acc_full"], *r["finetuned"].values()))


def test_main_paper_ablations_stores_every_shipped_seed(tmp_path, monkeypatch):
    import json

    from neurips25.token_reduction import main_paper_ablations

    monkeypatch.setenv("NEURIPS25_SMOKE", "1")      # one seed, 64 test and 64 training images
    out = main_paper_ablations("small", out=tmp_path / "abl.json")
    data = json.loads(out.read_text())["data"]
    assert [r["seed"] for r in data["runs"]] == [0] and data["settings"]["layers"] == [2, 4, 6]
    r = data["runs"][0]
    assert set(r) >= {"acc", "schedule", "amplitude", "amplitude_noisy", "step", "probe", "macs_ratio"}
    assert 0.6 < r["macs_ratio"]["ours"] < 0.75


def test_reduction_step_measures_one_reduction(model, images):
    # keeping every token (ToMe at keep 1) removes nothing and averages nothing
    r = reduction_step(model, images, ReductionPlan("tome", 1.0, (1,)), 1)
    assert abs(r["hf_removed"]) < 1e-5 and r["largest_group"] == 1.0 and math.isnan(r["group_cos"])
    for method in ("ours", "tome", "random"):     # plain (size-weighted) means: HF energy can only fall
        r = reduction_step(model, images, ReductionPlan(method, 0.5, (1,)), 1)
        assert -1e-6 <= r["hf_removed"] <= 1.0, method
    ours = reduction_step(model, images, ReductionPlan("ours", 0.5, (0,)), 0)
    assert ours["largest_group"] == 16 - 7      # 8 kept = 7 HF tokens + one DC token of the other 9
    assert -1.0 <= ours["group_cos"] <= 1.0
    with pytest.raises(ValueError, match="layer"):
        reduction_step(model, images, ReductionPlan("ours", 0.5, (1,)), model.depth)
    with pytest.raises(ValueError, match="X"):
        reduction_step(model, images[:0], ReductionPlan("ours", 0.5, (1,)), 1)


def test_cls_probe_reads_a_label_the_cls_token_carries(model):
    X = torch.cat([torch.zeros(6, 64), torch.ones(6, 64)])     # two distinct images, one per class
    y = torch.tensor([0] * 6 + [1] * 6)
    acc = cls_probe(model, (X, y), (X, y), batch=5)
    assert acc.shape == (model.depth,) and torch.equal(acc, torch.ones(model.depth))
    with pytest.raises(ValueError, match="ridge"):
        cls_probe(model, (X, y), (X, y), ridge=0.0)
    with pytest.raises(ValueError, match="train"):
        cls_probe(model, (X, y[:3]), (X, y))


def test_high_pass_removes_mean():
    x = torch.randn(2, 5, 3)
    assert torch.allclose(high_pass(x).mean(-2), torch.zeros(2, 3), atol=1e-6)


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, "0.5", True])
def test_invalid_keep_ratio(bad):
    with pytest.raises(ValueError, match="keep_ratio"):
        ReductionPlan("ours", keep_ratio=bad)


def test_invalid_plan_arguments(model, images):
    with pytest.raises(ValueError, match="method"):
        ReductionPlan("pool")
    with pytest.raises(ValueError, match="score"):
        ReductionPlan(score="square")
    with pytest.raises(ValueError, match="layers"):
        model(images, ReductionPlan(layers=(9,)))
    with pytest.raises(ValueError, match="keep budget"):
        model(images, ReductionPlan("ours", keep_ratio=0.2, window=2, layers=(0,)))
    with pytest.raises(ValueError, match="window must divide"):
        model(images, ReductionPlan("ours", keep_ratio=0.9, window=3, layers=(0,)))
    with pytest.raises(ValueError, match="images"):
        model(torch.zeros(2, 10))
    with pytest.raises(ValueError, match="patch_size"):
        TinyViT(image_size=8, patch_size=3)


def test_diagnostics_shapes(model, images):
    e = hf_energy_per_layer(model, images, ReductionPlan("tome", 0.5, (1, 2)))
    assert e.shape == (4,) and ((e >= 0) & (e <= 1)).all()
    cos = dc_cosine_stats(model, images)
    assert cos["lf"].shape == (4,) and torch.isfinite(cos["hf"]).all()
    part = hf_lf_partition(model, images[0], layer=1, keep_ratio=0.5, window=2)
    assert part["hf"].shape == (4, 4) and int(part["hf"].sum()) == 4
    assert measure_macs(model, ReductionPlan("ours", 0.5, (0,))) < measure_macs(model)


def test_smoke_training_and_finetune():
    with single_thread():   # a tiny model: one thread is faster on a busy machine and thread-count-independent
        model, splits = train_tiny_vit(0, epochs=2, batch_size=32, dim=16, depth=2, heads=2, lr=3e-3)
    Xte, yte = splits["test"]
    assert len(yte) == 719
    assert evaluate(model, Xte, yte) > 0.15   # above chance (0.1) after 2 tiny epochs
    plan = ReductionPlan("ours", 0.5, (0,), reweight=True)
    with single_thread():
        student = fine_tune(model, plan, epochs=1, batch_size=128)
    assert any(float(p.detach().abs().sum()) > 0 for n, p in student.named_parameters() if "omega" in n)
    assert all(float(p.detach().abs().sum()) == 0 for n, p in model.named_parameters() if "omega" in n)  # teacher intact
    assert 0.0 <= evaluate(student, Xte, yte, plan) <= 1.0


def test_signed_score_tells_ignored_from_attended_tokens():
    """Key 1 is ignored by every query, key 2 gets twice its uniform share: the signed (paper's)
    score ranks 2 far above 1, while the |A^HP| sum gives both the same score."""
    n = 5
    attn = torch.full((1, 1, n, n), 1.0 / n)
    attn[..., 1] = 0.0
    attn[..., 2] = 2.0 / n
    state = TokenState.initial(1, n - 1)
    signed, absolute = hf_scores(attn, state, "signed"), hf_scores(attn, state, "abs")
    assert signed[0, 2] > 0 > signed[0, 1]
    assert torch.isclose(absolute[0, 1], absolute[0, 2])
    assert torch.allclose(signed.sum(-1), torch.zeros(1), atol=1e-6)   # A^HP rows sum to zero
    assert ReductionPlan().score == "signed"
    with pytest.raises(ValueError, match="score must be"):
        hf_scores(attn, state, "square")


@pytest.mark.parametrize("method", METHODS)
def test_reducers_stay_on_device(method, any_device):
    x, attn, state = _inputs()
    state = TokenState(state.src.to(any_device), state.is_dc.to(any_device))
    x2, s2 = _reduce(method, x.to(any_device), attn.to(any_device), state, 8)
    assert x2.device.type == s2.src.device.type == s2.is_dc.device.type == any_device.type
    cpu, _ = _reduce(method, x, attn, _inputs()[2], 8)
    assert torch.allclose(x2.cpu(), cpu, atol=1e-5)   # same reduction on every device


def test_diagnostics_on_model_device(model, images, any_device):
    """Every diagnostic runs a model on ``any_device`` with the data on the CPU (moved to the model)."""
    import copy

    m = copy.deepcopy(model).to(any_device)
    y = torch.arange(len(images)) % 10
    for method in METHODS:
        plan = ReductionPlan(method, 0.7, (1, 2), window=1)
        assert 0.0 <= evaluate(m, images, y, plan) <= 1.0
        assert hf_energy_per_layer(m, images, plan).device.type == any_device.type
        assert hf_amplitude_per_layer(m, images, plan).device.type == any_device.type
        assert 0.0 <= reduction_step(m, images, plan, 1)["largest_group"] <= 16
    assert cls_probe(m, (images, y), (images, y)).shape == (m.depth,)
    cos = dc_cosine_stats(m, images, control=True)
    assert cos["lf"].device.type == any_device.type and torch.isfinite(cos["hf"]).all()
    assert hf_lf_partition(m, images[0], layer=1, keep_ratio=0.5)["hf"].shape == (4, 4)
    assert measure_macs(m) == measure_macs(model)
    assert evaluate(m, images, y) == evaluate(model, images, y)


def test_sweep_small_is_the_stored_sweep():
    """``python -m neurips25.token_reduction`` (SWEEP["small"]) regenerates the stored sweep."""
    from neurips25.results import load_results
    from neurips25.token_reduction import SWEEP

    stored, small = load_results("token_reduction"), SWEEP["small"]
    assert stored["command"].endswith("--seeds " + " ".join(map(str, small["seeds"])))
    assert [r["seed"] for r in stored["data"]["runs"]] == small["seeds"]
    curve = stored["data"]["runs"][0]["finetuned_curve"]["ours"]
    assert sorted(map(float, curve)) == sorted(small["ft_keeps"]) and set(SWEEP["full"]) == set(small)


def test_vit64_helpers_validate_and_run_on_device(images, any_device):
    """The 64-token model's helpers: input checks, and a shipped (encoded) state_dict loaded onto
    ``any_device`` gives the model it was saved from (training-free accuracy, MACs and energies)."""
    from neurips25.token_reduction import (
        VIT64,
        decode_state,
        encode_state,
        fine_tuned,
        load_vit64,
        plan_for,
        reduced_energies,
        run_vit64,
        train_vit64,
        training_free,
    )

    with pytest.raises(ValueError, match="name must be one of"):
        plan_for("merge-all", 0.7, (1,))
    with pytest.raises(ValueError, match="name must be one of"):
        fine_tuned(TinyViT(**VIT64), "merge-all", 0.7)
    with pytest.raises(ValueError, match="epochs must be"):
        train_vit64(0, epochs=0)
    with pytest.raises(TypeError, match="state must be"):
        encode_state({"w": 1.0})
    with pytest.raises(ValueError, match="text must be"):
        decode_state("")
    with pytest.raises(ValueError, match="stored must be"):
        load_vit64(0, {"data": {}})
    seed_everything(0)
    net = TinyViT(**VIT64).eval()
    stored = {"data": {"weights": {"0": encode_state(net.state_dict())}}}
    with pytest.raises(ValueError, match="seed must be one of"):
        load_vit64(1, stored)
    m = load_vit64(0, stored, device=any_device)
    assert next(m.parameters()).device.type == any_device.type and m.n_patches == 64
    X, y = images[:3], torch.arange(3)
    with pytest.raises(ValueError, match="X and y"):
        training_free(m, X, y[:2], (2, 4), (0.7,))
    with pytest.raises(ValueError, match="ft_keep"):
        run_vit64(m, {"test": (X, y)}, keep_ratios=(0.5,), ft_keep=0.7)
    tf = training_free(m, X, y, (2, 4), (0.7,), ("ours", "ToMe"))
    assert tf["acc"]["ours"]["0.7"] == evaluate(net, X, y, plan_for("ours", 0.7, (2, 4)))
    assert tf["macs"]["ToMe"]["0.7"] < measure_macs(m)
    e = reduced_energies(m, X, (2, 4), 0.7, ("ours",), sized=True)
    assert set(e) == {"no reduction", "ours"} and len(e["ours"]) == VIT64["depth"]


def test_vit64_sweep_small_is_the_stored_one():
    """``python -m neurips25.token_reduction --model vit64`` (VIT64_SWEEP["small"]) wrote the stored
    measurements with the shipped weights (one state_dict per seed, a few MB in all)."""
    from neurips25.results import load_results, results_path
    from neurips25.token_reduction import VIT64_SWEEP, load_vit64

    stored, small = load_results("token_reduction_vit64"), VIT64_SWEEP["small"]
    assert stored["command"].endswith("--model vit64 --seeds " + " ".join(map(str, small["seeds"])))
    assert [r["seed"] for r in stored["data"]["runs"]] == small["seeds"]
    assert sorted(stored["data"]["weights"]) == [str(s) for s in small["seeds"]]
    assert results_path("token_reduction_vit64").stat().st_size < 6e6
    assert set(VIT64_SWEEP["full"]) == set(small)
    assert sorted(map(float, stored["data"]["runs"][0]["acc"]["ours"])) == sorted(small["keep_ratios"])
    assert load_vit64(small["seeds"][-1], stored).depth == 8


def test_replication_small_is_the_stored_one():
    """``python -m neurips25.token_reduction --model vit64 --replication`` (REPLICATION["small"]) wrote
    the stored 30-seed replication, with the settings it records."""
    from neurips25.results import load_results
    from neurips25.token_reduction import REPLICATION

    stored, small = load_results("token_reduction_replication"), REPLICATION["small"]
    assert stored["command"].endswith("--replication --seeds " + " ".join(map(str, small["seeds"])))
    assert [r["seed"] for r in stored["data"]["runs"]] == small["seeds"]
    settings = {k: v for k, v in small.items() if k != "seeds"}
    assert stored["data"]["settings"] == {**settings, "layers": list(small["layers"]),
                                          "methods": list(small["methods"])}


def test_early_small_is_the_stored_one():
    """``python -m neurips25.token_reduction --model vit64 --replication --early`` (EARLY["small"]) wrote the
    stored block-0 study on the replication's seeds and base models, with the settings it records."""
    from neurips25.results import load_results
    from neurips25.token_reduction import EARLY, REPLICATION

    stored, small = load_results("token_reduction_early"), EARLY["small"]
    assert stored["command"].endswith("--replication --early --seeds " + " ".join(map(str, small["seeds"])))
    same_as_replication = {k: v for k, v in small.items() if k not in ("layers", "free_methods")}
    assert same_as_replication == {k: v for k, v in REPLICATION["small"].items() if k != "layers"}
    assert tuple(small["layers"]) == (0, 1, 2)
    runs, same = stored["data"]["runs"], load_results("token_reduction_replication")["data"]["runs"]
    assert [r["seed"] for r in runs] == small["seeds"]
    # the same base models as the replication: the unreduced accuracy agrees seed by seed, bit for bit
    assert [r["acc_full"] for r in runs] == [r["acc_full"] for r in same]
    assert all(set(r["free"]) == set(small["free_methods"]) and set(r["finetuned"]) == set(small["methods"])
               for r in runs)
    settings = {k: v for k, v in small.items() if k != "seeds"}
    assert stored["data"]["settings"] == {**settings, **{k: list(settings[k]) for k in ("layers", "methods",
                                                                                          "free_methods")}}


def test_early_ft10_is_the_stored_one():
    """``... --replication --early --ft-epochs 10`` wrote the stored ten-epoch runs: the block-0 protocol
    with ft_epochs 10 on seeds 3-14, the same trained models and training-free numbers as the 2-epoch one."""
    from neurips25.results import load_results
    from neurips25.token_reduction import EARLY

    stored, seeds = load_results("token_reduction_early_ft10"), list(range(3, 15))
    assert stored["command"].endswith("--early --ft-epochs 10 --seeds " + " ".join(map(str, seeds)))
    settings = {k: v for k, v in EARLY["small"].items() if k != "seeds"}
    assert stored["data"]["settings"] == {**settings, "ft_epochs": 10, **{
        k: list(settings[k]) for k in ("layers", "methods", "free_methods")}}
    two = {r["seed"]: r for r in load_results("token_reduction_early")["data"]["runs"]}
    runs = stored["data"]["runs"]
    assert [r["seed"] for r in runs] == seeds
    assert all(r["acc_full"] == two[r["seed"]]["acc_full"] and r["free"] == two[r["seed"]]["free"] for r in runs)
