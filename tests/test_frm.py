import math

import numpy as np
import pytest
import torch

from neurips25 import frm


# ---------------------------------------------------------------- voting
def test_infinite_tau_is_majority_vote_exactly():
    rng = np.random.default_rng(0)
    answers = rng.integers(0, 2, size=(200, 7))
    scores = rng.normal(size=(200, 7))
    np.testing.assert_array_equal(frm.weighted_vote(answers, scores, math.inf), frm.majority_vote(answers))
    # a very large finite tau agrees too (odd K: no ties)
    np.testing.assert_array_equal(frm.weighted_vote(answers, scores, 1e9), frm.majority_vote(answers))


def test_tiny_tau_returns_best_chain_answer():
    rng = np.random.default_rng(1)
    answers = rng.integers(0, 2, size=(100, 32))
    scores = rng.normal(size=(100, 32))
    best = answers[np.arange(100), scores.argmax(1)]
    np.testing.assert_array_equal(frm.weighted_vote(answers, scores, 1e-6), best)


def test_weights_stable_for_tiny_tau_and_large_scores():
    answers = np.array([[1, 0, 0]])
    scores = np.array([[1000.0, 999.0, -1000.0]])
    assert frm.weighted_vote(answers, scores, 1e-300).tolist() == [1]
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        frm.weighted_vote(answers, scores, 1e-12)


def test_vote_hand_example_and_unparsable_chains():
    # two "yes" chains with low scores vs one "no" chain with a high score
    answers = np.array([1, 1, 0])
    scores = np.array([0.0, 0.0, 1.0])
    assert frm.weighted_vote(answers, scores, 10.0).tolist() == [1]  # ~ majority
    assert frm.weighted_vote(answers, scores, 0.1).tolist() == [0]  # e^10 > 2
    # unparsable chains carry no weight, whatever their score
    assert frm.weighted_vote([[-1, 0]], [[5.0, 0.0]], 0.01).tolist() == [0]
    assert frm.majority_vote([[-1, -1, 1]]).tolist() == [1]
    assert frm.weighted_vote([[-1, -1]], [[0.0, 0.0]], 1.0).tolist() == [0]


@pytest.mark.parametrize("tau", [0, -1.0, float("nan"), "0.2", True])
def test_invalid_tau(tau):
    with pytest.raises(ValueError, match="tau"):
        frm.weighted_vote([[1, 0]], [[0.0, 0.0]], tau)


def test_invalid_votes():
    with pytest.raises(ValueError, match="answers"):
        frm.weighted_vote(np.zeros((3, 0)), np.zeros((3, 0)), 1.0)
    with pytest.raises(ValueError, match="scores"):
        frm.weighted_vote([[1, 0, 1]], [[0.0, 0.0]], 1.0)
    with pytest.raises(ValueError, match="answers"):
        frm.majority_vote([[2, 0]])
    with pytest.raises(ValueError, match="NaN"):
        frm.weighted_vote([[1, 0]], [[np.nan, 0.0]], 1.0)
    with pytest.raises(ValueError, match=r"scores contain \+inf"):  # inf - inf would be a NaN weight
        frm.weighted_vote([[1, 0]], [[np.inf, 0.1]], 0.1)
    # -inf is the score of a chain without steps: it gets no weight, the other chain decides
    assert frm.weighted_vote([[1, 0]], [[-np.inf, 0.1]], 0.1).tolist() == [0]
    assert frm.weighted_vote([[1, 0]], [[0.1, -np.inf]], 0.1).tolist() == [1]


# ---------------------------------------------------------------- chain scores
def test_chain_scores_mean_and_logmean():
    steps = [np.array([0.5, 1.0]), np.array([0.25]), np.array([])]
    np.testing.assert_allclose(frm.chain_scores(steps, "mean"), [0.75, 0.25, 0.0])
    lm = frm.chain_scores(steps, "logmean")
    np.testing.assert_allclose(lm[:2], [0.5 * math.log(0.5), math.log(0.25)])
    assert lm[2] == -np.inf
    with pytest.raises(ValueError, match="how"):
        frm.chain_scores(steps, "max")
    with pytest.raises(ValueError, match="probabilities"):
        frm.chain_scores([np.array([1.5])])
    for how in ("mean", "logmean"):
        with pytest.raises(ValueError, match="step_scores.*NaN"):
            frm.chain_scores([np.array([0.5, np.nan])], how)
    # a chain without steps scores -inf: the AUC ranks it lowest instead of failing on the infinity
    assert frm._auc([True, True, False, False], [0.0, lm[1], lm[2], -2.0]) == 1.0


# ---------------------------------------------------------------- fairness metrics
def test_fairness_report_against_hand_confusion_matrices():
    # group 0: TP=2 FN=1 FP=1 TN=2  → TPR 2/3, FPR 1/3, selection 3/6
    # group 1: TP=1 FN=1 FP=2 TN=0  → TPR 1/2, FPR 1,   selection 3/4
    y = [1, 1, 1, 0, 0, 0, 1, 1, 0, 0]
    yh = [1, 1, 0, 1, 0, 0, 1, 0, 1, 1]
    g = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    r = frm.fairness_report(y, yh, g)
    assert r["accuracy"] == pytest.approx(5 / 10)
    assert r["tpr_0"] == pytest.approx(2 / 3) and r["tpr_1"] == pytest.approx(1 / 2)
    assert r["fpr_0"] == pytest.approx(1 / 3) and r["fpr_1"] == pytest.approx(1.0)
    assert r["tpr_gap"] == pytest.approx(1 / 6)
    assert r["fpr_gap"] == pytest.approx(2 / 3)
    assert r["eo_diff"] == pytest.approx(2 / 3)
    assert r["dp_diff"] == pytest.approx(0.25)


def test_perfect_classifier_has_no_gaps():
    rng = np.random.default_rng(0)
    y, g = rng.integers(0, 2, 100), rng.integers(0, 2, 100)
    r = frm.fairness_report(y, y, g)
    assert r["accuracy"] == 1 and r["eo_diff"] == 0


def test_fairness_report_validation():
    with pytest.raises(ValueError, match="equal lengths"):
        frm.fairness_report([1, 0], [1, 0], [0, 1, 1])
    with pytest.raises(ValueError, match="group"):
        frm.fairness_report([1, 0, 1], [1, 0, 1], [0, 2, 1])
    with pytest.raises(ValueError, match="group 1"):
        frm.fairness_report([1, 0, 1], [1, 0, 1], [0, 0, 1])
    # probabilities are not predictions: checked before any cast to int could floor them
    with pytest.raises(ValueError, match="y_hat"):
        frm.fairness_report([1, 0, 1, 0], [0.9, 0.2, 0.6, 0.4], [0, 0, 1, 1])
    with pytest.raises(ValueError, match="y must"):
        frm.fairness_report([1.0, 0.5, 1, 0], [1, 0, 1, 0], [0, 0, 1, 1])
    # bools and 0./1. floats are fine
    r = frm.fairness_report(np.array([True, False, True, False]), [1.0, 0.0, 1.0, 1.0], [0, 0, 1, 1])
    assert r["accuracy"] == 0.75 and r["fpr_1"] == 1.0


# ---------------------------------------------------------------- data generators
def test_records_label_uses_legitimate_features_only():
    rec = frm.make_records(2000, seed=0)
    assert set(np.unique(rec["group"])) == {0, 1}
    np.testing.assert_array_equal(rec["y"], (frm.risk_score(rec) > 0).astype(int))
    # the label is independent of the group (same base rate up to sampling noise)
    rates = [rec["y"][rec["group"] == g].mean() for g in (0, 1)]
    assert abs(rates[0] - rates[1]) < 0.06
    with pytest.raises(ValueError, match="n"):
        frm.make_records(0)


def test_chain_corpus_roundtrip_and_bias_rates():
    rec = frm.make_records(3000, seed=0)
    pairs = frm.chain_corpus(rec, seed=0, bias_rate=(0.1, 0.6))
    assert all(p.startswith(frm.NO_INSTRUCTION + " defendant_:") for p, _ in pairs)  # never instructed
    parsed = [frm.parse_chain(c) for _, c in pairs]
    assert all(a in (0, 1) for _, a in parsed)
    biased = np.array([any(frm.is_biased_step(s) for s in steps) for steps, _ in parsed])
    for g, rate in ((0, 0.1), (1, 0.6)):
        assert abs(biased[rec["group"] == g].mean() - rate) < 0.04
    steps, ans = frm.parse_chain("the_defendant_has 4 prior_offenses ; most african-american people_tend_to_reoffend "
                                 "answer_: yes")
    assert ans == 1 and steps[1] == "most african-american people tend to reoffend" and frm.is_biased_step(steps[1])
    assert not frm.is_biased_step("the defendant is 23 years old , which raises the risk")
    assert frm.parse_chain("garbled text")[1] == -1


def test_weak_labels_noise_rate_and_source_domain_is_disjoint():
    steps, y = frm.source_steps(4000, seed=0)
    w = frm.weak_labels(y, 0.25, seed=0)
    assert abs((w != y).mean() - 0.25) < 0.02
    # symmetric: each class is flipped at the noise rate, even with the seed that drew the labels
    # (an unsalted stream replays source_steps' uniforms and flips biased steps only)
    for k in (0, 1):
        assert abs((w != y)[y == k].mean() - 0.25) < 0.03, k
    assert not any(frm.is_biased_step(s) for s in steps)  # no race word in the source domain
    with pytest.raises(ValueError, match="noise"):
        frm.weak_labels(y, 0.5)
    o = frm.one_sided_labels(y, 0.25, seed=0)  # the ablation: same share flipped, biased steps only
    assert abs((o != y).mean() - 0.25) < 0.02 and (o[y == 0] == 0).all()
    with pytest.raises(ValueError, match="noise"):
        frm.one_sided_labels(y, 0.45)
    chains, yc, members = frm.source_chains(steps, y, seed=0)
    assert len(chains) == len(yc) == len(members) and 0.3 < yc.mean() < 0.7
    assert all(c == [steps[i] for i in m] for c, m in zip(chains, members))
    np.testing.assert_array_equal(frm.outcome_labels(members, y), yc)  # clean step labels: the truth


def test_outcome_labels_or_rule_compounds_step_noise():
    # the paper's ORM label: biased iff any step is labelled biased
    members = [np.array([0, 1, 2]), np.array([3]), np.array([4, 5])]
    np.testing.assert_array_equal(frm.outcome_labels(members, [0, 0, 0, 1, 0, 1]), [0, 1, 1])
    # with 25 % symmetric step noise a clean 3-step chain is labelled biased w.p. 1 - 0.75^3 = 0.58
    clean = np.zeros(30_000, dtype=int)
    w = frm.weak_labels(clean, 0.25, seed=0)
    lab = frm.outcome_labels([np.arange(3 * k, 3 * k + 3) for k in range(10_000)], w)
    assert abs(lab.mean() - (1 - 0.75**3)) < 0.015
    with pytest.raises(ValueError, match="members"):
        frm.outcome_labels([np.array([0, 7])], [0, 1])
    with pytest.raises(ValueError, match="members"):
        frm.outcome_labels([np.array([], dtype=int)], [0, 1])


def test_instruction_corpus_obeys_the_instruction_on_its_own_task():
    pairs = frm.instruction_corpus(4000, seed=0)
    fair = np.array([p.startswith(frm.INSTRUCTION + " applicant_:") for p, _ in pairs])
    plain = np.array([p.startswith(frm.NO_INSTRUCTION + " applicant_:") for p, _ in pairs])
    assert (fair ^ plain).all() and abs(fair.mean() - 0.5) < 0.03
    parsed = [frm.parse_chain(c) for _, c in pairs]
    assert all(a in (0, 1) for _, a in parsed)
    stereo = np.array([any(frm.is_biased_step(t) or frm.is_age_step(t) for t in st) for st, _ in parsed])
    assert not stereo[fair].any() and 0.1 < stereo[plain].mean() < 0.5  # obeyed where instructed
    assert all(all(frm.is_loan_step(t) for t in st) for st, _ in parsed)
    # the answer follows the evidence under the instruction: payments and employment only
    late = np.array([int(p.split("late_payments ")[1].split()[0]) for p, _ in pairs])
    jobless = np.array([" unemployed " in p for p, _ in pairs])
    risk = 0.6 * (late - 2) + 0.9 * jobless - 0.3
    ans = np.array([a for _, a in parsed])
    assert ((ans == (risk > 0))[fair]).mean() > 0.75
    assert not frm.is_loan_step("the defendant is 23 years old , which raises the risk")
    assert frm.is_age_step("at age 23 the risk of reoffending is higher")
    for bad in (dict(n=0), dict(n=10, share=1.5), dict(n=10, age_rate=-0.1)):
        with pytest.raises(ValueError):
            frm.instruction_corpus(**bad)
    rec = frm.make_records(2, seed=0)
    assert frm.record_prompt(rec, 0, fair=True).split(" ", 1)[1] == frm.record_prompt(rec, 0).split(" ", 1)[1]


def test_bootstrap_se_of_a_difference():
    rng = np.random.default_rng(0)
    y, g = rng.integers(0, 2, 400), rng.integers(0, 2, 400)
    yh = np.where(rng.random(400) < 0.8, y, 1 - y)
    same = frm._bootstrap_se(y, g, yh, yh, "eo_diff")
    assert same == dict(diff=0.0, se=0.0)
    perfect = frm._bootstrap_se(y, g, y, yh, "accuracy")
    assert abs(perfect["diff"] - (1 - (y == yh).mean())) < 1e-12 and 0 < perfect["se"] < 0.05


# ---------------------------------------------------------------- the FRM head (no MiniLM: random embeddings)
def test_frm_learns_from_noisy_labels_smoke():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(600, 16, generator=g)
    biased = (z[:, 0] > 0).numpy().astype(int)
    weak = frm.weak_labels(biased, 0.25, seed=0)
    model = frm.train_frm(z, weak, epochs=15, hidden=16, seed=0)
    p = model.step_scores(z).numpy()
    assert p.shape == (600,) and ((p > 0) & (p < 1)).all()
    # ranks truly biased items lower than fair ones despite 25% label noise
    assert p[biased == 1].mean() + 0.2 < p[biased == 0].mean()
    with pytest.raises(ValueError, match="z must be"):
        frm.train_frm(z[:10], weak[:5])


def test_frm_keeps_the_best_held_out_epoch(any_device):
    g = torch.Generator().manual_seed(1)
    z = torch.randn(500, 16, generator=g)
    biased = (z[:, 0] > 0).numpy().astype(int)
    weak = frm.weak_labels(biased, 0.25, seed=1)
    model = frm.train_frm(z.to(any_device), weak, epochs=6, hidden=16, seed=1, val_fraction=0.2)
    assert 1 <= model.best_epoch <= 6
    p = model.step_scores(z).numpy()
    assert frm._auc(biased == 0, p) > 0.8  # ranks fair items above biased ones despite the noise
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match="val_fraction"):
            frm.train_frm(z, weak, val_fraction=bad)
    with pytest.raises(ValueError, match="val_fraction"):  # 0.001 of 500 rounds to no held-out example
        frm.train_frm(z, weak, val_fraction=0.0001)


def test_source_templates_ablation():
    import re

    few, y = frm.source_steps(300, seed=0, templates=2)
    pattern = lambda t: re.compile("^" + re.sub(r"\\\{\w+\\\}", ".+", re.escape(t)) + "$")
    allowed = [pattern(t) for t in frm._SRC_BIASED[:2] + frm._SRC_LEGIT[:2]]
    everything = [pattern(t) for t in frm._SRC_BIASED + frm._SRC_LEGIT]
    assert all(any(p.match(s) for p in allowed) for s in few)
    full, _ = frm.source_steps(300, seed=0)
    assert all(any(p.match(s) for p in everything) for s in full)
    assert not all(any(p.match(s) for p in allowed) for s in full)
    assert 0.2 < y.mean() < 0.6
    with pytest.raises(ValueError, match="templates"):
        frm.source_steps(10, templates=0)


# ---------------------------------------------------------------- choosing tau on a validation split
def test_choose_tau_rule():
    # group 1's negative case (row 2) is a "yes" only through two low-scoring chains
    answers = np.array([[0, 0, 0], [1, 1, 1], [1, 1, 0], [1, 1, 1]])
    scores = np.array([[0.0] * 3, [0.0] * 3, [0.0, 0.0, 1.0], [0.0] * 3])
    y, group = np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])
    assert frm.choose_tau(y, answers, scores, group, [10.0, 0.1]) == 0.1
    # equal scores: every tau is the majority vote, the tie goes to the largest tau
    assert frm.choose_tau(y, answers, np.zeros((4, 3)), group, [0.1, 10.0, 1.0]) == 10.0
    with pytest.raises(ValueError, match="taus"):
        frm.choose_tau(y, answers, scores, group, [])
    with pytest.raises(ValueError, match="taus"):
        frm.choose_tau(y, answers, scores, group, [0.1, -1.0])
    with pytest.raises(ValueError, match="max_acc_drop"):
        frm.choose_tau(y, answers, scores, group, [0.1], max_acc_drop=1.5)


def test_entry_point_runs_from_a_gpt2_style_checkpoint(gpt2_style_checkpoint_384, gpt2_style_checkpoint,
                                                        any_device):
    from neurips25.lm import pretrained

    model, tok = pretrained(str(gpt2_style_checkpoint_384))
    assert tok.pad_token_id != 0 and tok.pad_token_id == tok.eos_token_id
    cfg = dict(n_train=32, n_val=40, n_test=60, K=2, lm_steps=2, lm_lr=1e-3, max_new_tokens=12, n_source=64,
               frm_epochs=1, taus=(0.8, 0.2))
    r = frm.run_experiment(cfg, seed=0, generator=(model, tok), device=any_device)
    obj = r["objects"]
    assert obj["lm"] is model and obj["tok"] is tok
    assert next(model.parameters()).device.type == any_device.type
    assert obj["answers"].shape == (60, 2) and np.isin(obj["answers"], (-1, 0, 1)).all()
    assert len(obj["steps"]) == 120
    for name in ("CoT@1", "Maj@32", "FRM tau*", "ORM tau*", "oracle filter"):
        rep = r["metrics"][name]
        assert all(0.0 <= rep[k] <= 1.0 for k in ("accuracy", "eo_diff", "dp_diff")), (name, rep)
    assert set(r["tau_star"].values()) <= {0.8, 0.2}
    assert all(0.0 <= b <= 1.0 for b in r["bias_rate"])
    for v in (r["step_auc"], *r["chain_auc"].values()):  # NaN when the random model wrote one class only
        assert np.isnan(v) or 0.0 <= v <= 1.0
    with pytest.raises(ValueError, match="context"):  # the un-widened checkpoint: a clear error
        frm.run_experiment(cfg, generator=pretrained(str(gpt2_style_checkpoint)))
