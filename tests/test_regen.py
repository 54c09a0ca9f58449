"""Tests of neurips25.regen: metrics, placeholders, the documentary split, InfoNCE, validation."""
import pytest
import torch

from neurips25 import regen as R


@pytest.fixture(scope="module")
def docs():
    return R.make_documentaries(12, 10, seed=0)


def test_rank_and_recall_hand_computed():
    scores = torch.tensor([[0.9, 0.1, 0.5],    # truth 0: rank 1
                           [0.9, 0.1, 0.5],    # truth 1: rank 3
                           [0.2, 0.7, 0.5]])   # truth 2: rank 2
    ranks = R.rank_of_truth(scores)
    assert ranks.tolist() == [1, 3, 2]
    assert R.recall_at_k(ranks, (1, 2, 3)) == pytest.approx({1: 1 / 3, 2: 2 / 3, 3: 1.0})
    assert R.rank_of_truth(scores, [2, 2, 0]).tolist() == [2, 2, 3]
    # ties count against nobody: only strictly higher scores push the truth down
    assert R.rank_of_truth(torch.tensor([[0.5, 0.5]]), [1]).tolist() == [1]


def test_random_recall_is_k_over_n():
    d = R.DocTensors(torch.zeros(4, 3), torch.zeros(4, 3), torch.zeros(4, 3), torch.zeros(4, 2))
    assert R.random_recall([d], (1, 2, 10)) == pytest.approx({1: 0.25, 2: 0.5, 10: 1.0})


def test_placeholders_parse_and_fill_one_to_one():
    script = "the fisher counts every coin . <quote> debt follows them everywhere . the nurse has had close calls . <quote>"
    ctx = R.parse_placeholders(script)
    assert ctx == [("the fisher counts every coin .", "debt follows them everywhere ."),
                   ("the nurse has had close calls .", "")]
    filled = R.fill_placeholders(script, ["A", "B"])
    assert R.QUOTE not in filled and filled.index("“A”") < filled.index("“B”")
    with pytest.raises(ValueError, match="one entry per placeholder"):
        R.fill_placeholders(script, ["A"])
    assert R.quote_coverage(script) == pytest.approx(2 / 5)
    assert R.parse_lead("the fisher counts every coin .") == ("fisher", "money")
    assert R.parse_lead("the fisher counts every goat .") is None


def test_reference_teasers_round_trip(docs):
    d = docs[0]
    n_q = 0
    for _, script in R.teaser_examples(d, n=20, n_beats=3):
        ctx = R.parse_placeholders(script)
        n_q += len(ctx)
        assert script.count(" .") == 6  # three beats of two sentences each, with or without a quote
        for prev, nxt in ctx:
            seg = [s for s in d.segments if s.lead == prev and s.follow == nxt]
            assert seg and R.parse_lead(prev) == (seg[0].role, seg[0].aspect)
    assert 0.4 < n_q / 60 < 0.9  # quote_rate = 2/3
    assert all(R.QUOTE in a for _, a in R.teaser_examples(d, n=5, quote_rate=1.0))
    assert not any(R.QUOTE in a for _, a in R.teaser_examples(d, n=5, quote_rate=0.0))
    with pytest.raises(ValueError, match="quote_rate"):
        R.teaser_examples(d, quote_rate=1.5)


def test_documentaries_and_split_leak_nothing(docs):
    for d in docs:
        assert len(set(d.quotes)) == len(d.quotes) == 10
        assert len(set(d.cast)) == 3 and all(s.role in d.cast for s in d.segments)
    train, test = R.make_split(10, 5, 20, seed=1)
    assert {d.pool for d in train} == {"train"} and {d.pool for d in test} == {"test"}
    assert not {d.doc_id for d in train} & {d.doc_id for d in test}
    assert not {d.place for d in train} & {d.place for d in test}
    # no test narration sentence, quote or quote template (place removed) occurs in training
    assert R.split_overlap(train, test) == {"lead_verbatim": 0.0, "follow_verbatim": 0.0,
                                            "quote_verbatim": 0.0, "quote_template": 0.0}
    # the audit itself can fail: a film against itself overlaps completely
    assert R.split_overlap(train, train[:2]) == {"lead_verbatim": 1.0, "follow_verbatim": 1.0,
                                                 "quote_verbatim": 1.0, "quote_template": 1.0}
    # every test lead-in is still a template sentence, so generated teasers can be judged
    assert all(R.parse_lead(s.lead) == (s.role, s.aspect) for d in test for s in d.segments)
    # ... and each narration sentence is traced to its template pool
    for docs_, pool in ((train, "train"), (test, "test")):
        assert all(R.narration_pool(s.lead) == R.narration_pool(s.follow) == pool
                   for d in docs_ for s in d.segments)
    assert R.narration_pool("the fisher counts every goat .") is None
    with pytest.raises(TypeError, match="sentence must be a str"):
        R.narration_pool(None)


def test_infonce_separable_toy_reaches_r1_one():
    # contexts and quotes share a private direction per segment: trivially separable
    g = torch.Generator().manual_seed(0)
    docs = []
    for _ in range(6):
        z = torch.nn.functional.normalize(torch.randn(8, 384, generator=g), dim=-1)
        docs.append(R.DocTensors(z, z, z, torch.ones(8, 5)))
    model = R.train_retriever(docs, 5, epochs=30, docs_per_batch=3, seed=0, hidden=64, gen_weight=0.0)
    assert R.evaluate(R.score_docs(model.scores, docs))[1] == 1.0


def test_losses_finite_and_masked_to_documentary():
    m = R.QuoteRetriever(vocab_size=5, hidden=16)
    e = torch.nn.functional.normalize(torch.randn(6, 384), dim=-1)
    bow = torch.ones(6, 5)
    l_gen, l_ret = m.losses(e, e, e, bow, torch.tensor([0, 0, 0, 1, 1, 1]))
    assert torch.isfinite(l_gen) and torch.isfinite(l_ret)
    # one candidate per documentary: the InfoNCE has nothing to contrast, its loss is exactly 0
    _, l_one = m.losses(e, e, e, bow, torch.arange(6))
    assert float(l_one.detach()) == pytest.approx(0.0, abs=1e-6)


def test_invalid_inputs_raise(docs):
    with pytest.raises(ValueError, match="n_candidates >= 1"):
        R.rank_of_truth(torch.zeros(3, 0))
    with pytest.raises(ValueError, match="truth"):
        R.rank_of_truth(torch.zeros(2, 3), [0, 5])
    with pytest.raises(ValueError, match="unknown documentary"):
        R.get_documentary(docs, 999)
    assert R.get_documentary(docs, 3).doc_id == 3
    with pytest.raises(ValueError, match="ranks is empty"):
        R.recall_at_k(torch.tensor([]))
    # a NaN true score compares False with everything and would rank first
    with pytest.raises(ValueError, match="scores contain NaN"):
        R.rank_of_truth(torch.tensor([[float("nan"), 0.5], [0.1, 0.2]]))
    for bad in ([1.0, float("nan")], [1.0, float("inf")], [0, 2], [-1, 1]):
        with pytest.raises(ValueError, match="ranks must be finite and >= 1"):
            R.recall_at_k(torch.tensor(bad))
    with pytest.raises(ValueError, match="pool"):
        R.make_documentaries(2, pool="valid")
    with pytest.raises(ValueError, match="train and test"):
        R.split_overlap(docs, [])
    with pytest.raises(ValueError, match="n_docs"):
        R.make_documentaries(0)
    with pytest.raises(ValueError, match="n_segments"):
        R.make_documentaries(2, 10_000)
    with pytest.raises(ValueError, match="alpha"):
        R.QuoteRetriever(5, alpha=0.0, gen_weight=0.0)
    for bad in (float("nan"), float("inf"), "1", None):
        with pytest.raises(ValueError, match="alpha must be a finite number"):
            R.QuoteRetriever(5, alpha=bad)
    with pytest.raises(ValueError, match="gen_weight must be a finite number"):
        R.QuoteRetriever(5, gen_weight=float("nan"))
    with pytest.raises(ValueError, match="tau must be a finite number"):
        R.QuoteRetriever(5, tau=float("nan"))
    with pytest.raises(ValueError, match="tau and lr"):
        R.QuoteRetriever(5, lr=0.0)
    with pytest.raises(ValueError, match="no candidate"):
        R.fill_teaser("a . <quote>", R.Documentary(0, "x", ["fisher"]), None, None)
    with pytest.raises(TypeError, match="script"):
        R.parse_placeholders(3)


def test_entry_point_runs_from_a_gpt2_style_checkpoint(gpt2_style_checkpoint_384, any_device):
    """Stage 1 from a real-style checkpoint (byte-level, pad = eos not id 0, no <quote> token), then
    stage 2 on its scripts, on ``any_device``."""
    from neurips25.lm import pretrained

    model, tok = pretrained(str(gpt2_style_checkpoint_384))
    assert tok.pad_token_id != 0 and R.QUOTE not in tok.get_vocab()
    n_vocab = len(tok)
    train, test = R.make_split(3, 2, n_segments=8, seed=0)
    sm = R.ScriptModel(train, n_examples=2, steps=2, batch_size=4, generator=(model, tok),
                       device=any_device).fit()
    assert len(tok) == n_vocab + 1 and sm.quote_id == n_vocab
    assert sm.model.get_input_embeddings().num_embeddings >= len(tok)
    assert next(sm.model.parameters()).device.type == any_device.type
    assert len(sm.run.history) == 2 and all(v == v for v in sm.run.history)
    scripts = sm.write(test, max_new_tokens=8)
    assert len(scripts) == 2 and all(isinstance(s, str) and s for s in scripts)
    def enc(texts):  # a stand-in for MiniLM (stage 2 does not depend on the checkpoint): fixed random unit vectors
        rows = [torch.randn(16, generator=torch.Generator().manual_seed(hash(t) % 2**31)) for t in texts]
        return torch.nn.functional.normalize(torch.stack(rows), dim=-1)

    vocab = R.quote_vocab(train)
    ret = R.train_retriever(R.doc_tensors(train, enc, vocab), len(vocab), epochs=1, device=any_device, dim=16,
                            hidden=16)
    assert ret.device.type == any_device.type
    for script, doc in zip([f"the farmer remembers . {R.QUOTE} it was hard .", *scripts], [test[0], *test]):
        filled, chosen = R.fill_teaser(script, doc, ret, enc)
        assert len(chosen) == script.count(R.QUOTE) and len(set(chosen)) == len(chosen)
        assert all(0 <= i < len(doc.segments) for i in chosen) and R.QUOTE not in filled
    scores = ret.scores(R.doc_tensors(test[:1], enc, vocab)[0])
    assert scores.shape == (8, 8) and scores.abs().max() <= 1 + 1e-5


def _stand_in_encoder(texts):
    """Fixed random unit vectors per text (384-d like MiniLM), so the sweep test needs no model."""
    rows = [torch.randn(384, generator=torch.Generator().manual_seed(sum(map(ord, t)) * 31 + len(t)))
            for t in texts]
    return torch.nn.functional.normalize(torch.stack(rows), dim=-1)


def test_retrieval_run_stores_ranks_and_metrics_deterministically():
    kw = dict(n_train=2, n_test=2, n_segments=6, epochs=1, seeds=[0, 1], encoder=_stand_in_encoder,
              device="cpu")
    run = R.retrieval_run(1, **kw)
    assert run["data_seed"] == 1 and run["n_placeholders"] == 12 and len(run["test_films"]) == 2
    assert sorted(run["trained"]) == ["0", "1"]
    for e in [run["zero_shot"], *run["trained"].values()]:
        assert len(e["ranks"]) == 12 and all(1 <= r <= 6 for r in e["ranks"])
        assert e["metrics"] == R.retrieval_metrics(torch.tensor(e["ranks"]))
        assert e["metrics"]["R@10"] == 1.0  # 6 candidates per film
    # the zero-shot baseline is the notebook's cos(e_prev + e_next, e_m), by hand
    train, test = R.make_split(2, 2, 6, seed=1)
    vocab = R.quote_vocab(train)
    by_hand = torch.cat([R.rank_of_truth(R.zero_shot_scores(d))
                         for d in R.doc_tensors(test, _stand_in_encoder, vocab)])
    assert run["zero_shot"]["ranks"] == by_hand.tolist()
    assert R.retrieval_run(1, **kw) == run  # same seeds, same ranks
    g = R.r1_gains(run)
    hits = [(torch.tensor(t["ranks"]) == 1).float() for t in run["trained"].values()]
    zs = (torch.tensor(run["zero_shot"]["ranks"]) == 1).float()
    assert g.tolist() == pytest.approx(((hits[0] + hits[1]) / 2 - zs).tolist())
    with pytest.raises(ValueError, match="seeds"):
        R.retrieval_run(0, **{**kw, "seeds": []})
    with pytest.raises(ValueError, match="data_seed"):
        R.retrieval_run(-1, **kw)


def test_pooled_gain_ci_mean_of_seed_means_and_paired_resampling():
    # constant gains within a seed: every resample gives the same statistic, the CI is a point
    out = R.pooled_gain_ci([[0.2] * 5, [0.4] * 3])
    assert out["mean"] == pytest.approx(0.3) and out["ci"] == pytest.approx([0.3, 0.3])
    assert out["per_seed"] == pytest.approx([0.2, 0.4]) and out["n_boot"] == 2000 and out["seed"] == 0
    # the statistic weights data seeds equally, not placeholders
    assert R.pooled_gain_ci([[1.0] * 10, [0.0] * 2])["mean"] == pytest.approx(0.5)
    rng = torch.Generator().manual_seed(0)
    gains = [(torch.rand(200, generator=rng) - 0.4).tolist() for _ in range(3)]
    a, b = R.pooled_gain_ci(gains), R.pooled_gain_ci(gains)
    assert a == b and a["ci"][0] < a["mean"] < a["ci"][1]  # seeded: reproducible
    se = (sum(torch.tensor(g).var().item() / len(g) for g in gains) ** 0.5) / 3
    assert a["ci"][1] - a["ci"][0] == pytest.approx(2 * 1.96 * se, rel=0.2)  # about ± 1.96 SE
    with pytest.raises(ValueError, match="gains"):
        R.pooled_gain_ci([])
    with pytest.raises(ValueError, match="gains"):
        R.pooled_gain_ci([[0.1], []])
    with pytest.raises(ValueError, match="finite"):
        R.pooled_gain_ci([[float("nan")]])
    with pytest.raises(ValueError, match="n_boot"):
        R.pooled_gain_ci([[0.1]], n_boot=0)


def test_replication_is_fresh_data_stored_apart():
    from neurips25.results import load_results

    assert not set(R.REPLICATION_DATA_SEEDS) & set(R.DATA_SEEDS)  # fresh data seeds
    payload = load_results("regen_replication")
    cfg = payload["data"]["config"]
    assert payload["slug"] == "regen_replication" and "--replication" in payload["command"]
    assert cfg["data_seeds"] == list(R.REPLICATION_DATA_SEEDS)
    assert {k: cfg[k] for k in R.RETRIEVAL["small"]} == R.RETRIEVAL["small"]  # the sweep's sizes
    with pytest.raises(SystemExit):  # the replication's seeds are fixed
        R.main(["--replication", "--data-seeds", "4"])


def test_full_sizes_study_is_stored_apart():
    from neurips25.results import load_results

    payload = load_results("regen_full_sizes")
    data, cfg = payload["data"], payload["data"]["config"]
    assert payload["slug"] == "regen_full_sizes" and "--full-sizes" in payload["command"]
    assert cfg["data_seeds"] == list(R.DATA_SEEDS)
    assert {k: cfg[k] for k in R.RETRIEVAL["full"]} == R.RETRIEVAL["full"]  # the full scale's sizes
    # the stored summary is the pooled gain of the stored ranks
    assert data["r1_gain"] == R.pooled_gain_ci([R.r1_gains(data["runs"][str(d)]) for d in R.DATA_SEEDS])
    for run in data["runs"].values():
        assert run["n_placeholders"] == cfg["n_test"] * cfg["n_segments"] == len(run["zero_shot"]["ranks"])
    with pytest.raises(SystemExit):  # two studies in one call
        R.main(["--full-sizes", "--replication"])
