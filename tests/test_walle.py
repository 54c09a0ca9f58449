"""Tests for neurips25.walle: MiniMars, the prior, rule code (generation, safety), learning, agents."""
import random

import pytest

from neurips25 import walle as W


def _random_state(rng):
    inv = {i: rng.choice([0, 0, 1, 2, 3]) for i in W.ITEMS}
    near = frozenset(x for x in W.RESOURCES + W.STATIONS if rng.random() < 0.5)
    return inv, near


def test_environment_follows_recipes():
    world = W.sample_world(3)
    env = W.MiniMars(world, episode=1, max_steps=400)
    rng = random.Random(0)
    obs = env.reset()
    for _ in range(300):
        a = rng.choice(list(W.CRAFT_ACTIONS) + [f"move_{k}" for k in obs["neighbors"]])
        expect = True if a.startswith("move_") else W.succeeds(world.recipes, obs["inventory"], obs["near"], a)
        nxt, _, done, info = env.step(a)
        assert info["success"] == expect
        if not a.startswith("move_"):
            used = dict(world.recipes[a].consumes)
            for i in W.ITEMS:
                gained = int(a.split("_", 1)[1] == i and a[:5] != "place")
                delta = nxt["inventory"][i] - obs["inventory"][i]
                assert delta == ((gained - used.get(i, 0)) if expect else 0)
        obs = nxt
        if done:
            break


def test_prior_is_wrong_exactly_where_recipes_were_modified():
    rng = random.Random(1)
    for seed in range(6):
        world = W.sample_world(seed)
        assert len(world.modified_actions) == 3 and W.GOAL in W.obtainable(world.recipes)
        wrong = set()
        for _ in range(3000):
            inv, near = _random_state(rng)
            a = rng.choice(W.CRAFT_ACTIONS)
            if W.succeeds(W.DEFAULT_RECIPES, inv, near, a) != W.succeeds(world.recipes, inv, near, a):
                wrong.add(a)
        assert wrong == set(world.modified_actions)


def test_rule_code_round_trips():
    rng = random.Random(2)
    rules = [W.Rule("make_wood_pickaxe", "inv_lt", "wood", 3), W.Rule("collect_coal", "inv_lt", "stone_sword", 1),
             W.Rule("make_stone_pickaxe", "not_near", "furnace")]
    for r in rules:
        code = W.compile_rule(r.source())
        assert code.name == r.name
        for _ in range(200):
            inv, near = _random_state(rng)
            a = rng.choice([r.action, "collect_wood"])
            out = code({"inventory": inv, "near": tuple(near)}, a)
            assert (out is not None) == (a == r.action and r.fires(inv, near))
            if out is not None:
                assert out[1] is False and isinstance(out[0], str) and isinstance(out[2], dict)


@pytest.mark.parametrize("source, match", [
    ("import os\ndef rule_x(state, action):\n    return None\n", "exactly one function"),
    ("def rule_x(state, action):\n    import os\n    return None\n", "Import"),
    ("def rule_x(state, action):\n    return ().__class__.__bases__[0].__subclasses__()\n", "attribute '__"),
    ("def rule_x(state, action):\n    return ().__class__\n", "'__class__'"),
    ("def rule_x(state, action):\n    return open('/etc/passwd')\n", "'open'"),
    ("def rule_x(state, action):\n    while True:\n        pass\n", "While"),
    ("def rule_x(state, action):\n    return [x for x in state]\n", "ListComp"),
    ("def rule_x(state, action):\n    return eval('1')\n", "'eval'"),
    ("def rule_x(state, action):\n    return 9 ** 9 ** 9\n", "BinOp"),
    ("def rule_x(state, action):\n    x = 'ab'\n    x = x + x\n    return x\n", "BinOp"),
    ("def rule_x(state, action):\n    return state.get.__globals__\n", "__globals__"),
    ("def rule_x(state, action, extra):\n    return None\n", "signature"),
    ("def rule_x(state, action):\n    return (\n", "syntax error"),
    ("def rule_x(state, action):\n    return None\n" + "#" * 3000, "max_chars"),
])
def test_malicious_rule_source_is_refused(source, match):
    with pytest.raises(W.UnsafeCodeError, match=match):
        W.compile_rule(source)


def test_rule_runs_with_restricted_globals_and_step_limit():
    code = W.compile_rule("def rule_x(state, action):\n    return len(state['near'])\n")
    assert code.fn.__globals__["__builtins__"] == W.safe.SAFE_BUILTINS
    assert code({"inventory": {}, "near": ("table",)}, "x") == 1

    def spin(state, action):  # what an unvalidated, looping rule would do
        while True:
            pass

    with pytest.raises(W.RuleTimeoutError, match="max_steps=50"):
        W.call_limited(spin, ({}, "x"), max_steps=50)
    with pytest.raises(ValueError, match="max_steps"):
        W.call_limited(spin, ({}, "x"), max_steps=0)
    with pytest.raises(TypeError, match="source must be a str"):
        W.compile_rule(b"def f(): pass")


def test_knowledge_graph_learns_consumption():
    world = W.sample_world(0)  # make_wood_pickaxe needs 3 wood here
    assert "make_wood_pickaxe: needs 3 wood" in world.modifications
    inv = {i: 0 for i in W.ITEMS} | {"wood": 4}
    nxt = inv | {"wood": 1, "wood_pickaxe": 1}
    t = W.Transition(inv, frozenset({"table"}), "make_wood_pickaxe", True, nxt)
    kg = W.KnowledgeGraph.from_transitions([t])
    assert ("wood", "wood_pickaxe", "consumes", 3) in kg.edges()
    model = W.WorldModel(kg=kg)
    assert dict(model.recipe("make_wood_pickaxe").consumes) == {"wood": 3}


def test_pruning_respects_limit_and_never_misfires():
    for seed in (0, 5, 14):
        world = W.sample_world(seed)
        stats, agent = W.run_world(world, "walle", n_iters=2, seed=seed)
        for rule, code in agent.model.rules:
            for t in agent.transitions:
                if t.success:
                    out = code(t.state(), t.action)
                    assert out is None or out[1], (rule, t)
        assert len(agent.model.rules) <= 5
    model, _ = W.align(agent.transitions, limit=1)
    assert len(model.rules) <= 1
    with pytest.raises(ValueError, match="limit"):
        W.prune_rules({}, -1, model)


def test_default_world_needs_no_rules():
    world = W.sample_world(4, n_modifications=0)
    assert world.modified_actions == []
    stats, agent = W.run_world(world, "walle", n_iters=2, seed=4)
    assert agent.model.rules == [] and all(s["success"] == 1.0 for s in stats)
    assert all(s["real_failures"] == 0 for s in stats)


@pytest.fixture(scope="module")
def prior():
    return W.fit_hypothesis_prior(range(1000, 1012), n_iters=3, rounds=1)


def test_hypothesis_prior_is_learned_from_experience(prior):
    model = W.WorldModel()
    assert prior.pos and prior.neg  # it saw both confirmed and refuted hypotheses
    # a station requirement for crafting was confirmed more often than a stray resource nearby
    station = W.Rule("make_stone_pickaxe", "not_near", "furnace")
    stray = W.Rule("make_stone_pickaxe", "not_near", "sapling")
    assert prior.score(station, model) > prior.score(stray, model)
    assert W.rank_hypotheses([stray, station], model, prior)[0] == station
    # uninformed: ties go to the cheaper hypothesis to test, then to the name
    assert W.rank_hypotheses([stray, station], model)[0].name == max(stray.name, station.name)
    rows = prior.table()
    assert all(a[3] >= b[3] for a, b in zip(rows, rows[1:]))
    empty = W.HypothesisPrior().fit([[]])
    assert empty.score(station, model) == 0.0


def test_walle_beats_react_on_a_few_worlds(prior):
    res = W.evaluate(range(6), methods=("walle", "react"), n_iters=3, prior=prior)
    assert res["walle"]["success"].mean() >= res["react"]["success"].mean() + 0.15
    assert res["walle"]["accuracy"].mean() > res["react"]["accuracy"].mean()


def test_reflexion_writes_transferable_lessons(prior):
    world = W.sample_world(0, 5)
    _, refl = W.run_world(world, "reflexion", n_iters=4, seed=0, prior=prior)
    _, react = W.run_world(world, "react", n_iters=4, seed=0, prior=prior)
    assert refl.reflections and all("next time" in r for r in refl.reflections)
    assert refl.lessons and not react.lessons and not react.reflections
    # a lesson is about the recipe, not the state: it changes what the planner needs on any map
    a, rules = next(iter(refl.lessons.items()))
    need, near = refl._recipe(a)
    for r in rules:
        assert (need.get(r.thing, 0) >= r.k) if r.kind == "inv_lt" else (r.thing in near)


def test_reflexion_reflects_on_failed_trials_with_a_bounded_memory(prior):
    world = W.sample_world(0, 5)
    _, refl = W.run_world(world, "reflexion", n_iters=5, seed=0, prior=prior)
    assert 1 <= len(refl.memory) <= W.REFLEXION_MEMORY  # Shinn et al.: the last Omega reflections
    held = {r for rules in refl.lessons.values() for r in rules}
    assert held == {r for refl_ in refl.memory for r in refl_}
    # a trial that reached the diamond writes no reflection
    agent = W.Agent("reflexion", prior=prior)
    agent.begin_episode()
    agent.unlocked.add("collect_diamond")
    agent.end_episode()
    assert agent.memory == [] and agent.reflections == []


def test_episode_runs_the_whole_budget_as_in_mars(prior):
    world = W.sample_world(9, 5)  # a world WALL-E solves
    full, _ = W.run_world(world, "walle", n_iters=5, seed=9, prior=prior)
    short, _ = W.run_world(world, "walle", n_iters=5, seed=9, prior=prior, end_at_goal=True)
    won = [e for e, st in enumerate(short) if st["success"]]
    assert won and all(full[e]["success"] for e in won[:1])
    e = won[0]  # same trajectory up to the diamond, then more achievements in the rest of the budget
    assert full[e]["steps"] == short[e]["steps"] < 80 and full[e]["reward"] >= short[e]["reward"]
    assert max(st["reward"] for st in full) > max(st["reward"] for st in short)
    env = W.MiniMars(world, max_steps=3, end_at_goal=False)
    env.reset()
    for _ in range(3):
        env.step("collect_wood")
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step("collect_wood")


def test_scene_graph_ablation_forgets_the_map():
    obs = {"region": 0, "neighbors": [1, 2], "near": ["wood"]}
    full, amnesic = W.SceneGraph(), W.SceneGraph(memory=False)
    for g in (full, amnesic):
        g.update(obs)
        g.update({"region": 1, "neighbors": [0, 3], "near": ["stone"]})
    assert full.toward("wood") == 0 and "wood" in full.contents[0]
    assert 0 not in amnesic.contents and amnesic.toward("wood") in (0, 3)


def test_rules_no_scene_learns_no_graph_and_plans_with_mpc(prior):
    world = W.sample_world(3, 5)
    _, rules = W.run_world(world, "rules_only", n_iters=2, seed=3, prior=prior)
    _, bare = W.run_world(world, "rules_no_scene", n_iters=2, seed=3, prior=prior)
    # neither learns a knowledge graph; both plan through the world model (MPC)
    assert rules.model.kg is None and bare.model.kg is None
    assert bare.uses_mpc and not W.Agent("react").uses_mpc


def test_pruning_limit_binds_with_episode_learning(prior):
    res = {lim: W.evaluate(range(4), ["walle"], n_iters=3, limit=lim, n_modifications=5, prior=prior)["walle"]
           for lim in (0, 3)}
    assert res[0]["n_rules"].max() == 0 and res[3]["n_rules"].max() <= 3
    assert res[3]["reward"].mean() > res[0]["reward"].mean()


def test_invalid_inputs_raise_clear_errors():
    env = W.MiniMars(W.sample_world(0))
    with pytest.raises(ValueError, match="action must be one of"):
        env.step("fly")
    with pytest.raises(ValueError, match="outside"):
        env.step("move_99")
    with pytest.raises(TypeError, match="action must be a str"):
        env.step(3)
    with pytest.raises(ValueError, match="method"):
        W.Agent("magic")
    with pytest.raises(ValueError, match="n_modifications"):
        W.sample_world(0, 9)
    with pytest.raises(TypeError, match="world"):
        W.MiniMars("world")
    with pytest.raises(TypeError, match="end_at_goal"):
        W.MiniMars(W.sample_world(0), end_at_goal="yes")
    with pytest.raises(ValueError, match="n_iters"):
        W.run_world(W.sample_world(0), "walle", n_iters=0)
    with pytest.raises(ValueError, match="learn_every"):
        W.Agent("walle", learn_every="sometimes")
    with pytest.raises(TypeError, match="prior"):
        W.Agent("walle", prior={"a": 1})
    with pytest.raises(ValueError, match="rounds"):
        W.fit_hypothesis_prior([1000], rounds=0)


def test_bools_and_empty_inputs_are_rejected():
    """A bool is not a count, and an evaluation over no worlds or no methods is an error, not {}."""
    world = W.sample_world(0)
    with pytest.raises(TypeError, match="seed"):
        W.sample_world(True, 5)
    with pytest.raises(ValueError, match="n_modifications"):
        W.sample_world(0, True)
    with pytest.raises(ValueError, match="n_iters"):
        W.run_world(world, "walle", n_iters=True)
    with pytest.raises(ValueError, match="limit"):
        W.run_world(world, "walle", limit=True)
    model, _ = W.align([], limit=1)
    with pytest.raises(ValueError, match="limit"):
        W.prune_rules({}, True, model)
    with pytest.raises(ValueError, match="world_seeds"):
        W.evaluate([], ["walle"])
    with pytest.raises(ValueError, match="methods"):
        W.evaluate([0], [])
    with pytest.raises(ValueError, match="methods"):
        W.evaluate([0], "walle")
    with pytest.raises(ValueError, match="methods"):
        W.evaluate([0], ["magic"])
    with pytest.raises(ValueError, match="n must be a positive int"):
        W.prediction_accuracy(model, world, n=0)
    with pytest.raises(ValueError, match="n must be a positive int"):
        W.prediction_accuracy(model, world, n=True)


def test_entry_point_runs_from_a_gpt2_style_checkpoint(gpt2_style_checkpoint, any_device):
    """The agent's hypothesis prior read from a real checkpoint (here the tiny GPT-2-style fixture:
    byte-level vocabulary, pad = eos, not id 0) runs the whole evaluation on ``any_device``."""
    from neurips25.lm import pretrained

    model, tok = pretrained(str(gpt2_style_checkpoint), device=any_device)
    assert tok.pad_token_id != 0
    lm_prior = W.LanguageModelPrior(model, tok, prompt="Tip:")  # the fixture's context is 64 bytes
    rules = [W.Rule("make_stone_pickaxe", "not_near", "furnace"), W.Rule("make_stone_pickaxe", "inv_lt", "wood", 3)]
    scores = lm_prior.score_many(rules)
    assert len(scores) == 2 and all(s < 0 for s in scores)  # mean log-probabilities
    assert lm_prior.score(rules[0], W.WorldModel()) == scores[0]  # cached
    assert W.rank_hypotheses(rules, W.WorldModel(), lm_prior)[0] == rules[int(scores[1] > scores[0])]
    res = W.evaluate(range(2), methods=("walle", "reflexion"), n_iters=2, prior=lm_prior)
    for m in ("walle", "reflexion"):
        assert res[m]["success"].shape == (2, 2) and ((0 <= res[m]["success"]) & (res[m]["success"] <= 1)).all()
        assert res[m]["misfires"] == 0
    assert len(lm_prior.cache) > 2  # the agents consulted the language model
    with pytest.raises(TypeError, match="LM"):
        W.LanguageModelPrior(object(), tok)
