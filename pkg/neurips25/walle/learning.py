"""Neurosymbolic world alignment (WALL-E 2.0, Sec. 3): knowledge graph, action rules as code, pruning.

From real transitions we learn
* a **knowledge graph** of ``(item, product, consumes|requires, qty)`` edges from the inventory changes of
  successful actions: it replaces the prior's consumption and drops prior requirements never needed;
* **action rules** "for action a, if <condition> the action will fail", induced from the transitions the
  world model mispredicted (D_inc), written out as Python source, compiled through :mod:`.safe`, verified
  on every real transition and pruned by greedy maximum coverage with at most ``limit`` rules.
The world model is the prior corrected by the graph, with the code rules overriding its success flag.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .safe import CodeRule, compile_rule
from .world import (
    DEFAULT_RECIPES,
    ITEMS,
    RESOURCES,
    STATIONS,
    TOOLS,
    Recipe,
    check_action,
    producer,
    succeeds,
)

__all__ = ["Transition", "Rule", "KnowledgeGraph", "WorldModel", "HypothesisPrior", "LanguageModelPrior", "rank_hypotheses", "induce_rules",
           "verify_rules", "prune_rules", "align", "K_MAX"]

K_MAX = 3  # stand-in for the LLM's commonsense that recipes use a handful of items, not dozens


@dataclass
class Transition:
    """One real step (s, a, success, s') restricted to what the rules see: inventory and what is near."""

    inventory: dict
    near: frozenset
    action: str
    success: bool
    inventory_next: dict

    def state(self) -> dict:
        return {"inventory": self.inventory, "near": tuple(sorted(self.near))}


@dataclass(frozen=True)
class Rule:
    """A candidate action rule from the grammar: ``inventory[thing] < k`` or ``thing not near``."""

    action: str
    kind: str  # "inv_lt" | "not_near"
    thing: str
    k: int = 1

    @property
    def name(self) -> str:
        return f"rule_{self.action}_{self.kind}_{self.thing}_{self.k}"

    def fires(self, inventory: dict, near) -> bool:
        if self.kind == "inv_lt":
            return inventory.get(self.thing, 0) < self.k
        return self.thing not in near

    def text(self) -> str:
        """The rule as a verbal lesson (what Reflexion writes down)."""
        if self.kind == "inv_lt":
            return f"have at least {self.k} {self.thing} before {self.action}"
        return f"be near a {self.thing} before {self.action}"

    def source(self) -> str:
        """The rule as Python source: ``Rule(state, action) -> (feedback, success, suggestion) | None``."""
        if self.kind == "inv_lt":
            cond = f'state["inventory"].get("{self.thing}", 0) < {self.k}'
            text = f"{self.action} fails when the inventory has fewer than {self.k} {self.thing}"
            sugg = f'{{"need": "{self.thing}", "qty": {self.k}}}'
        else:
            cond = f'"{self.thing}" not in state["near"]'
            text = f"{self.action} fails unless a {self.thing} is nearby"
            sugg = f'{{"near": "{self.thing}"}}'
        return (f"def {self.name}(state, action):\n"
                f'    """For action {self.action}: if {cond.replace(chr(34), chr(39))}, the action will fail."""\n'
                f'    if action != "{self.action}":\n'
                f"        return None\n"
                f"    if {cond}:\n"
                f'        return ("{text}", False, {sugg})\n'
                f"    return None\n")


@lru_cache(maxsize=4096)
def _compiled(rule: Rule) -> CodeRule:
    return compile_rule(rule.source())


@dataclass
class KnowledgeGraph:
    """Edges learned from successful transitions: what each action consumed and which prior
    requirements (tools held, things near) were present in every success."""

    consumes: dict = field(default_factory=dict)
    held: dict = field(default_factory=dict)
    near: dict = field(default_factory=dict)

    @classmethod
    def from_transitions(cls, transitions) -> KnowledgeGraph:
        kg = cls()
        for t in transitions:
            if not t.success or t.action.startswith("move_"):
                continue
            used = {i: t.inventory[i] - t.inventory_next[i] for i in ITEMS
                    if t.inventory_next[i] < t.inventory[i]}
            kg.consumes.setdefault(t.action, used)
            tools = {i for i in TOOLS if t.inventory[i] > 0}
            kg.held[t.action] = kg.held.get(t.action, tools) & tools
            kg.near[t.action] = kg.near.get(t.action, set(t.near)) & set(t.near)
        return kg

    def edges(self) -> list[tuple[str, str, str, int]]:
        out = []
        for a, used in sorted(self.consumes.items()):
            product = a.split("_", 1)[1]
            out += [(i, product, "consumes", q) for i, q in sorted(used.items())]
            out += [(i, product, "requires", 1) for i in sorted(self.held[a])]
            out += [(s, product, "near", 1) for s in sorted(self.near[a]) if s in STATIONS]
        return out

    def correct(self, action: str, prior: Recipe) -> Recipe:
        if action not in self.consumes:
            return prior
        return Recipe(tuple(sorted(self.consumes[action].items())),
                      tuple(t for t in prior.requires if t in self.held[action]),
                      tuple(s for s in prior.near if s in self.near[action]))


class WorldModel:
    """Prior recipes, optionally corrected by a knowledge graph, with code rules on top (Eq. of Sec. 3.3:
    the rules override the model's predicted success flag and return feedback and a suggestion)."""

    def __init__(self, prior: dict | None = None, kg: KnowledgeGraph | None = None, rules=()):
        self.prior = dict(DEFAULT_RECIPES if prior is None else prior)
        self.kg = kg
        self.rules: list[tuple[Rule, CodeRule]] = list(rules)
        self._cache: dict[str, Recipe] = {}  # the model is immutable once built
        self._by_action: dict[str, list[CodeRule]] = {}
        for r, code in self.rules:
            self._by_action.setdefault(r.action, []).append(code)

    def recipe(self, action: str) -> Recipe:
        if action not in self._cache:
            prior = self.prior[action]
            self._cache[action] = self.kg.correct(action, prior) if self.kg is not None else prior
        return self._cache[action]

    def predict(self, inventory: dict, near, action: str):
        """(success, feedbacks, suggestions) for a crafting action; moves are not modelled here."""
        check_action(action)
        ok = succeeds({action: self.recipe(action)}, inventory, near, action)
        feedbacks, suggestions = [], []
        state = {"inventory": inventory, "near": tuple(sorted(near))}
        for code in self._by_action.get(action, ()):
            out = code(state, action)
            if out is not None and not out[1]:
                ok = False
                feedbacks.append(out[0])
                suggestions.append(out[2])
        return ok, feedbacks, suggestions


def _depends(thing: str, product: str, model: WorldModel, extra=None, seen=None) -> bool:
    """Whether obtaining ``thing`` needs ``product`` under the believed recipes plus the requirements of
    already chosen rules (``extra``: action -> items): such a rule would make the tech tree cyclic."""
    if thing == product:
        return True
    seen = set() if seen is None else seen
    if thing in seen:
        return False
    seen.add(thing)
    a = producer(thing)
    r = model.recipe(a)
    needs = set(r.need()) | set((extra or {}).get(a, ()))
    return any(_depends(i, product, model, extra, seen) for i in needs) or any(
        _depends(s, product, model, extra, seen) for s in r.near if s in STATIONS)


def _cost(thing: str, model: WorldModel, seen=()) -> int:
    """Rough number of actions to obtain ``thing`` from nothing under the believed recipes."""
    if thing in seen:
        return 99
    r = model.recipe(producer(thing))
    return 1 + sum(q * _cost(i, model, (*seen, thing)) for i, q in r.need().items()) + sum(
        _cost(s, model, (*seen, thing)) for s in r.near if s in STATIONS)


def _features(rule: Rule, model: WorldModel) -> tuple:
    """What the hypothesis prior sees of a rule: the action's verb, the rule's kind, the category of
    the thing it names, that thing's role in the *believed* recipe, and the threshold k. Generic
    descriptors, no game knowledge: which combinations are plausible is learned (``HypothesisPrior``)."""
    r = model.recipe(rule.action)
    role = ("consumed" if rule.thing in dict(r.consumes) else "required" if rule.thing in r.requires
            else "near" if rule.thing in r.near else "none")
    cat = "tool" if rule.thing in TOOLS else "station" if rule.thing in STATIONS else "resource"
    return rule.action.split("_", 1)[0], rule.kind, cat, role, min(rule.k, 2)


@dataclass
class HypothesisPrior:
    """A learned plausibility for candidate rules: the stand-in for the LLM's judgement of which
    hypothesis to try first. Fitted on the agent's own experience in *training* worlds (disjoint from
    the evaluation worlds): every grammar candidate induced for a real failure is a positive if it
    survived all the agent's later experience of that action (never fired on a real success, and the
    action did succeed at least once), else a negative. The score of a rule is the smoothed log-odds of
    its feature tuple (a count table: naive, transparent, learned)."""

    pos: dict = field(default_factory=dict)
    neg: dict = field(default_factory=dict)

    def score(self, rule: Rule, model: WorldModel) -> float:
        f = _features(rule, model)
        return float(np.log((self.pos.get(f, 0) + 0.5) / (self.neg.get(f, 0) + 0.5)))

    def fit(self, runs) -> HypothesisPrior:
        """``runs``: one list of Transition per training world (an agent's whole experience there)."""
        for transitions in runs:
            crafts = [t for t in transitions if not t.action.startswith("move_")]
            model = WorldModel()
            succ: dict[str, list[Transition]] = {}
            for t in crafts:
                if t.success:
                    succ.setdefault(t.action, []).append(t)
            fails = [t for t in crafts if not t.success and t.action in succ
                     and model.predict(t.inventory, t.near, t.action)[0]]
            for r in induce_rules(fails, model):
                ok = not any(r.fires(t.inventory, t.near) for t in succ[r.action])
                table = self.pos if ok else self.neg
                f = _features(r, model)
                table[f] = table.get(f, 0) + 1
        return self

    def table(self) -> list[tuple]:
        """(features, positives, negatives, score) for every feature tuple seen, best first."""
        rows = [(f, self.pos.get(f, 0), self.neg.get(f, 0),
                 float(np.log((self.pos.get(f, 0) + 0.5) / (self.neg.get(f, 0) + 0.5))))
                for f in set(self.pos) | set(self.neg)]
        return sorted(rows, key=lambda x: (-x[3], x[0]))


class LanguageModelPrior(HypothesisPrior):
    """The hypothesis prior read from a language model: the paper's LLM judges which rule to try
    first. A candidate's score is the mean per-token log-probability of its verbal lesson
    (``Rule.text()``, underscores read as spaces) after ``prompt``, under ``model`` / ``tokenizer`` —
    any causal LM, e.g. ``neurips25.lm.pretrained("gpt2")``. Scores are cached per rule; the learned
    tie-breaks of :func:`rank_hypotheses` (cost, then name) are unchanged. Drop-in wherever a
    ``HypothesisPrior`` is taken (``Agent``, ``run_world``, ``evaluate``)."""

    def __init__(self, model, tokenizer, prompt: str = "In a Minecraft-like crafting game an action failed. Lesson:"):
        super().__init__()
        if not hasattr(model, "config") or not hasattr(tokenizer, "pad_token_id"):
            raise TypeError("model and tokenizer must be a transformers causal LM and its tokenizer "
                            "(e.g. neurips25.lm.pretrained('gpt2'))")
        if not isinstance(prompt, str) or not prompt:
            raise ValueError(f"prompt must be a non-empty string, got {prompt!r}")
        self.model, self.tokenizer, self.prompt = model, tokenizer, prompt
        self.cache: dict[Rule, float] = {}

    def score(self, rule: Rule, model: WorldModel) -> float:
        if rule not in self.cache:
            self.score_many([rule])
        return self.cache[rule]

    def score_many(self, rules) -> list[float]:
        """Score (and cache) ``rules`` in one batched forward pass of the language model."""
        import torch

        from ..lm import continuation_logprobs

        new = [r for r in dict.fromkeys(rules) if r not in self.cache]
        if new:
            with torch.no_grad():
                lps = continuation_logprobs(self.model, self.tokenizer, [self.prompt] * len(new),
                                            [" " + r.text().replace("_", " ") for r in new])
            self.cache.update((r, float(lp.mean())) for r, lp in zip(new, lps))
        return [self.cache[r] for r in rules]

    def fit(self, runs) -> LanguageModelPrior:
        raise NotImplementedError("a LanguageModelPrior is read from its language model, not fitted")


def _hypothesis_key(rule: Rule, model: WorldModel, prior, costs: dict) -> tuple:
    if rule.kind == "inv_lt" and rule.thing not in costs:
        costs[rule.thing] = _cost(rule.thing, model)
    cost = costs[rule.thing] * rule.k if rule.kind == "inv_lt" else 0
    return (prior.score(rule, model) if prior is not None else 0.0), -cost, rule.name


def rank_hypotheses(rules, model: WorldModel, prior: HypothesisPrior | None = None) -> list[Rule]:
    """Candidate rules, most plausible first: by the learned ``prior``'s score, then the cheaper to
    test (fewer actions to satisfy the rule under the believed recipes), then by name."""
    costs: dict = {}
    if isinstance(prior, LanguageModelPrior):
        prior.score_many(list(rules))  # one batched forward pass instead of one per rule
    return sorted(rules, key=lambda r: _hypothesis_key(r, model, prior, costs), reverse=True)


def induce_rules(failures, model: WorldModel) -> list[Rule]:
    """Candidate rules from the grammar for mispredicted failures (spurious candidates included):
    for every item y, ``inventory[y] < count+1`` (k <= K_MAX), and for every absent thing, ``not near``."""
    cands: set[Rule] = set()
    for t in failures:
        product = t.action.split("_", 1)[1]
        for y in ITEMS:
            k = t.inventory.get(y, 0) + 1
            if y in TOOLS and k > 1:  # a tool is held or not: "needs two pickaxes" is not a hypothesis
                continue
            if k <= K_MAX and not _depends(y, product, model):  # no cycles in the believed tree
                cands.add(Rule(t.action, "inv_lt", y, k))
        for z in STATIONS + RESOURCES:
            if z not in t.near and not (z in STATIONS and _depends(z, product, model)):
                cands.add(Rule(t.action, "not_near", z))
    return sorted(cands, key=lambda r: r.name)


def verify_rules(rules, transitions, inc):
    """Run each rule's code on the real transitions of its action. A rule is dropped if it raises or
    flags failure on a real success; otherwise its coverage is the set of D_inc indices it flags."""
    by_action: dict[str, list[int]] = {}
    for j, t in enumerate(transitions):
        by_action.setdefault(t.action, []).append(j)
    kept = {}
    for r in rules:
        try:
            code = _compiled(r)
            cover, ok = set(), True
            for j in by_action.get(r.action, ()):
                t = transitions[j]
                out = code(t.state(), t.action, max_steps=None)  # validated, loop-free code
                if out is not None and not out[1]:
                    if t.success:
                        ok = False
                        break
                    if j in inc:
                        cover.add(j)
        except Exception:  # noqa: BLE001 - a rule that raises is pruned, whatever it raised
            continue
        if ok and cover:
            kept[r] = cover
    return kept


def prune_rules(coverage: dict, limit: int | None, model: WorldModel,
                prior: HypothesisPrior | None = None) -> list[Rule]:
    """Greedy maximum coverage of D_inc with at most ``limit`` rules. Ties go to the hypothesis the
    learned ``prior`` finds more plausible (none: all equal), then to the cheaper one to test; a rule
    whose requirement would close a cycle with the rules already chosen is skipped (the tech tree of a
    solvable world is acyclic)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be None or a non-negative int, got {limit!r}")
    coverage = dict(coverage)
    chosen, covered, extra = [], set(), {}

    costs = {}

    def key(r):
        return (len(coverage[r] - covered), *_hypothesis_key(r, model, prior, costs))

    while coverage and (limit is None or len(chosen) < limit):
        best = max(coverage, key=key)
        if not coverage[best] - covered:
            break
        gained = coverage.pop(best)
        product = best.action.split("_", 1)[1]
        needs = best.kind == "inv_lt" or best.thing in STATIONS
        if needs and _depends(best.thing, product, model, extra):
            continue
        chosen.append(best)
        covered |= gained
        if needs:
            extra.setdefault(best.action, set()).add(best.thing)
    return chosen


def align(transitions, prior: dict | None = None, limit: int | None = 5, use_rules: bool = True,
          use_graph: bool = True, prune: bool = True, hypothesis_prior: HypothesisPrior | None = None):
    """One pass of neurosymbolic learning (Alg. 2, learning step): returns (world model, info)."""
    if not isinstance(transitions, list):
        raise TypeError(f"transitions must be a list of Transition, got {type(transitions).__name__}")
    crafts = [t for t in transitions if not t.action.startswith("move_")]
    kg = KnowledgeGraph.from_transitions(crafts) if use_graph else None
    base = WorldModel(prior, kg)
    inc = {j for j, t in enumerate(crafts) if base.predict(t.inventory, t.near, t.action)[0] != t.success}
    info = {"n_transitions": len(crafts), "n_inc": len(inc), "n_candidates": 0, "n_verified": 0}
    if not use_rules or not inc:
        return base, info
    cands = induce_rules([crafts[j] for j in sorted(inc) if not crafts[j].success], base)
    info["n_candidates"] = len(cands)
    if not prune:  # ablation: keep every induced rule, unverified
        return WorldModel(prior, kg, [(r, _compiled(r)) for r in cands]), info
    coverage = verify_rules(cands, crafts, inc)
    info["n_verified"] = len(coverage)
    rules = prune_rules(coverage, limit, base, hypothesis_prior)
    return WorldModel(prior, kg, [(r, _compiled(r)) for r in rules]), info
