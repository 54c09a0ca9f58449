"""Agents: a planner over believed recipes, WALL-E's MPC loop (Alg. 1), the learning loop (Alg. 2),
baselines (ReAct-, Reflexion-, skill-library-style) and the evaluation over many modified worlds.

The "LLM agent" is a goal-directed planner: to obtain the diamond it recursively satisfies the believed
recipe of each step (tools, ingredients, stations nearby), navigating with a scene graph built from its
observations. It is the same for every method; the methods differ in what they believe and remember.
"""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..runtime import check_int
from .learning import HypothesisPrior, Transition, WorldModel, align, induce_rules, rank_hypotheses
from .world import (
    CRAFT_ACTIONS,
    DEFAULT_RECIPES,
    GOAL,
    ITEMS,
    RESOURCES,
    STATIONS,
    TOOLS,
    MiniMars,
    World,
    producer,
    sample_world,
    succeeds,
)

__all__ = ["METHODS", "BUDGET_ARMS", "REFLEXION_MEMORY", "SceneGraph", "Planner", "Agent", "run_episode", "run_world", "evaluate",
           "fit_hypothesis_prior",
           "prediction_accuracy", "MAX_TRIES"]

METHODS = ("walle", "react", "reflexion", "skill", "rules_only", "graph_only", "no_prune", "no_scene",
           "rules_no_scene")
# the rule-budget sweep: WALL-E, rules without the knowledge graph, and action rules alone (neither
# graph: the "rules only" row of the paper's Table 3)
BUDGET_ARMS = ("walle", "rules_only", "rules_no_scene")
_MPC = {"walle", "rules_only", "graph_only", "no_prune", "no_scene", "rules_no_scene"}
_NO_GRAPH = {"rules_only", "rules_no_scene"}  # no knowledge graph
_NO_SCENE = {"no_scene", "rules_no_scene"}  # no scene-graph memory: only the current observation
MAX_TRIES = 5  # MPC re-planning rounds per step (Alg. 1)
REFLEXION_MEMORY = 3  # reflections Reflexion keeps (Shinn et al. 2023 bound its memory to Omega = 1-3)
_STUCK = "stuck"


class SceneGraph:
    """Regions seen so far: (thing, in, region) and (region, adjacent, region) edges from observations.

    ``memory=False`` is the scene-graph ablation: only the current observation is kept, so the agent
    cannot walk back to a place it has seen (it wanders to a random neighbour instead)."""

    def __init__(self, memory: bool = True, seed: int = 0):
        self.contents: dict[int, set[str]] = {}
        self.adj: dict[int, set[int]] = {}
        self.here = 0
        self.memory = memory
        self.rng = random.Random(seed)

    def update(self, obs: dict) -> None:
        if not self.memory:
            self.contents, self.adj = {}, {}
        self.here = obs["region"]
        self.contents[self.here] = set(obs["near"])
        self.adj.setdefault(self.here, set()).update(obs["neighbors"])
        for k in obs["neighbors"]:
            self.adj.setdefault(k, set()).add(self.here)

    def edges(self) -> list[tuple]:
        out = [("agent", "in", self.here)]
        out += [(x, "in", k) for k in sorted(self.contents) for x in sorted(self.contents[k])]
        out += [(a, "adjacent", b) for a in sorted(self.adj) for b in sorted(self.adj[a]) if a < b]
        return out

    def next_hop(self, goal) -> int | None:
        """First move on a shortest known path to a region satisfying ``goal(region)``."""
        prev, queue = {self.here: None}, deque([self.here])
        while queue:
            u = queue.popleft()
            if u != self.here and goal(u):
                while prev[u] != self.here:
                    u = prev[u]
                return u
            for v in sorted(self.adj.get(u, ())):
                if v not in prev:
                    prev[v] = u
                    queue.append(v)
        return None

    def toward(self, thing: str) -> int | None:
        """Next move toward a known region holding ``thing``, else toward the nearest unvisited region."""
        hop = self.next_hop(lambda k: thing in self.contents.get(k, ()))
        if hop is None and not self.memory:
            return self.rng.choice(sorted(self.adj.get(self.here, ()))) if self.adj.get(self.here) else None
        return hop if hop is not None else self.next_hop(lambda k: k not in self.contents)


class Planner:
    """Backward chaining over believed recipes: the first unmet need of the goal, recursively."""

    def __init__(self, recipe_fn, max_depth: int = 12):
        self.recipe_fn, self.max_depth = recipe_fn, max_depth

    def next_action(self, obs: dict, scene: SceneGraph, goal: str = GOAL, action: str | None = None) -> str:
        """The next step toward holding ``goal`` or, if ``action`` is given, toward doing ``action``."""
        self.inv, self.near, self.scene, self.stack = obs["inventory"], set(obs["near"]), scene, []
        out = self._item(goal, 1, 0) if action is None else self._act(action, 1)
        return _STUCK if out is None else out

    def _item(self, item, qty, depth):
        if self.inv.get(item, 0) >= qty:
            return None
        return self._act(producer(item), depth + 1)

    def _act(self, action, depth):
        if depth > self.max_depth or action in self.stack:
            return _STUCK
        self.stack.append(action)
        try:
            need, near = self.recipe_fn(action)
            for i in sorted(need, key=lambda i: (i not in TOOLS, ITEMS.index(i))):
                out = self._item(i, need[i], depth)
                if out is not None:
                    return out
            for s in sorted(near):
                if s in self.near:
                    continue
                if s in STATIONS:
                    return self._act(f"place_{s}", depth + 1)
                hop = self.scene.toward(s)
                return _STUCK if hop is None else f"move_{hop}"
            return action
        finally:
            self.stack.pop()


def _merge(recipe, extra):
    need, near = recipe.need(), set(recipe.near)
    if extra:
        for i, q in extra.get("need", {}).items():
            need[i] = max(need.get(i, 0), q)
        near |= extra.get("near", set())
    return need, near


def _key(obs, action):
    return action, tuple(obs["inventory"][i] for i in ITEMS), tuple(obs["near"])


@dataclass
class Agent:
    """One method's agent in one world; its memory persists across episodes (learning iterations).

    ``walle``: MPC with the aligned world model (graph + code rules, pruned with ``limit``);
    ``rules_only`` / ``graph_only`` / ``no_prune`` / ``no_scene``: ablations; ``rules_no_scene``: action
    rules alone, neither graph (one reading of the paper's "rules only" row); ``react``: prior only,
    real feedback within the episode; ``reflexion``: plus verbal reflections written after each failed
    trial (one hypothesis per failed action, chosen by the same learned ``prior``), the last
    ``REFLEXION_MEMORY`` of them kept across episodes;
    ``skill``: plus a library of the states in which each action succeeded, reused as preconditions.
    ``prior`` is the learned hypothesis prior (the LLM stand-in's judgement); ``None``: uninformed.
    """

    method: str = "walle"
    limit: int | None = 5
    seed: int = 0
    prior: HypothesisPrior | None = None
    learn_every: str = "episode"
    transitions: list = field(default_factory=list)
    model: WorldModel = field(default_factory=WorldModel)
    skills: dict = field(default_factory=dict)
    lessons: dict = field(default_factory=dict)
    memory: list = field(default_factory=list)
    reflections: list = field(default_factory=list)

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.limit is not None and (isinstance(self.limit, bool) or not isinstance(self.limit, int)
                                       or self.limit < 0):
            raise ValueError(f"limit must be None or a non-negative int, got {self.limit!r}")
        if self.prior is not None and not isinstance(self.prior, HypothesisPrior):
            raise TypeError(f"prior must be a HypothesisPrior or None, got {type(self.prior).__name__}")
        if self.learn_every not in ("episode", "step"):
            raise ValueError(f"learn_every must be 'episode' or 'step', got {self.learn_every!r}")
        self.rng = random.Random(self.seed)
        self.episode = 0
        self._stale = False
        self._tried: set = set()

    @property
    def uses_mpc(self) -> bool:
        return self.method in _MPC

    def begin_episode(self):
        self.extra: dict[str, dict] = {}  # feedback from the world model, this episode only
        self.blocked: set = set()  # (state, action) pairs that failed in this episode
        self.log: list[tuple] = []
        self.unlocked: set[str] = set()  # achievements of this episode (actions that succeeded)
        self.start = len(self.transitions)

    def end_episode(self):
        """Alg. 2's learning step (WALL-E and its ablations), or Reflexion's self-reflection (Shinn et
        al., 2023): after a *failed* trial (no diamond) the agent writes one reflection, for each action
        that failed in it the most plausible grammar hypothesis (by the learned prior) that explains the
        last failure and that nothing in the trial contradicts; the next trials follow the reflections
        in a sliding memory of the last ``REFLEXION_MEMORY`` (Shinn et al.'s Omega, 1-3). A lesson that a
        later success refutes is dropped. Unlike WALL-E there is no verification against all past data,
        no coverage and no imagination step."""
        self.episode += 1
        if self.uses_mpc and self._stale:  # Alg. 2: act for an episode, then re-learn
            self.relearn()
        if self.method != "reflexion":
            return
        ep = self.transitions[self.start:]
        succ: dict[str, list] = {}
        for t in ep:
            if t.success:
                succ.setdefault(t.action, []).append(t)

        def refuted(r):
            return any(r.fires(t.inventory, t.near) for t in succ.get(r.action, ()))

        self.memory = [[r for r in refl if not refuted(r)] for refl in self.memory]
        if f"collect_{GOAL}" not in self.unlocked:  # a failed trial: reflect on it
            prior_model, new = WorldModel(), []
            for a in sorted({t.action for t in ep if not t.success}):
                last = [t for t in ep if t.action == a and not t.success][-1]
                cands = [r for r in induce_rules([last], prior_model) if r not in self._tried and not refuted(r)]
                if cands:
                    best = rank_hypotheses(cands, prior_model, self.prior)[0]
                    self._tried.add(best)
                    new.append(best)
                    self.reflections.append(f"episode {self.episode}: {a} failed; next time: {best.text()}")
            self.memory = (self.memory + [new])[-REFLEXION_MEMORY:] if REFLEXION_MEMORY else self.memory + [new]
        self.lessons = {}
        for refl in self.memory:
            for r in refl:
                self.lessons.setdefault(r.action, []).append(r)

    def _recipe(self, action):
        extra = dict(self.extra.get(action, {}))
        if self.method == "skill" and action in self.skills:
            extra = {"need": {**self.skills[action], **extra.get("need", {})}, "near": extra.get("near", set())}
        if self.method == "reflexion" and action in self.lessons:
            need, near = dict(extra.get("need", {})), set(extra.get("near", set()))
            for r in self.lessons[action]:
                if r.kind == "inv_lt":
                    need[r.thing] = max(need.get(r.thing, 0), r.k)
                else:
                    near.add(r.thing)
            extra = {"need": need, "near": near}
        return _merge(self.model.recipe(action), extra)

    def _explore(self, obs, scene):
        near = [f"collect_{r}" for r in RESOURCES if r in obs["near"]]
        near = [a for a in near if _key(obs, a) not in self.blocked and succeeds(
            {a: DEFAULT_RECIPES[a]}, obs["inventory"], obs["near"], a)]
        if near and self.rng.random() < 0.5:
            return self.rng.choice(near)
        unvisited = [k for k in obs["neighbors"] if k not in scene.contents]
        return f"move_{self.rng.choice(unvisited or obs['neighbors'])}"

    def choose(self, obs: dict, scene: SceneGraph) -> str:
        """The task first: the diamond. Once it is held, the episode goes on (as in Mars) and the agent
        works on the achievements it has not unlocked yet, in a fixed order; explore when stuck."""
        targets = [None] if obs["inventory"][GOAL] == 0 else [a for a in CRAFT_ACTIONS if a not in self.unlocked]
        for target in targets:
            a = self._propose(obs, scene, target)
            if a is not None:
                return a
        return self._explore(obs, scene)

    def _propose(self, obs: dict, scene: SceneGraph, target: str | None) -> str | None:
        """Alg. 1: propose, imagine with the world model, re-plan on predicted failure (<= MAX_TRIES).
        ``None``: the planner is stuck on ``target`` (None: the diamond)."""
        planner = Planner(self._recipe)
        a = None
        for _ in range(MAX_TRIES):
            a = planner.next_action(obs, scene, action=target)
            if a == _STUCK or _key(obs, a) in self.blocked:
                return None
            if not self.uses_mpc or a.startswith("move_"):
                return a
            ok, feedback, suggestions = self.model.predict(obs["inventory"], obs["near"], a)
            if ok:
                return a
            self.log.append(("rejected", obs["t"], a, feedback))
            ex = self.extra.setdefault(a, {"need": {}, "near": set()})
            for s in suggestions:
                if "need" in s:
                    ex["need"][s["need"]] = max(ex["need"].get(s["need"], 0), s["qty"])
                else:
                    ex["near"].add(s["near"])
        return a  # after MAX_TRIES the last proposal is executed anyway

    def observe(self, obs, action, success, obs_next):
        """Record the real transition. A misprediction marks the model stale: it is re-aligned after
        the episode (Alg. 2), or at once with ``learn_every="step"``."""
        if action.startswith("move_"):
            return
        t = Transition(dict(obs["inventory"]), frozenset(obs["near"]), action, success,
                       dict(obs_next["inventory"]))
        self.transitions.append(t)
        self.log.append(("real", obs["t"], action, success))
        if success:
            self.unlocked.add(action)
        if not success:
            self.blocked.add(_key(obs, action))
        if self.method == "skill" and success:
            have = {i: q for i, q in obs["inventory"].items() if q > 0}
            old = self.skills.get(action, have)
            self.skills[action] = {i: min(q, have[i]) for i, q in old.items() if i in have}
        if not self.uses_mpc:
            return
        predicted = self.model.predict(t.inventory, t.near, action)[0]
        believed = dict(self.model.recipe(action).consumes)
        used = {i: t.inventory[i] - t.inventory_next[i] for i in ITEMS if t.inventory_next[i] < t.inventory[i]}
        if predicted != success or (success and used != believed):
            self._stale = True
            if self.learn_every == "step":
                self.relearn()

    def relearn(self):
        """The learning step of Alg. 2 on everything recorded so far."""
        self.model, _ = align(self.transitions, limit=self.limit,
                              use_rules=self.method != "graph_only", use_graph=self.method not in _NO_GRAPH,
                              prune=self.method != "no_prune", hypothesis_prior=self.prior)
        self._stale = False


def run_episode(agent: Agent, env: MiniMars) -> dict:
    """One episode; returns success, reward (achievements), steps (real steps until the diamond, the
    whole budget if none), real failures, MPC rejections and the number of rules held."""
    obs, done, reward, goal_step = env.reset(), False, 0.0, None
    scene = SceneGraph(memory=agent.method not in _NO_SCENE, seed=agent.seed * 1000 + agent.episode)
    scene.update(obs)
    agent.begin_episode()
    while not done:
        a = agent.choose(obs, scene)
        nxt, r, done, info = env.step(a)
        agent.observe(obs, a, info["success"], nxt)
        scene.update(nxt)
        obs, reward = nxt, reward + r
        if goal_step is None and env.inventory[GOAL] > 0:
            goal_step = env.t
    agent.end_episode()
    log = agent.log
    return {"success": float(goal_step is not None), "reward": reward,
            "steps": env.max_steps if goal_step is None else goal_step,
            "real_failures": sum(1 for e in log if e[0] == "real" and not e[3]),
            "rejections": sum(1 for e in log if e[0] == "rejected"), "n_rules": len(agent.model.rules)}


def run_world(world: World, method: str, n_iters: int = 5, limit: int | None = 5, max_steps: int = 80,
              seed: int = 0, prior: HypothesisPrior | None = None, learn_every: str = "episode",
              end_at_goal: bool = False):
    """Alg. 2 in one world: ``n_iters`` episodes (fresh maps, same recipes), memory kept between them.
    ``learn_every="episode"`` re-learns after each episode (Alg. 2); ``"step"`` after every misprediction.
    ``end_at_goal``: end each episode at the diamond instead of running the whole budget (Mars does not)."""
    n_iters = check_int(n_iters, "n_iters")
    agent = Agent(method, limit, seed, prior, learn_every)
    stats = [run_episode(agent, MiniMars(world, episode=e, max_steps=max_steps, end_at_goal=end_at_goal))
             for e in range(n_iters)]
    return stats, agent


def fit_hypothesis_prior(world_seeds, n_iters: int = 4, n_modifications: int = 3, max_steps: int = 200,
                         rounds: int = 2) -> HypothesisPrior:
    """Learn the hypothesis prior from experience: WALL-E explores the training worlds ``world_seeds``
    (keep them disjoint from the evaluation worlds) with a generous step budget (episodes end at the
    diamond: what comes after teaches the prior little), and
    :class:`HypothesisPrior` is fitted on everything the agents lived through there. The first round
    starts *uninformed* (all hypotheses equal); each further round explores with the prior just fitted
    and refits on the new experience."""
    rounds = check_int(rounds, "rounds")
    prior = None
    for _ in range(rounds):
        runs = []
        for s in world_seeds:
            _, agent = run_world(sample_world(s, n_modifications), "walle", n_iters, None, max_steps, seed=s,
                                 prior=prior, end_at_goal=True)  # the exploration a prior needs ends there
            runs.append(agent.transitions)
        prior = HypothesisPrior().fit(runs)
    return prior


def prediction_accuracy(model: WorldModel, world: World, n: int = 400, seed: int = 0,
                        only_modified: bool = False) -> float:
    """Accuracy of the predicted success flag on random held-out (state, action) pairs of ``world``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int (number of sampled pairs), got {n!r}")
    rng = random.Random(seed)
    actions = world.modified_actions if only_modified else list(CRAFT_ACTIONS)
    if not actions:
        raise ValueError("world has no modified actions; use only_modified=False")
    hits = 0
    for _ in range(n):
        inv = {i: (1 + int(3 * rng.random()) if rng.random() < 0.6 else 0) for i in ITEMS}
        near = frozenset(x for x in RESOURCES + STATIONS if rng.random() < 0.6)
        a = rng.choice(actions)
        hits += model.predict(inv, near, a)[0] == succeeds(world.recipes, inv, near, a)
    return hits / n


def evaluate(world_seeds, methods=("walle", "react", "reflexion", "skill"), n_iters: int = 5,
             limit: int | None = 5, n_modifications: int = 3, max_steps: int = 80,
             prior: HypothesisPrior | None = None, learn_every: str = "episode", end_at_goal: bool = False) -> dict:
    """Success and reward per (method, world, iteration); world-model accuracy on the modified actions
    after the last iteration; the final number of rules and how often a kept rule misfires on a success."""
    world_seeds = list(world_seeds)
    if not world_seeds:
        raise ValueError("world_seeds must name at least one world, got none")
    if isinstance(methods, str):  # a bare name would be iterated letter by letter
        raise ValueError(f"methods must be a list of names, got the str {methods!r}")
    methods = list(methods)
    if not methods or any(m not in METHODS for m in methods):
        raise ValueError(f"methods must be a non-empty list of names from {METHODS}, got {methods!r}")
    out = {}
    for m in methods:
        succ, rew, acc, n_rules, misfires = [], [], [], [], 0
        for s in world_seeds:
            world = sample_world(s, n_modifications)
            stats, agent = run_world(world, m, n_iters, limit, max_steps, seed=s, prior=prior,
                                     learn_every=learn_every, end_at_goal=end_at_goal)
            succ.append([st["success"] for st in stats])
            rew.append([st["reward"] for st in stats])
            n_rules.append(len(agent.model.rules))
            if world.modified_actions:
                acc.append(prediction_accuracy(agent.model, world, seed=s, only_modified=True))
            for rule, _ in agent.model.rules:  # a kept rule must never flag a real success as a failure
                misfires += sum(t.success and rule.action == t.action and rule.fires(t.inventory, t.near)
                                for t in agent.transitions)
        out[m] = {"success": np.array(succ), "reward": np.array(rew), "accuracy": np.array(acc),
                  "n_rules": np.array(n_rules), "misfires": misfires}
    return out
