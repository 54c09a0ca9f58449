"""Tests for neurips25.grid_reasoning (GRiD: graphs of knowledge and reasoning nodes, local verification)."""
import math

import numpy as np
import pytest

from neurips25 import grid_reasoning as gr
from neurips25.grid_reasoning import Graph, Node


@pytest.fixture(scope="module")
def world():
    return gr.make_world(60, seed=1)


@pytest.fixture(scope="module")
def traces(world):
    return gr.make_traces(world, confusion=0.25, slip=0.5, seed=1)


# --------------------------------------------------------------------------------------- world
def test_world_split_and_facts(world):
    assert len(world.train_people) == 42 and len(world.test_people) == 18
    assert not set(world.train_people) & set(world.test_people)
    facts = world.facts()
    assert len(facts) == 60 + 24 + 8
    p = world.test_people[0]
    assert f"{p} lives_in {world.city_of[p]} ." in facts  # held-out facts are in the knowledge corpus
    assert world.holds(p, "speaks", world.answer("language", p))
    assert not world.holds(p, "in", gr._confuse(world.answer("country", p)))


def test_traces_corruptions_are_as_stated(world, traces):
    assert len(traces) == 2 * len(world.train_people)
    assert {t.corruption for t in traces} <= {None, *gr.CORRUPTIONS}
    for t in traces:
        gold = gr.gold_graph(world, t.kind, t.person)
        if t.corruption is None:
            assert t.graph == gold
        else:
            assert t.graph != gold
        if t.corruption == "fact":  # systematic misconception: the next country's language, carried on
            k = world.country_of[world.city_of[t.person]]
            assert t.kind == "language" and t.graph["K2"].triple == (k, "speaks", world.language_of[gr._confuse(k)])
            assert t.graph.answer == t.graph["R1"].triple[2] != world.answer(t.kind, t.person)


# --------------------------------------------------------------------------------------- parser
def test_parser_round_trip(world, traces):
    for t in traces:
        for text in (gr.format_graph(t.graph), gr.render(t, "graph")[1]):
            g = gr.parse_graph(text)
            assert g == t.graph
            assert gr.format_graph(g) == text


def test_every_premise_refers_to_an_earlier_node(traces):
    for t in traces:
        g = gr.parse_graph(gr.format_graph(t.graph))
        names = [n.name for n in g.nodes]
        for i, n in enumerate(g.nodes):
            assert all(names.index(p) < i for p in n.premises)
            assert (n.kind == "K") == (len(n.premises) == 0)


def test_dangling_premise_is_rejected_naming_the_node():
    with pytest.raises(ValueError, match="node R0 cites K7, which is not in the graph"):
        gr.parse_graph("[K0] ba ko lives_in paris [R0] ( K0 K7 ) ba ko in france [A] france")


def test_forward_reference_is_rejected():
    with pytest.raises(ValueError, match="node R0 cites K1, which comes after it"):
        gr.parse_graph("[K0] ba ko lives_in paris [R0] ( K0 K1 ) ba ko in france [K1] paris in france")


def test_cycle_is_rejected_naming_a_node():
    a = Node("R0", ("x", "in", "y"), ("K0", "R1"))
    b = Node("R1", ("x", "speaks", "z"), ("R0",))
    g = Graph((Node("K0", ("x", "lives_in", "c")), a, b))
    with pytest.raises(ValueError, match=r"node R[01] is on a cycle"):
        gr.check_dag(g)
    with pytest.raises(ValueError, match="cites itself"):
        gr.check_dag(Graph((Node("K0", ("x", "lives_in", "c")), Node("R0", ("x", "in", "y"), ("R0",)))))


@pytest.mark.parametrize("text, match", [
    ("", "empty"),
    ("ba ko lives_in paris", "must start with a node name"),
    ("[K0] ba ko paris", "relation"),
    ("[R0] ba ko in france", "premise list"),
    ("[K0] a lives_in b [K0] b in c", "K0 appears more than once"),
    ("[K0] a lives_in b [A] c d", "exactly one word"),
])
def test_parser_rejects_malformed_text(text, match):
    with pytest.raises(ValueError, match=match):
        gr.parse_graph(text)


def test_topological_order_and_networkx(world):
    g = gr.gold_graph(world, "language", world.test_people[0])
    assert [n.name for n in gr.topological_order(g)] == ["R0", "R1"]
    nxg = gr.to_networkx(g)
    assert set(nxg.predecessors("R1")) == {"R0", "K2"}


# --------------------------------------------------------------------------------------- verifiers
def test_oracle_accepts_all_correct_and_rejects_all_corrupted_steps(world):
    oracle = gr.OracleVerifier(world)
    labels = [y for people in (world.train_people, world.test_people)
              for _, y in gr.verifier_examples(world, people, repeats=3, seed=2)]
    assert labels.count("yes") == labels.count("no")  # every corrupted verifier example is a rejected step
    # every step of every correct graph passes, the first corrupted step of every corrupted trace fails
    for p in world.people:
        for kind in gr.QUESTIONS:
            g = gr.gold_graph(world, kind, p)
            assert all(gr.verify_graph(g, oracle, stop=False).values())
    for t in gr.make_traces(world, world.people, confusion=0.3, slip=1.0, seed=3):
        v = gr.verify_graph(t.graph, oracle)
        assert all(v.values()) == (t.corruption is None), (t, v)


def test_oracle_reports_which_check_fails(world):
    p = world.test_people[0]
    g = gr.gold_graph(world, "country", p)
    oracle = gr.OracleVerifier(world)
    k1 = g["K1"]
    wrong_fact = Node("K1", (k1.triple[0], "in", gr._confuse(k1.triple[2])))  # a false fact, correctly used
    step = Node("R0", (p, "in", wrong_fact.triple[2]), ("K0", "K1"))
    assert oracle.checks(step, [g["K0"], wrong_fact]) == {"fact": False, "dependency": True, "purpose": True}
    restated = Node("R0", g["K0"].triple, ("K0", "K1"))
    assert oracle.checks(restated, [g["K0"], k1])["purpose"] is False


def test_verifier_is_called_once_per_reasoning_node_with_exactly_its_parents(world):
    calls = []

    def mock(step, premises):
        calls.append((step.name, [q.name for q in premises]))
        return True

    g = gr.gold_graph(world, "language", world.train_people[0])
    assert gr.verify_graph(g, mock) == {"R0": True, "R1": True}
    assert calls == [("R0", ["K0", "K1"]), ("R1", ["R0", "K2"])]
    # Alg. 1 over a batch of traces: one call per reasoning node, in topological order
    calls.clear()
    traces = [gr.Trace(k, p, gr.gold_graph(world, k, p)) for p in world.train_people[:5] for k in gr.QUESTIONS]
    kept, rejected = gr.filter_traces(traces, mock)
    assert len(kept) == 10 and not rejected
    expected = [(r.name, list(r.premises)) for t in traces for r in t.graph.reasoning]
    assert calls == expected
    # stop at the first failure
    calls.clear()
    assert gr.verify_graph(g, lambda s, ps: mock(s, ps) and False) == {"R0": False}
    assert len(calls) == 1


def test_filter_and_runtime_verification_with_oracle(world, traces):
    oracle = gr.OracleVerifier(world)
    kept, rejected = gr.filter_traces(traces, oracle)
    assert all(t.corruption is None for t in kept) and all(t.corruption for t in rejected)
    texts = [gr.format_graph(t.graph) for t in traces] + ["[K0] garbage", gr.format_graph(traces[0].graph)[:-3]]
    ver = gr.runtime_verify(texts, oracle)
    assert [v.passed for v in ver[:-2]] == [t.corruption is None for t in traces]
    assert ver[-2].graph is None and not ver[-2].passed and "relation" in ver[-2].error
    gold = [world.answer(t.kind, t.person) for t in traces] + ["x", "y"]
    acc, cov = gr.acc_at_passed([v.answer for v in ver], gold, [v.passed for v in ver])
    assert acc == 1.0 and math.isclose(cov, sum(t.corruption is None for t in traces) / len(texts))


class _RecallFromWorld(gr.LearnedVerifier):
    """A LearnedVerifier whose recall is the world itself (no model): tests the fact-only filter."""

    def __init__(self, world):
        super().__init__(None, None)
        self.world = world

    def recall(self, queries):
        out = []
        for q in queries:
            s, r = q.rsplit(" ", 1)
            out.append({"lives_in": self.world.city_of, "in": self.world.country_of,
                        "speaks": self.world.language_of}[r].get(s, "?"))
        return out


def test_cot_facts_and_the_fact_only_filter(world, traces):
    t = next(t for t in traces if t.corruption is None and t.kind == "language")
    facts = gr.cot_facts(gr.render(t, "cot")[1])
    assert facts == [n.triple for n in t.graph.nodes if n.kind == "K"]  # the same facts as the graph's K nodes
    kept, rejected = gr.fact_filter(traces, _RecallFromWorld(world))
    # the fact check alone rejects exactly the traces with a false recalled fact: every fact corruption,
    # and no clean trace; local slips (wrong conclusion, wrong citation) pass it
    assert {t.corruption for t in rejected} == {"fact"}
    assert all(t.corruption != "fact" for t in kept) and any(t.corruption for t in kept)
    with pytest.raises(TypeError, match="text"):
        gr.cot_facts(None)
    with pytest.raises(TypeError, match="fact_holds"):
        gr.fact_filter(traces, gr.OracleVerifier(world))


def test_selective_accuracy():
    preds, gold = ["a", "b", "c", "d"], ["a", "x", "c", "y"]
    assert gr.selective_accuracy(preds, gold, [0.9, 0.1, 0.8, 0.2], 0.5) == (1.0, 0.5)
    assert gr.selective_accuracy(preds, gold, [0.1, 0.9, 0.8, 0.2], 0.5) == (0.5, 0.5)
    assert gr.selective_accuracy(preds, gold, [0.0] * 4, 1.0) == (0.5, 1.0)
    with pytest.raises(ValueError, match="coverage"):
        gr.selective_accuracy(preds, gold, [0.0] * 4, 0.0)
    with pytest.raises(ValueError, match="equal length"):
        gr.selective_accuracy(preds, gold, [0.0] * 3, 0.5)


def test_metrics_and_validation():
    assert gr.accuracy(["a", "b", None], ["a", "c", "d"]) == pytest.approx(1 / 3)
    assert gr.acc_at_passed(["a", "b"], ["a", "c"], [True, False]) == (1.0, 0.5)
    acc, cov = gr.acc_at_passed(["a"], ["a"], [False])
    assert math.isnan(acc) and cov == 0.0
    with pytest.raises(ValueError, match="equal length"):
        gr.accuracy(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="equal length"):
        gr.acc_at_passed(["a"], ["a"], [True, False])
    # passed is a verdict per example, not a count or a label
    assert gr.acc_at_passed(["a", "b"], ["a", "c"], [1, 0]) == (1.0, 0.5)
    assert gr.acc_at_passed(["a", "b"], ["a", "c"], np.array([True, False])) == (1.0, 0.5)
    with pytest.raises(ValueError, match="passed must hold one bool"):
        gr.acc_at_passed(["a", "b"], ["a", "b"], [1, 2])
    with pytest.raises(ValueError, match="passed must hold one bool"):
        gr.acc_at_passed(["a", "b"], ["a", "b"], ["yes", ""])
    assert gr.extract_answer("x [A] france") == "france" and gr.extract_answer("no answer") is None


def test_input_validation(world):
    with pytest.raises(ValueError, match="n_people"):
        gr.make_world(2)
    with pytest.raises(ValueError, match="train_frac"):
        gr.make_world(20, train_frac=1.0)
    with pytest.raises(TypeError, match="seed must be an int"):
        gr.make_world(200, seed=True)
    with pytest.raises(ValueError, match="confusion, consistency and slip"):
        gr.make_traces(world, confusion=1.5)
    with pytest.raises(ValueError, match="not in the world"):
        gr.make_traces(world, ["nobody here"])
    with pytest.raises(ValueError, match="fmt"):
        gr.render(gr.Trace("country", world.train_people[0], gr.gold_graph(world, "country", world.train_people[0])),
                  "tree")
    with pytest.raises(ValueError, match="kind"):
        gr.gold_graph(world, "capital", world.train_people[0])
    with pytest.raises(TypeError, match="text"):
        gr.parse_graph(3)
    with pytest.raises(TypeError, match="verifier"):
        gr.verify_graph(gr.gold_graph(world, "country", world.train_people[0]), "oracle")
    with pytest.raises(TypeError, match="world"):
        gr.OracleVerifier("world")
    g = gr.gold_graph(world, "country", world.train_people[0])
    with pytest.raises(ValueError, match="exactly its cited nodes"):
        gr.OracleVerifier(world)(g["R0"], [g["K0"]])
    with pytest.raises(TypeError, match="reasoning Node"):
        gr.verify_prompt(g["K0"], [])
    with pytest.raises(TypeError, match="texts"):
        gr.runtime_verify("[K0] a lives_in b", gr.OracleVerifier(world))
    with pytest.raises(ValueError, match="repeats"):
        gr.verifier_examples(world, repeats=0)
    with pytest.raises(ValueError, match="formats"):
        gr.proposer_data([], formats=("tree",))
    with pytest.warns(UserWarning, match="knowledge corpus only"):
        gr.train_model(world, [], steps=1, n_layer=1, n_embd=16, batch_size=8)
    with pytest.raises(ValueError, match="threshold"):
        gr.LearnedVerifier(None, None, threshold=1.0)
    with pytest.raises(ValueError, match="steps"):
        gr.base_model(world, steps=0)
    with pytest.raises(ValueError, match="batch_size"):
        gr.base_model(world, batch_size=2.5)
    with pytest.raises(ValueError, match="base_steps"):
        gr.run_experiment(n_people=10, base_steps=-1)


def test_smoke_training_learned_verifier_and_proposer(world, traces, any_device):
    """A few dozen steps: the pipeline runs end to end and the learned verifier is a callable verifier."""
    model, tok = gr.train_model(world, gr.verifier_examples(world, repeats=1) + gr.proposer_data(traces[:20]),
                                steps=30, n_layer=1, n_embd=32, batch_size=32, device=any_device)
    assert next(model.parameters()).device.type == any_device.type
    v = gr.LearnedVerifier(model, tok)
    kept, rejected = gr.filter_traces(traces[:10], v)
    assert len(kept) + len(rejected) == 10 and v.calls >= 10
    qs = [(k, p) for p in world.test_people[:3] for k in gr.QUESTIONS]
    texts = gr.answer_questions(model, tok, qs, "graph")
    assert len(texts) == 6 and all(isinstance(t, str) for t in texts)
    ver = gr.runtime_verify(texts, v)
    assert len(ver) == 6
    sc = gr.self_consistency(model, tok, qs[:2], n=2)
    assert len(sc) == 2
    conf = gr.sequence_confidence(model, tok, qs, texts, "graph")
    assert len(conf) == 6 and all(c <= 0 for c in conf)
    with pytest.raises(ValueError, match="equal lengths"):
        gr.sequence_confidence(model, tok, qs, texts[:2], "graph")


def test_pack_rows_keeps_whole_examples(world):
    tok = gr.model._tokenizer(world)
    pairs = [("", f) for f in world.facts()[:30]] + gr.proposer_data(gr.make_traces(world, seed=0)[:6])
    rows, masks = gr.model._pack_rows(tok, pairs, 48)
    assert all(len(r) <= 48 and len(r) == len(m) for r, m in zip(rows, masks))
    flat = [t for r in rows for t in r]
    assert flat.count(tok.bos_token_id) == len(pairs) == flat.count(tok.eos_token_id)
    assert sum(map(sum, masks)) == sum(len(tok(a, add_special_tokens=False)["input_ids"]) + 1 for _, a in pairs)
    with pytest.raises(ValueError, match="block_size"):
        gr.model._pack_rows(tok, pairs, 8)


def test_run_experiment_smoke_on_each_device(any_device, monkeypatch):
    """The whole study under NEURIPS25_SMOKE=1 (2 training steps, 8 test questions) on each device:
    every number of the results table is there, and the fact-filtered CoT control too."""
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    res, st = gr.run_experiment(n_people=20, seed=0, fact_filtered=True, device=any_device, return_state=True)
    for key in ("direct", "cot", "graph", "cot_sc", "filtered_graph", "filtered_cot", "factfiltered_cot",
                "rv_learned_cov", "filtered_conf_acc_at_rv_cov", "verifier_acc_heldout", "factfilter_keep_clean"):
        assert key in res and 0.0 <= res[key] <= 1.0 or math.isnan(res[key]), key
    assert res["n_test"] == 8
    for m in (st["model_a"], st["model_b"], st["model_c"]):
        assert next(m.parameters()).device.type == any_device.type


def test_shared_base_model_is_fine_tuned_per_role(world, any_device, monkeypatch):
    """``base_steps``: one base model learns the knowledge corpus; the verifier and every proposer fine-tune
    their own copy of it (one architecture, separate weights), on the requested device."""
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    model, tok = gr.base_model(world, steps=3, n_layer=1, n_embd=16, batch_size=8, device=any_device)
    assert next(model.parameters()).device.type == any_device.type and "lives_in" in tok.get_vocab()
    res, st = gr.run_experiment(n_people=20, seed=0, base_steps=3, verifier_facts=2, proposer_facts=1,
                                device=any_device, return_state=True)
    roles = [st["verifier"].model, st["model_a"], st["model_b"]]
    assert len({type(m) for m in roles}) == 1 and len({id(m) for m in roles}) == 3
    assert all(next(m.parameters()).device.type == any_device.type for m in roles)
    assert 0.0 <= res["filtered_graph"] <= 1.0


def test_entry_point_runs_from_a_gpt2_style_checkpoint(gpt2_style_checkpoint, monkeypatch):
    """A real checkpoint's tokenizer (byte-level, id 0 a real token, pad = eos = last id) in place of the
    word-level one: the roles fine-tune copies of it, the learned verifier recalls whole words by greedy
    decoding and scores multi-token "yes"/"no". The fixture's context (64 positions) is shorter than a
    graph trace in bytes (~150), so ``run_experiment`` gets the same network with a longer context."""
    from transformers import GPT2LMHeadModel

    from neurips25.lm import pretrained

    model, tok = pretrained(str(gpt2_style_checkpoint))
    assert tok.pad_token_id == tok.eos_token_id == len(tok) - 1
    world = gr.make_world(20, seed=0)
    # the parts that fit the fixture's own context: training on facts and direct answers, recall, the fact
    # filter, direct answers and their confidence
    data = [gr.render(t, "direct") for t in gr.make_traces(world, seed=0)]
    m, _ = gr.train_model(world, data, steps=3, batch_size=8, tokenizer=tok, model=model)
    v = gr.LearnedVerifier(m, tok, recall_tokens=4)
    p = world.test_people[0]
    assert isinstance(v.recall([f"{p} lives_in"])[0], str)
    assert isinstance(v.fact_holds(p, "lives_in", world.city_of[p]), bool)
    kept, rejected = gr.fact_filter(gr.make_traces(world, seed=0)[:4], v)
    assert len(kept) + len(rejected) == 4
    qs = [("country", p), ("language", p)]
    texts = gr.answer_questions(m, tok, qs, "direct")
    assert len(texts) == 2 and all(isinstance(t, str) for t in texts)
    conf = gr.sequence_confidence(m, tok, qs, texts, "direct")
    assert len(conf) == 2 and all(c <= 0 for c in conf)
    # the whole entry point: the same checkpoint with room for a graph trace in bytes
    model.config.n_positions = 320
    long = GPT2LMHeadModel(model.config)
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    res = gr.run_experiment(n_people=10, seed=0, unfiltered=False, base=(long, tok))
    assert res["n_test"] == 6 and 0.0 <= res["filtered_graph"] <= 1.0 and 0.0 <= res["filtered_rv_learned_cov"] <= 1.0
    assert 0.0 <= res["verifier_acc_heldout"] <= 1.0


# ------------------------------------------------------------------------------ the recall-order probe
def test_probe_traces_cite_the_asked_branch_at_a_varying_position(world):
    """The probe's traces: both cities, then both countries, in either recall order; the step cites the
    asked-for branch's two facts (K0 K2 when it is recalled first, K1 K3 when second), and the scorer
    gives a clean trace full marks in both formats and tells far from near."""
    from neurips25.grid_reasoning import probe

    born = probe.birth_cities(world, seed=1)
    assert set(born) == set(world.people)
    assert all(world.country_of[born[p]] != world.country_of[world.city_of[p]] for p in world.people)
    p = world.test_people[0]
    _, far = probe.probe_trace(world, born, "country", p, False, "graph")  # lives_in first: far
    _, near = probe.probe_trace(world, born, "country", p, True, "graph")
    assert "( K0 K2 )" in far and "( K1 K3 )" in near
    assert far.split()[-1] == near.split()[-1] == world.country_of[world.city_of[p]]
    prompt, cot = probe.probe_trace(world, born, "birth_country", p, False, "cot")
    assert prompt == f"Q birth_country {p} <cot>" and f"so {p} from {world.country_of[born[p]]}" in cot
    qs = [(k, q) for q in world.test_people for k in probe.KINDS]
    for fmt in ("cot", "graph"):
        texts = [probe.probe_trace(world, born, k, q, i % 4 < 2, fmt)[1] for i, (k, q) in enumerate(qs)]
        s = probe.probe_scores(world, born, qs, texts, fmt)
        assert s["accuracy"] == s["follows"] == s["follows_far"] == s["follows_near"] == 1.0
        assert 0.0 < s["far"] < 1.0 and s.get("cites_right", 1.0) == 1.0
    # a step that does not follow from the trace's own facts (answer right, premise swapped) is scored so
    bad = far.replace("( K0 K2 )", "( K0 K3 )").replace(
        f"{p} in {world.country_of[world.city_of[p]]}", f"{p} in {world.country_of[born[p]]}")
    s = probe.probe_scores(world, born, [("country", p)], [bad], "graph")
    assert s["accuracy"] == 1.0 and s["follows"] == 0.0 and s["cites_right"] == 0.0 and s["far"] == 1.0


def test_probe_input_validation(world):
    from neurips25.grid_reasoning import probe

    born = probe.birth_cities(world)
    p = world.test_people[0]
    with pytest.raises(ValueError, match="kind"):
        probe.probe_trace(world, born, "language", p, False, "cot")
    with pytest.raises(ValueError, match="fmt"):
        probe.probe_trace(world, born, "country", p, False, "direct")
    with pytest.raises(ValueError, match="person"):
        probe.probe_trace(world, born, "country", "no body", False, "cot")
    with pytest.raises(ValueError, match="fmt"):
        probe.probe_scores(world, born, [("country", p)], ["x"], "direct")
    with pytest.raises(ValueError, match="equal lengths"):
        probe.probe_scores(world, born, [("country", p)], [], "cot")
    with pytest.raises(ValueError, match="kinds"):
        probe.probe_scores(world, born, [("language", p)], ["x"], "cot")
    for bad in (dict(n_people=0), dict(steps=1.5), dict(n_layer=True), dict(n_embd=-1)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            probe.recall_order_probe(**bad)


def test_probe_smoke_and_cli(tmp_path, monkeypatch):
    """The probe under NEURIPS25_SMOKE=1, and its CLI (``--experiment probe``) writing its own results file."""
    import json

    from neurips25.grid_reasoning import probe

    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    res = probe.recall_order_probe(n_people=20, n_layer=1, n_embd=16, seed=0)
    assert res["n_test"] == 2 * 6 and set(res["graph"]) == {"accuracy", "follows", "far", "follows_far",
                                                           "follows_near", "cites_right"}
    assert all(0.0 <= res["cot"][k] <= 1.0 for k in ("accuracy", "follows", "far"))
    out = tmp_path / "probe.json"
    monkeypatch.setitem(probe.PROBE, "small", dict(seeds=[3, 4], config=dict(n_people=20, steps=2, n_layer=1,
                                                                            n_embd=16)))
    gr.main(["--experiment", "probe", "--out", str(out)])
    payload = json.loads(out.read_text())
    assert payload["slug"] == "grid_reasoning_probe" and payload["smoke"] is True
    assert [r["seed"] for r in payload["data"]["runs"]] == [3]  # seeds capped under smoke
    assert payload["data"]["config"]["n_people"] == 20


def test_probe_premises_are_never_the_two_statements_before_the_step(world):
    from neurips25.grid_reasoning import probe

    born = probe.birth_cities(world)
    assert probe.adjacent_share(world, born) == 0.0
    with pytest.raises(ValueError, match="born"):
        probe.adjacent_share(world, {})


# ------------------------------------------------------------------------------ the premise-distance probe
def test_distance_example_points_at_the_premise_at_its_distance(world):
    """Both formats see the same statements; the graph's premise list names the asked-for branch's city and
    country statements, and ``distance`` counts how many statements back the city statement stands."""
    from neurips25.grid_reasoning import probe

    p = world.test_people[0]
    for n in (0, 3, 8):
        for kind in probe.KINDS:
            qg, ag, dg = probe.distance_example(world, kind, p, n, "graph", seed=5)
            qc, ac, dc = probe.distance_example(world, kind, p, n, "cot", seed=5)
            assert dg == dc and ag.split()[-1] == ac.split()[-1]
            stmts = qg.split("<graph> ")[1].split(" [K")
            assert len(stmts) == 4 + n and 3 <= dg <= 4 + n
            i, j = ag.split("( ")[1].split(" )")[0].split()
            city, country = qg.split(f"[{i}] ")[1].split(" [K")[0].split(), qg.split(f"[{j}] ")[1].split(" [K")[0].split()
            assert city[-2] == probe._BRANCH[kind][0] and country[:2] == [city[-1], "in"]
            assert int(i[1:]) == len(stmts) - dg and ag.split()[-1] == country[-1]
            assert world.country_of[country[0]] == country[-1]  # the world's country, a counterfactual city
            assert qc.count(" , ") + 1 == 4 + n and ac.startswith(f"so {p} {probe._BRANCH[kind][1]} ")
    far = [probe.distance_example(world, "country", p, n, "cot", seed=s)[2] for s in range(20) for n in (0, 8)]
    assert max(far) >= 10 and min(far) <= 3  # the distance varies with the number of distractors and the draw


def test_distance_probe_validation_and_smoke(tmp_path, monkeypatch):
    import json

    from neurips25.grid_reasoning import probe

    world = gr.make_world(20, seed=0)
    with pytest.raises(ValueError, match="n_distract"):
        probe.distance_example(world, "country", world.people[0], -1, "cot")
    with pytest.raises(ValueError, match="fmt"):
        probe.distance_example(world, "country", world.people[0], 1, "direct")
    with pytest.raises(ValueError, match="kind"):
        probe.distance_example(world, "language", world.people[0], 1, "cot")
    for bad in (dict(max_distract=13), dict(draws=0), dict(steps=True), dict(arch="rnn")):
        with pytest.raises(ValueError, match=next(iter(bad))):
            probe.premise_distance_probe(**bad)
    assert all(s["config"]["arch"] == "llama" for s in probe.DISTANCE.values())  # gpt2 (absolute positions) did not learn the lookup
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    out = tmp_path / "distance.json"
    monkeypatch.setitem(probe.DISTANCE, "small", dict(seeds=[3, 4], config=dict(
        n_people=20, steps=2, n_layer=1, n_embd=16, max_distract=2, draws=1)))
    gr.main(["--experiment", "distance", "--out", str(out)])
    payload = json.loads(out.read_text())
    assert payload["slug"] == "grid_reasoning_distance" and [r["seed"] for r in payload["data"]["runs"]] == [3]
    run = payload["data"]["runs"][0]
    assert run["arch"] == "llama"  # the default
    for fmt in ("cot", "graph"):
        by = run[fmt]["by_distance"]
        assert sum(n for _, n in by.values()) == 6 * 2 * 3 and 0.0 <= run[fmt]["accuracy"] <= 1.0



def test_shipped_proposer_b_round_trip(tmp_path, monkeypatch):
    """``--experiment proposer`` stores proposer B with its weights; loaded back and passed to
    run_experiment it gives B's numbers exactly, with no proposer trained; bad input fails clearly."""
    import json

    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    config = dict(n_people=20, steps=2, verifier_steps=2, n_layer=1, n_embd=16, batch_size=8, fact_filtered=True)
    monkeypatch.setitem(gr.SWEEP, "small", dict(seeds=[3, 4], config=config))
    out = tmp_path / "proposer.json"
    gr.main(["--experiment", "proposer", "--out", str(out)])
    payload = json.loads(out.read_text())
    assert payload["slug"] == "grid_reasoning_proposer" and [r["seed"] for r in payload["data"]["runs"]] == [3]
    shipped = payload["data"]["runs"][0]
    world = gr.make_world(20, seed=3)
    model = gr.load_proposer_b(shipped, world, **config)
    calls = []
    monkeypatch.setattr(gr.model, "train_model", lambda *a, **k: calls.append(k) or real(*a, **k))
    real = gr.train_model
    settings = {k: v for k, v in config.items() if k != "fact_filtered"}
    res, st = gr.run_experiment(**settings, seed=3, unfiltered=False, proposer_b=model, return_state=True)
    assert len(calls) == 1 and calls[0]["arch"] == "gpt2"    # the verifier alone was trained
    assert gr.trace_ids(st["kept"]) == shipped["kept"]
    for k, v in shipped["row"].items():
        assert v == res[k] or (v != v and res[k] != res[k]), k    # NaN == NaN here
    with pytest.raises(ValueError, match="shipped"):
        gr.load_proposer_b({"seed": 0}, world)
