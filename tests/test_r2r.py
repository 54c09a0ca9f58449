"""Tests of the R2R chapter module (labelling, threshold selection, routed generation)."""
import json

import pytest
import torch

from neurips25 import r2r
from neurips25.lm import build_tokenizer, generate, tiny_model, train_lm


@pytest.fixture(scope="module")
def setup():
    data = r2r.modchain(400, n_steps=1, seed=0)
    tok = build_tokenizer("word", [p + " " + a for p, a in data])
    llm = tiny_model(tok, n_layer=1, n_embd=32, n_head=2, n_positions=32, arch="llama", seed=0)
    slm = tiny_model(tok, n_layer=1, n_embd=16, n_head=2, n_positions=32, arch="llama", seed=1)
    train_lm(llm, tok, data, steps=20, mask="answer", batch_size=32)
    train_lm(slm, tok, data, steps=5, mask="answer", batch_size=32)
    return data, tok, llm, slm


def test_modchain_is_consistent():
    pairs = r2r.modchain(200, n_steps=3, seed=3)
    for p, a in pairs:
        assert r2r.is_correct(p, a)
        assert all(s in a.split() for s in r2r.SEPARATORS) or any(s in a.split() for s in r2r.SEPARATORS)
    # both operand orders of a "+" step occur, and all three separators
    firsts = {a.split()[0] == p.split()[1] for p, a in pairs if p.split()[2] == "+"}
    assert firsts == {True, False}
    assert {w for _, a in pairs for w in a.split()} >= set(r2r.SEPARATORS)
    assert all(a.split()[0] == p.split()[1] for p, a in r2r.modchain(50, swap=False, seed=1))
    with pytest.raises(ValueError, match="modulus"):
        r2r.modchain(3, modulus=11)
    with pytest.raises(ValueError, match="ops"):
        r2r.modchain(3, ops="/")


def test_restyle_redraws_only_the_separators():
    pairs = r2r.modchain(300, n_steps=2, seed=4)
    styled = r2r.restyle(pairs, (0.0, 1.0, 0.0), seed=1)
    for (p, a), (p2, a2) in zip(pairs, styled):
        assert p2 == p and r2r.is_correct(p2, a2)
        assert [t for t in a.split() if t not in r2r.SEPARATORS] == [t for t in a2.split() if t not in r2r.SEPARATORS]
        assert all(t == "," for t in a2.split() if t in r2r.SEPARATORS)
        assert r2r.step_values(a.split()) == r2r.step_values(a2.split())  # the verifier calls them neutral
    assert r2r.restyle(pairs, (1, 2, 1), seed=1) == r2r.restyle(pairs, (1, 2, 1), seed=1)
    for bad in [(1.0, 1.0), (-1.0, 1.0, 1.0), (0, 0, 0), (float("nan"), 1, 1)]:
        with pytest.raises(ValueError, match="weights"):
            r2r.restyle(pairs, bad)


def test_verifier_neutral_vs_divergent():
    base = "Q 3 + 4 - 2 3 + 4 = 2".split()
    # separator swap, same conclusions → neutral
    assert r2r.verify(base + [";", "2", "-", "2", "=", "0", ";"], base + [",", "2", "-", "2", "=", "0", ","])
    # different operand → different step value → divergent
    assert not r2r.verify(base + [";", "2", "-", "1", "=", "1", ";"], base + [";", "2", "-", "2", "=", "0", ";"])
    assert r2r.step_values("1 + 1 = 2 ; A 2".split()) == ["2", "2"]


def test_labels_identical_neutral_divergent(setup):
    _, tok, llm, _ = setup
    ids = lambda s: list(tok(s, add_special_tokens=False)["input_ids"])
    prefix, eq = ids("Q 3 + 4 3 + 4 = 2"), ids("Q 3 + 4 3 + 4 =")
    sc, co, one, two = (tok.convert_tokens_to_ids(t) for t in (";", ",", "1", "2"))
    lab = r2r.label_tokens(llm, tok, [prefix, eq], [sc, one], [sc, two])
    assert lab[0] == r2r.IDENTICAL
    assert lab[1] == r2r.DIVERGENT  # "= 1" vs "= 2": the conclusion itself differs
    # a separator swap at the end of the step: both continuations say "A <same value>" iff the LLM
    # continues the same way after ';' and ','; check against the verifier directly
    lab2 = r2r.label_tokens(llm, tok, [prefix], [sc], [co])[0]
    g = generate(llm, tok, [tok.decode(prefix + [sc]), tok.decode(prefix + [co])], max_new_tokens=8)
    cut = [r2r._words(tok, r2r._sentence(tok, t, 8)) for t in g.tokens]
    same = r2r.step_values(cut[0]) == r2r.step_values(cut[1])
    assert lab2 == (r2r.NEUTRAL if same else r2r.DIVERGENT)
    with pytest.raises(ValueError, match="same length"):
        r2r.label_tokens(llm, tok, [prefix], [sc, sc], [sc])


def test_routed_generation_endpoints(setup):
    data, tok, llm, slm = setup
    prompts = [p for p, _ in data[:12]]
    llm_only = generate(llm, tok, prompts, max_new_tokens=10)
    slm_only = generate(slm, tok, prompts, max_new_tokens=10)
    score = r2r.random_score(0)
    g0 = r2r.routed_generate(slm, llm, tok, prompts, score, 0.0, max_new_tokens=10)
    g1 = r2r.routed_generate(slm, llm, tok, prompts, score, 1.0, max_new_tokens=10)
    assert g0.tokens == llm_only.tokens and g0.llm_rate == 1.0
    assert g1.tokens == slm_only.tokens and g1.llm_rate == 0.0
    gh = r2r.routed_generate(slm, llm, tok, prompts, score, 0.5, max_new_tokens=10)
    assert 0.2 < gh.llm_rate < 0.8
    for bad in (-0.1, 1.5, True, "0.5"):
        with pytest.raises(ValueError, match="tau"):
            r2r.routed_generate(slm, llm, tok, prompts, score, bad)


def test_routed_generation_pad_id_is_not_assumed_zero(setup):
    # GPT-2/Qwen tokenizers have a real token at id 0: padding must follow the tokenizer's pad id
    import copy

    data, tok, llm, slm = setup
    tok2 = copy.deepcopy(tok)
    tok2.pad_token = "<unk>"
    assert tok2.pad_token_id != 0
    prompts = [p for p, _ in data[:6]] + ["Q 1 + 1"]  # different lengths: left padding is used
    for t, ref in ((0.0, llm), (1.0, slm)):
        g = r2r.routed_generate(slm, llm, tok2, prompts, r2r.random_score(0), t, max_new_tokens=10)
        assert g.tokens == generate(ref, tok2, prompts, max_new_tokens=10).tokens
        assert g.tokens == r2r.routed_generate(slm, llm, tok, prompts, r2r.random_score(0), t, max_new_tokens=10).tokens
    # a mixed run equals running each prompt alone (the LLM cache catch-up is per batch)
    gm = r2r.routed_generate(slm, llm, tok2, prompts, r2r.entropy_score, 0.3, max_new_tokens=10)
    for i, p in enumerate(prompts):
        assert r2r.routed_generate(slm, llm, tok2, [p], r2r.entropy_score, 0.3, max_new_tokens=10).tokens[0] == gm.tokens[i]


def _prob(router, x):
    """P(divergent) as the paper's router defines it, written out here (not the module's helper) so the
    tests below check the module against an independent computation: sigmoid(R((x - mu) / sd))."""
    return torch.sigmoid(router((x - router.mu) / router.sd))


def test_fit_router_validates_and_thresholds_on_validation(setup):
    data, tok, llm, slm = setup
    rows = r2r.collect_router_data(llm, slm, tok, [p for p, _ in data[:30]], max_new_tokens=10, top_k=4,
                                   n_samples=1)
    assert rows["query"].max() < 30 and len(rows["label"]) > 30
    n = len(rows["label"])
    tr = torch.arange(n) % 2 == 0
    rows["different"] = (torch.arange(n) % 3 == 0).float()
    rows["divergent"] = (torch.arange(n) % 5 == 0).float()
    router, tau = r2r.fit_router(rows, tr, ~tr, target="different", epochs=1)
    with torch.no_grad():
        p = _prob(router, rows["features"][~tr])
    assert tau == r2r.recall_threshold(p, rows["divergent"][~tr], 0.95)
    with pytest.raises(ValueError, match="overlap"):
        r2r.fit_router(rows, tr, tr)
    with pytest.raises(ValueError, match="target"):
        r2r.fit_router(rows, tr, ~tr, target="same")
    with pytest.raises(ValueError, match="n_samples"):
        r2r.collect_router_data(llm, slm, tok, ["Q 1 + 1"], n_samples=-1)


def test_recall_threshold_toy():
    scores = torch.tensor([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05])
    labels = torch.tensor([1, 0, 1, 0, 1, 0, 0, 1, 0, 0])
    assert r2r.recall_threshold(scores, labels, 1.0) == pytest.approx(0.2)
    assert r2r.recall_threshold(scores, labels, 0.75) == pytest.approx(0.5)
    assert r2r.recall_threshold(scores, labels, 0.5) == pytest.approx(0.7)
    tau = r2r.recall_threshold(scores, labels, 0.95)
    assert ((scores >= tau) & labels.bool()).sum() / labels.sum() >= 0.95
    with pytest.raises(ValueError, match="recall"):
        r2r.recall_threshold(scores, labels, 0.0)
    with pytest.raises(ValueError, match="positive"):
        r2r.recall_threshold(scores, torch.zeros(10), 0.9)
    with pytest.raises(ValueError, match="recall"):
        r2r.recall_threshold(scores, labels, True)
    with pytest.raises(ValueError, match="scores"):
        r2r.recall_threshold(torch.where(labels.bool(), float("nan"), scores), labels, 0.9)
    with pytest.raises(ValueError, match="scores"):
        r2r.recall_threshold(torch.full((10,), float("inf")), labels, 0.9)


def test_router_pipeline_smoke(setup):
    data, tok, llm, slm = setup
    rows = r2r.collect_router_data(llm, slm, tok, [p for p, _ in data[:40]], max_new_tokens=10, top_k=4)
    n = len(rows["label"])
    assert rows["features"].shape == (n, 2 * 16 + 4)
    assert set(rows["label"].tolist()) <= {0, 1, 2}
    assert torch.equal(rows["divergent"], (rows["label"] == 2).float())
    target = rows["different"] if 0 < rows["different"].sum() < n else (torch.arange(n) % 2).float()
    router = r2r.train_router(rows["features"], target, epochs=2)
    p = r2r.router_score(router, slm, top_k=4)(torch.randn(3, 16), torch.randn(3, len(tok)), None, None)
    assert p.shape == (3,) and bool(((p >= 0) & (p <= 1)).all())
    with pytest.raises(ValueError, match="both classes"):
        r2r.train_router(rows["features"], torch.zeros(n), epochs=1)


def test_entropy_and_cost():
    h = r2r.entropy_score(None, torch.zeros(2, 8))
    assert torch.allclose(h, torch.ones(2, dtype=torch.float64))
    assert r2r.activated_params(10, 100, 0.1, 1) == pytest.approx(21.0)
    with pytest.raises(ValueError, match="llm_rate"):
        r2r.activated_params(10, 100, 1.5)


def test_routing_and_router_data_run_on_the_given_device(setup, any_device):
    import copy

    data, tok, llm, slm = setup
    llm, slm = copy.deepcopy(llm).to(any_device), copy.deepcopy(slm).to(any_device)
    prompts = [p for p, _ in data[:8]]
    rows = r2r.collect_router_data(llm, slm, tok, prompts, max_new_tokens=8, top_k=4)
    assert rows["features"].device.type == "cpu" and rows["features"].shape[1] == 2 * 16 + 4
    target = (torch.arange(len(rows["label"])) % 2).float()
    score = r2r.router_score(r2r.train_router(rows["features"], target, epochs=1), slm, top_k=4)
    g = r2r.routed_generate(slm, llm, tok, prompts, score, 0.5, max_new_tokens=8)
    assert 0.0 <= g.llm_rate <= 1.0 and len(g.tokens) == len(prompts)
    for sc in (r2r.entropy_score, r2r.random_score(0), r2r.oracle_score(llm, tok)):
        g = r2r.routed_generate(slm, llm, tok, prompts[:3], sc, 0.5, max_new_tokens=6)
        assert 0.0 <= g.llm_rate <= 1.0


def test_smoke_caps_router_epochs(setup, monkeypatch):
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    x, y = torch.randn(64, 5), (torch.arange(64) % 2).float()
    r = r2r.train_router(x, y, epochs=50)
    assert r.trainer.current_epoch == 2


def test_entry_point_runs_from_a_gpt2_style_checkpoint(gpt2_style_checkpoint):
    """Both models from a real-style checkpoint (byte-level vocabulary, pad = eos, id 0 = "!"):
    labelling works on the decoded words, and routing pads with the tokenizer's pad id."""
    import copy

    from neurips25.lm import pretrained

    llm, tok = pretrained(str(gpt2_style_checkpoint))
    slm = copy.deepcopy(llm)
    with torch.no_grad():  # a different "small" model: perturb the copy
        for q in slm.parameters():
            q.add_(0.5 * torch.randn_like(q))
    assert tok.pad_token_id == tok.eos_token_id != 0
    prompts = [p for p, _ in r2r.modchain(4, n_steps=1, seed=0)] + ["Q 1 + 1"]
    rows = r2r.collect_router_data(llm, slm, tok, prompts, max_new_tokens=6, top_k=4)
    n, d = len(rows["label"]), llm.config.n_embd
    assert n > 0 and rows["features"].shape == (n, 2 * d + 4)
    assert set(rows["label"].tolist()) <= {0, 1, 2} and rows["query"].max() == len(prompts) - 1
    # Algorithm 1 on text: "= 1" vs "= 2" is divergent with any tokenizer
    ids = lambda s: list(tok(s, add_special_tokens=False)["input_ids"])
    one, two = ids("1"), ids("2")
    assert len(one) == len(two) == 1
    assert r2r.label_tokens(llm, tok, [ids("Q 1 + 1 1 + 1 = ")], one, two) == [r2r.DIVERGENT]
    for tau in (0.0, 0.5, 1.0):
        g = r2r.routed_generate(slm, llm, tok, prompts, r2r.entropy_score, tau, max_new_tokens=6)
        assert len(g.tokens) == len(prompts) and all(len(t) <= 6 for t in g.tokens)
        assert all(0 <= i < len(tok) for t in g.tokens for i in t) and 0.0 <= g.llm_rate <= 1.0
    assert g.llm_rate == 0.0
    assert r2r.routed_generate(slm, llm, tok, prompts, r2r.entropy_score, 0.0, max_new_tokens=6).tokens == \
        generate(llm, tok, prompts, max_new_tokens=6).tokens


def test_labels_use_the_llm_argmax_on_sampled_paths(setup, monkeypatch):
    """Algorithm 1: y_l is the LLM's greedy token at every prefix, also on a sampled answer (not the
    sampled token), and y_s the SLM's."""
    data, tok, llm, slm = setup
    seen = {}
    real = r2r.label_tokens

    def spy(llm_, tok_, prefixes, y_s, y_l, **kw):
        seen.update(prefixes=prefixes, y_s=y_s, y_l=y_l)
        return real(llm_, tok_, prefixes, y_s, y_l, **kw)

    monkeypatch.setattr(r2r, "label_tokens", spy)
    prompts = [p for p, _ in data[:6]]
    r2r.collect_router_data(llm, slm, tok, prompts, max_new_tokens=8, top_k=4, n_samples=2, temperature=2.0)
    n = len(seen["prefixes"])
    assert n > 20
    with torch.no_grad():
        for i in range(0, n, 3):
            ids = torch.tensor([[tok.bos_token_id] + list(seen["prefixes"][i])])
            assert seen["y_l"][i] == int(llm(input_ids=ids).logits[0, -1].argmax())
            assert seen["y_s"][i] == int(slm(input_ids=ids).logits[0, -1].argmax())


def test_feature_columns_and_router_score_on_a_subset(setup):
    _, tok, _, slm = setup
    assert r2r.feature_columns(3, 2) == list(range(8))
    assert r2r.feature_columns(3, 2, ("logits",)) == [6, 7]
    assert r2r.feature_columns(3, 2, ("logits", "hidden")) == [0, 1, 2, 6, 7]
    with pytest.raises(ValueError, match="inputs"):
        r2r.feature_columns(3, 2, ("attention",))
    hidden, logits = torch.randn(40, 16), torch.randn(40, len(tok))
    with torch.no_grad():
        x = r2r.router_features(slm, hidden, logits, 4)
    y = (torch.arange(40) % 3 == 0).float()
    for inputs in (("logits",), ("token", "logits"), r2r.FEATURES):
        router = r2r.train_router(x, y, epochs=1, hidden=8, n_blocks=1, dropout=0.1,
                                  columns=r2r.feature_columns(16, 4, inputs))
        with torch.no_grad():
            p = _prob(router, x).double()
        # the score function computes only the groups it needs, with the same result
        score = r2r.router_score(router, slm, 4)
        assert torch.allclose(score(hidden, logits, None, None), p, atol=1e-6)
        assert score.needs_hidden == ("hidden" in inputs)
        if not score.needs_hidden:
            assert torch.equal(score(None, logits, None, None), score(hidden, logits, None, None))
    with pytest.raises(ValueError, match="hidden"):
        r2r.router_features(slm, None, logits, 4)
    with pytest.raises(ValueError, match="columns"):
        r2r.Router(5, columns=[7])


def test_functional_mlp_is_bitwise_the_router(setup):
    x, y = torch.randn(64, 10), (torch.arange(64) % 4 == 0).float()
    for n_blocks in (0, 1, 2):
        router = r2r.train_router(x, y, epochs=1, hidden=8, n_blocks=n_blocks, dropout=0.1)
        with torch.no_grad():
            assert torch.equal(r2r._functional_mlp(router.net)(x), router.net(x))


def test_routed_generate_skips_hidden_states_a_score_does_not_read(setup):
    data, tok, llm, slm = setup
    prompts = [p for p, _ in data[:4]]
    seen = []

    def score(hidden, logits, ids, mask):
        seen.append(hidden)
        return r2r.entropy_score(hidden, logits)
    with_h = r2r.routed_generate(slm, llm, tok, prompts, score, 0.3, max_new_tokens=6)
    assert all(h is not None for h in seen)
    seen.clear()
    score.needs_hidden = False
    without = r2r.routed_generate(slm, llm, tok, prompts, score, 0.3, max_new_tokens=6)
    assert seen and all(h is None for h in seen)
    assert without.tokens == with_h.tokens and without.from_llm == with_h.from_llm
    assert r2r.entropy_score.needs_hidden is False and r2r.random_score(0).needs_hidden is False


def test_crossfit_router_thresholds_on_out_of_fold_scores(setup):
    data, tok, llm, slm = setup
    rows = r2r.collect_router_data(llm, slm, tok, [p for p, _ in data[:12]], max_new_tokens=8, top_k=4)
    n = len(rows["label"])
    rows["divergent"] = (torch.arange(n) % 4 == 0).float()
    train = rows["query"] < 10
    router, tau = r2r.crossfit_router(rows, train, k=2, epochs=1, seed=0)
    assert isinstance(router, r2r.Router) and 0.0 <= tau <= 1.0
    # out-of-fold: the threshold is the recall rule on scores of routers that did not see those rows
    qs = rows["query"][train].unique()
    perm = qs[torch.randperm(len(qs), generator=torch.Generator().manual_seed(0))]
    oof = torch.zeros(n)
    for part in perm.tensor_split(2):
        held = train & torch.isin(rows["query"], part)
        r = r2r.train_router(rows["features"][train & ~held], rows["divergent"][train & ~held], epochs=1, seed=0)
        with torch.no_grad():
            oof[held] = _prob(r, rows["features"][held])
    assert tau == pytest.approx(r2r.recall_threshold(oof[train], rows["divergent"][train], 0.95))
    with pytest.raises(ValueError, match="k must"):
        r2r.crossfit_router(rows, train, k=1)
    with pytest.raises(ValueError, match="target"):
        r2r.crossfit_router(rows, train, target="same")


def test_heldout_run_methods_are_independent_and_stored_exactly(setup):
    data, tok, llm, slm = setup
    questions = sorted({p for p, _ in data})[:8]
    rows = r2r.collect_router_data(llm, slm, tok, questions, max_new_tokens=8, top_k=4)
    n = len(rows["label"])
    rows["divergent"] = (torch.arange(n) % 4 == 0).float()
    rows["different"] = (torch.arange(n) % 2 == 0).float()
    cfg = dict(r2r.CONFIG["small"], folds=2, inner_folds=2, top_k=4,
               router=dict(inputs=("logits",), hidden=8, n_blocks=1, epochs=1))
    folds, sums, at_tau, fold_router = r2r.heldout_run(llm, slm, tok, questions, rows, 0, cfg, max_new_tokens=6)
    assert sorted(int(q) for f in folds for q in f) == list(range(len(questions)))
    assert set(sums) == set(r2r.GRIDS) and set(at_tau) == set(r2r.routers_for(("logits",)))
    assert sorted(fold_router) == [0, 1] and all(0.0 <= t <= 1.0 for _, _, t in fold_router.values())
    for m, s in sums.items():  # every threshold routes every token of the folds' questions
        assert list(s) == list(r2r.GRIDS[m])
        assert all(0 <= v[0] <= v[1] and 0 <= v[2] <= len(questions) for v in s.values())
    full = r2r.encode_run(sums, at_tau)
    assert json.loads(json.dumps(full)) == full
    back_sums, back_at = r2r.decode_run(full)
    assert r2r.encode_run(back_sums, back_at) == full
    # a subset of the methods gives the same numbers (every router training reseeds)
    _, sub_sums, sub_at, _ = r2r.heldout_run(llm, slm, tok, questions, rows, 0, cfg, max_new_tokens=6,
                                             names=("R2R", "random"))
    assert set(sub_sums) == {"R2R", "random"} and set(sub_at) == {"R2R"}
    sub = r2r.encode_run(sub_sums, sub_at)
    assert all(sub["sums"][m] == full["sums"][m] for m in sub["sums"]) and sub["at_tau"]["R2R"] == full["at_tau"]["R2R"]
    assert r2r.run_difference(sub, full, len(questions)) == 0.0
    with pytest.raises((ValueError, KeyError)):
        r2r.run_difference(full, sub, len(questions))


def test_task_and_config():
    for cfg in r2r.CONFIG.values():
        assert {"n_train", "modulus", "router", "split_seed", "slm_style"} <= set(cfg)
        r2r.routers_for(cfg["router"]["inputs"])
    train, questions = r2r.task(r2r.CONFIG["small"])
    assert len(train) == 4000 and len(questions) == 50 and questions == sorted({p for p, _ in train})
    assert r2r.accuracy([p for p, _ in train[:5]], [a for _, a in train[:5]], 5) == 1.0
    assert r2r.accuracy([p for p, _ in train[:2]], ["", train[1][1]], 5) == 0.5
    with pytest.raises(ValueError, match="prompts and texts"):
        r2r.accuracy([p for p, _ in train[:3]], [a for _, a in train[:2]], 5)
    with pytest.raises(ValueError, match="prompts and texts"):
        r2r.accuracy([], [], 5)
