"""Local step verifiers (oracle and learned), Algorithm 1 (filtering), runtime verification, metrics."""
from __future__ import annotations

import numbers
import random
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Sequence

import numpy as np

from ..runtime import check_int
from .graph import (
    CORRUPTIONS,
    RELATIONS,
    RULES,
    Graph,
    Node,
    Trace,
    World,
    check_dag,
    extract_answer,
    gold_graph,
    parse_graph,
    topological_order,
)

# ---------------------------------------------------------------------------------------- verifiers
Verifier = Callable[[Node, Sequence[Node]], bool]


def _derive(premises: Sequence[Node]):
    """The conclusions the world's ``RULES`` license from exactly these premises (either order)."""
    out = set()
    if len(premises) == 2:
        for a, b in (premises, premises[::-1]):
            (s, r1, x), (y, r2, o) = a.triple, b.triple
            if x == y and (r1, r2) in RULES:
                out.add((s, RULES[(r1, r2)], o))
    return out


class OracleVerifier:
    """Exact local verifier (the upper bound): checks one reasoning step against its cited premises.

    The paper's three conditions, made exact in the symbolic world:

    * *fact satisfiability* — every cited knowledge node (``K``) is a true fact of the world (reasoning
      premises were verified when they were produced, so local verification takes them as given);
    * *dependency satisfiability* — the step's conclusion follows from exactly the cited premises by
      one of the world's ``RULES``;
    * *purpose satisfiability* — the step states something new: its relation is the one the rule
      produces (not a restated or irrelevant relation) and it is not a copy of a premise.
    """

    def __init__(self, world: World):
        if not isinstance(world, World):
            raise TypeError(f"world must be a World, got {type(world).__name__}")
        self.world = world

    def checks(self, step: Node, premises: Sequence[Node]) -> dict:
        """The three checks separately: ``{"fact": bool, "dependency": bool, "purpose": bool}``."""
        _check_step(step, premises)
        fact = all(self.world.holds(*p.triple) for p in premises if p.kind == "K")
        derivable = _derive(premises)
        dependency = step.triple in derivable
        purpose = (any(step.triple[1] == d[1] for d in derivable)
                   and all(step.triple != p.triple for p in premises))
        return {"fact": fact, "dependency": dependency, "purpose": purpose}

    def __call__(self, step: Node, premises: Sequence[Node]) -> bool:
        return all(self.checks(step, premises).values())


def _check_step(step, premises) -> None:
    if not isinstance(step, Node) or step.kind != "R":
        raise TypeError(f"step must be a reasoning Node (name R<j>), got {step!r}")
    if isinstance(premises, Node) or not all(isinstance(p, Node) for p in premises):
        raise TypeError("premises must be a list of Node")
    if [p.name for p in premises] != list(step.premises):
        raise ValueError(f"premises of {step.name} must be exactly its cited nodes {list(step.premises)}, "
                         f"got {[p.name for p in premises]}")


def verify_prompt(step: Node, premises: Sequence[Node]) -> str:
    """The learned verifier's input: the cited premises (tagged ``[K]`` knowledge / ``[R]`` derived) and
    the step, nothing else — ``<verify> [K] P lives_in C [K] C in K => P in K`` (answer ``yes``/``no``)."""
    _check_step(step, premises)
    return " ".join(["<verify>"] + [f"[{p.kind}] {p.text}" for p in premises] + ["=>", step.text])


def verifier_examples(world: World, people: Sequence[str] | None = None, *, repeats: int = 1,
                      corruptions: Sequence[str] = CORRUPTIONS, seed: int = 0) -> list[tuple[str, str]]:
    """Balanced ``(verify prompt, "yes"/"no")`` pairs for training or testing the learned verifier.

    For each person, each rule step (``R0``: lives_in ∘ in, ``R1``: in ∘ speaks) and each of ``repeats``
    rounds: the correct step and one corrupted step (a false knowledge premise, a wrong conclusion, or a
    wrong cited premise — drawn at random from ``corruptions``), labelled by ``OracleVerifier``.
    """
    people = world.train_people if people is None else tuple(people)
    repeats = check_int(repeats, "repeats")
    if not corruptions or any(c not in CORRUPTIONS for c in corruptions):
        raise ValueError(f"corruptions must be a non-empty subset of {CORRUPTIONS}, got {corruptions!r}")
    rng, oracle, out = random.Random(seed), OracleVerifier(world), []
    for p in people:
        g = gold_graph(world, "language", p)
        for r in [r for r in g.reasoning for _ in range(repeats)]:
            prem = g.parents(r)
            out.append((verify_prompt(r, prem), "yes"))
            what = rng.choice(list(corruptions))
            step, prem = r, list(prem)
            if what == "fact":
                ks = [i for i, q in enumerate(prem) if q.kind == "K"]
                i = rng.choice(ks)
                rel = prem[i].triple[1]
                wrong = rng.choice([o for o in world.objects(rel) if o != prem[i].triple[2]])
                prem[i] = replace(prem[i], triple=prem[i].triple[:2] + (wrong,))
                step = replace(step, triple=step.triple[:2] + (_derive(prem).pop()[2],)) if _derive(prem) else step
            elif what == "conclusion":
                wrong = rng.choice([o for o in world.objects(step.triple[1]) if o != step.triple[2]])
                step = replace(step, triple=step.triple[:2] + (wrong,))
            else:
                other = [n for n in g.nodes if n.name != step.name and n.name not in step.premises]
                j = rng.randrange(len(prem))
                prem[j] = rng.choice(other)
                step = replace(step, premises=tuple(q.name for q in prem))
            label = "yes" if oracle(step, prem) else "no"
            out.append((verify_prompt(step, prem), label))
    return out


class LearnedVerifier:
    """The learned local verifier: one tiny LM (trained on the knowledge corpus and on verify prompts)
    judges a step from its cited premises only, with the paper's three conditions split the way the
    model can answer them:

    * *fact satisfiability* from the model's own memory: each cited knowledge premise ``s r o`` must be
      the model's greedy recall of ``s r`` (the knowledge corpus format);
    * *dependency and purpose* from the verify prompt: ``P(yes)`` after
      ``<verify> [K] ... [R] ... => step`` (``verify_prompt``) must reach ``threshold``.

    A callable like ``OracleVerifier``; ``prefetch`` scores many steps in one batch (cached), so the
    sequential loops of ``verify_graph`` stay cheap. ``n_tokens`` counts the verification tokens.
    """

    def __init__(self, model, tokenizer, *, threshold: float = 0.5, batch_size: int = 512, recall_tokens: int = 8):
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")
        self.model, self.tok, self.threshold, self.batch_size = model, tokenizer, threshold, batch_size
        self.recall_tokens, self._is_word = recall_tokens, None
        self._yes: dict[str, float] = {}
        self._recall: dict[str, str] = {}
        self.n_tokens = 0
        self.calls = 0

    def p_yes(self, prompts: Sequence[str]) -> list[float]:
        """P(yes) for each verify prompt (cached)."""
        import torch

        from neurips25.lm import continuation_logprobs, score_choices

        todo = [p for p in dict.fromkeys(prompts) if p not in self._yes]
        for i in range(0, len(todo), self.batch_size):
            chunk = todo[i:i + self.batch_size]
            if self._single_token(["yes", "no"]):
                lp = score_choices(self.model, self.tok, chunk, ["yes", "no"])
            else:  # a real checkpoint's tokenizer: "yes"/"no" may be several tokens; compare whole words
                lp = torch.stack([torch.stack([x.sum() for x in continuation_logprobs(self.model, self.tok, chunk,
                                                                                      [" " + w] * len(chunk))])
                                  for w in ("yes", "no")], 1).log_softmax(-1)
            self._yes.update(zip(chunk, lp[:, 0].exp().tolist()))
        return [self._yes[p] for p in prompts]

    def _single_token(self, words: Sequence[str]) -> bool:
        """Is every word one token of the tokenizer (the word-level tokenizer trained here: yes)?"""
        return all(len(self.tok(w, add_special_tokens=False)["input_ids"]) == 1 for w in words)

    def recall(self, queries: Sequence[str]) -> list[str]:
        """The model's greedy completion (one word) of each ``"s r"`` query (cached)."""
        from neurips25.lm import generate, next_token_logits

        todo = [q for q in dict.fromkeys(queries) if q not in self._recall]
        for i in range(0, len(todo), self.batch_size):
            chunk = todo[i:i + self.batch_size]
            if self._word_level():
                ids = next_token_logits(self.model, self.tok, chunk).argmax(-1).tolist()
                words = self.tok.convert_ids_to_tokens(ids)
            else:  # subword/byte tokenizer: greedy-decode a few tokens, keep the first word
                texts = generate(self.model, self.tok, chunk, max_new_tokens=self.recall_tokens, temperature=0.0).texts
                words = [(t.split() or [""])[0] for t in texts]
            self._recall.update(zip(chunk, words))
        return [self._recall[q] for q in queries]

    def _word_level(self) -> bool:
        """True for a tokenizer with one token per word (the one trained here), where recall is one argmax."""
        if self._is_word is None:
            vocab = self.tok.get_vocab()
            self._is_word = "lives_in" in vocab and "speaks" in vocab
        return self._is_word

    @staticmethod
    def _recall_query(node: Node) -> str:
        """``"s r"``: the knowledge-corpus prefix whose greedy completion should be ``node``'s object."""
        return f"{node.triple[0]} {node.triple[1]}"

    def fact_ok(self, node: Node) -> bool:
        return self.fact_holds(*node.triple)

    def fact_holds(self, s: str, r: str, o: str) -> bool:
        """Fact satisfiability by recall: is ``o`` the model's greedy completion of ``"s r"``?"""
        return self.recall([f"{s} {r}"])[0] == o

    def prefetch(self, steps: Iterable[tuple[Node, Sequence[Node]]]) -> None:
        steps = list(steps)
        self.p_yes([verify_prompt(s, ps) for s, ps in steps])
        self.recall([self._recall_query(p) for _, ps in steps for p in ps if p.kind == "K"])

    def checks(self, step: Node, premises: Sequence[Node]) -> dict:
        """``{"fact": bool, "dependency+purpose": bool}`` for one step."""
        prompt = verify_prompt(step, premises)
        ks = [p for p in premises if p.kind == "K"]
        self.n_tokens += len(prompt.split()) + 2 + sum(len(p.text.split()) for p in ks)
        return {"fact": all(self.fact_ok(p) for p in ks), "dependency+purpose": self.p_yes([prompt])[0] >= self.threshold}

    def __call__(self, step: Node, premises: Sequence[Node]) -> bool:
        self.calls += 1
        return all(self.checks(step, premises).values())


# ------------------------------------------------------------------------------ Alg. 1 and inference
def verify_graph(graph: Graph, verifier: Verifier, *, stop: bool = True) -> dict:
    """Walk the reasoning nodes in topological order and call ``verifier(node, parents)`` once per node
    with exactly its cited premises: $v_k = M_v(r_k \\mid \\text{premises}(r_k))$. With ``stop``, the walk
    ends at the first ``False`` (the rest is unverified). Returns ``{node name: verdict}``."""
    if not callable(verifier):
        raise TypeError(f"verifier must be a callable (step, premises) -> bool, got {type(verifier).__name__}")
    verdicts = {}
    for node in topological_order(graph):
        ok = bool(verifier(node, graph.parents(node)))
        verdicts[node.name] = ok
        if stop and not ok:
            break
    return verdicts


def _answer_consistent(graph: Graph) -> bool:
    """The answer node must repeat the conclusion of the last reasoning node (a structural check)."""
    rs = graph.reasoning
    return bool(rs) and graph.answer == rs[-1].triple[2]


def filter_traces(traces: Sequence[Trace], verifier: Verifier) -> tuple[list[Trace], list[Trace]]:
    """Algorithm 1 (training-data curation): keep a trace only if its graph is well formed, its answer
    repeats its last conclusion and every reasoning node passes ``verifier`` against its own premises.
    Returns ``(kept, rejected)``."""
    if hasattr(verifier, "prefetch"):
        verifier.prefetch((r, t.graph.parents(r)) for t in traces for r in t.graph.reasoning
                          if all(p in {n.name for n in t.graph.nodes} for p in r.premises))
    kept, rejected = [], []
    for t in traces:
        try:
            check_dag(t.graph)
        except ValueError:
            rejected.append(t)
            continue
        ok = _answer_consistent(t.graph) and all(verify_graph(t.graph, verifier).values())
        (kept if ok else rejected).append(t)
    return kept, rejected


def cot_facts(text: str) -> list[tuple[str, str, str]]:
    """The recalled facts a *linear* chain of thought states, read from its text alone: the
    comma-separated statements that are not conclusions (no leading ``so``), as ``(s, r, o)``.
    ``"P lives_in C , C in K , so P in K , ... [A] L"`` → ``[(P, lives_in, C), (C, in, K), ...]``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    body = text.split("[A]")[0]
    out = []
    for stmt in (x.split() for x in body.split(" , ")):
        if not stmt or stmt[0] == "so":
            continue
        rel = [i for i, w in enumerate(stmt) if w in RELATIONS]
        if len(rel) == 1 and 0 < rel[0] < len(stmt) - 1:
            i = rel[0]
            out.append((" ".join(stmt[:i]), stmt[i], " ".join(stmt[i + 1:])))
    return out


def fact_filter(traces: Sequence[Trace], verifier: LearnedVerifier) -> tuple[list[Trace], list[Trace]]:
    """The control for Algorithm 1 that needs **no graph**: keep a trace iff every fact its linear-CoT
    rendering states (``cot_facts``) is what the verifier recalls (``LearnedVerifier.fact_holds``) —
    the fact check alone, with no premise lists and no step (dependency/purpose) check.
    Returns ``(kept, rejected)``."""
    from .graph import render

    if not hasattr(verifier, "fact_holds"):
        raise TypeError(f"verifier must offer fact_holds(s, r, o) (a LearnedVerifier), got {type(verifier).__name__}")
    facts = [cot_facts(render(t, "cot")[1]) for t in traces]
    verifier.recall([f"{s} {r}" for fs in facts for s, r, _ in fs])  # one batch
    kept, rejected = [], []
    for t, fs in zip(traces, facts):
        (kept if all(verifier.fact_holds(*f) for f in fs) else rejected).append(t)
    return kept, rejected


@dataclass
class Verified:
    """One runtime-verified generation: the text, its parsed graph (``None`` if unparsable), the answer,
    per-node verdicts and whether the whole trace ``passed``."""

    text: str
    graph: Graph | None
    answer: str | None
    verdicts: dict = field(default_factory=dict)
    passed: bool = False
    error: str | None = None


def runtime_verify(texts: Sequence[str], verifier: Verifier) -> list[Verified]:
    """Inference-time verification: parse each generated graph and verify every completed reasoning step
    against its cited premises; a parse error, an inconsistent answer or a failed step stops the trace
    (the model abstains), so only ``passed`` traces are answered."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of generated strings, not one string")
    graphs = []
    for t in texts:
        try:
            graphs.append(parse_graph(t))
        except ValueError as e:
            graphs.append(e)
    if hasattr(verifier, "prefetch"):
        verifier.prefetch((r, g.parents(r)) for g in graphs if isinstance(g, Graph) for r in g.reasoning)
    out = []
    for t, g in zip(texts, graphs):
        if not isinstance(g, Graph):
            out.append(Verified(t, None, extract_answer(t), error=str(g)))
            continue
        v = verify_graph(g, verifier)
        passed = _answer_consistent(g) and bool(v) and all(v.values())
        out.append(Verified(t, g, g.answer, v, passed, None if passed else "failed verification"))
    return out


def accuracy(predictions: Sequence[str | None], answers: Sequence[str]) -> float:
    """Fraction of exact matches."""
    if len(predictions) != len(answers) or not answers:
        raise ValueError(f"predictions and answers must be non-empty and of equal length, got "
                         f"{len(predictions)} and {len(answers)}")
    return sum(p == a for p, a in zip(predictions, answers)) / len(answers)


def acc_at_passed(predictions: Sequence[str | None], answers: Sequence[str], passed: Sequence[bool]) -> tuple:
    r"""``(Acc@passed, coverage)``: accuracy on the examples that pass verification and the fraction that
    pass. $\mathrm{Acc@passed} = \sum_i [\hat y_i = y_i]\,\mathrm{pass}_i / \sum_i \mathrm{pass}_i$ — an
    abstaining system can make it high by passing little, hence coverage beside it (``nan`` if none pass)."""
    if not (len(predictions) == len(answers) == len(passed)) or not answers:
        raise ValueError("predictions, answers and passed must be non-empty and of equal length")
    bad = [x for x in passed if not (isinstance(x, (bool, np.bool_))
                                     or (isinstance(x, numbers.Integral) and x in (0, 1)))]
    if bad:  # a count or a label here would be read as truthy and counted as passed
        raise ValueError(f"passed must hold one bool (or 0/1) per example, got {bad[0]!r}")
    n = sum(bool(x) for x in passed)
    if n == 0:
        return float("nan"), 0.0
    return sum(p == a for p, a, ok in zip(predictions, answers, passed) if ok) / n, n / len(answers)


def selective_accuracy(predictions: Sequence[str | None], answers: Sequence[str], confidence: Sequence[float],
                       coverage: float) -> tuple:
    """``(accuracy, coverage)`` of an abstention baseline that answers only its ``round(coverage · N)`` most
    confident examples (ties broken by order): the control for runtime verification at the same coverage."""
    n = len(answers)
    if not (len(predictions) == n == len(confidence)) or not n:
        raise ValueError("predictions, answers and confidence must be non-empty and of equal length")
    if not 0.0 < coverage <= 1.0:
        raise ValueError(f"coverage must be in (0, 1], got {coverage!r}")
    k = max(1, round(coverage * n))
    order = sorted(range(n), key=lambda i: -confidence[i])[:k]  # stable: earlier wins a tie
    return sum(predictions[i] == answers[i] for i in order) / k, k / n
