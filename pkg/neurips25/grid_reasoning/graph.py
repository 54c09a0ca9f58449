"""The symbolic world, the GRiD graph format (parser, DAG checks) and the flawed proposer's traces."""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from typing import Sequence

# ------------------------------------------------------------------------------------------ world
COUNTRIES = {  # country: (language, cities)
    "france": ("french", ("paris", "lyon", "nice")),
    "spain": ("spanish", ("madrid", "seville", "valencia")),
    "italy": ("italian", ("rome", "milan", "naples")),
    "germany": ("german", ("berlin", "munich", "hamburg")),
    "poland": ("polish", ("warsaw", "krakow", "gdansk")),
    "japan": ("japanese", ("tokyo", "osaka", "kyoto")),
    "brazil": ("portuguese", ("rio", "recife", "salvador")),
    "egypt": ("arabic", ("cairo", "giza", "luxor")),
}
# The world's two inference rules: (relation of premise 1, relation of premise 2) -> conclusion relation,
# with premise 1 = (s, r1, x), premise 2 = (x, r2, o) and conclusion (s, r, o).
RULES = {("lives_in", "in"): "in", ("in", "speaks"): "speaks"}
RELATIONS = ("lives_in", "in", "speaks")
QUESTIONS = ("country", "language")  # 2-hop and 3-hop questions about a person
FORMATS = ("direct", "cot", "graph")
CORRUPTIONS = ("fact", "conclusion", "citation")
_SYLLABLES = ("ba", "ko", "mi", "ru", "te", "la", "no", "si", "du", "fe", "ga", "po", "vi", "ze", "ha", "jo")


@dataclass(frozen=True)
class World:
    """The ground truth: ``city_of[person]``, ``country_of[city]``, ``language_of[country]`` and the split
    of people into ``train_people`` (QA traces exist) and ``test_people`` (facts only, held out)."""

    city_of: dict
    country_of: dict
    language_of: dict
    train_people: tuple
    test_people: tuple

    @property
    def people(self) -> tuple:
        return self.train_people + self.test_people

    def holds(self, s: str, r: str, o: str) -> bool:
        """Is the atomic or derived fact ``(s, r, o)`` true? (``in``/``speaks`` also hold for people.)"""
        if r == "lives_in":
            return self.city_of.get(s) == o
        if r == "in":
            city = self.city_of.get(s, s)
            return self.country_of.get(city) == o
        if r == "speaks":
            country = self.country_of.get(self.city_of.get(s, s), s)
            return self.language_of.get(country) == o
        return False

    def answer(self, kind: str, person: str) -> str:
        """The true answer to question ``kind`` ("country" or "language") about ``person``."""
        country = self.country_of[self.city_of[person]]
        return country if kind == "country" else self.language_of[country]

    def facts(self) -> list[str]:
        """The knowledge corpus: every atomic fact as a sentence ``"s r o ."``."""
        out = [f"{p} lives_in {c} ." for p, c in self.city_of.items()]
        out += [f"{c} in {k} ." for c, k in self.country_of.items()]
        out += [f"{k} speaks {lang} ." for k, lang in self.language_of.items()]
        return out

    def objects(self, r: str) -> list[str]:
        """The entities that can be the object of relation ``r`` (for corruptions and verifier negatives)."""
        return sorted(set({"lives_in": self.country_of, "in": self.language_of,
                           "speaks": self.language_of.values()}[r]))


def make_world(n_people: int = 200, *, train_frac: float = 0.7, seed: int = 0) -> World:
    """A random world: ``n_people`` two-token names (``"ko mi"``), each living in one of the 24 cities of
    ``COUNTRIES``.

    A fraction ``train_frac`` of people get QA traces; the rest are held out (their facts are in the
    knowledge corpus, but no question about them is ever trained on).
    """
    names = [f"{a} {b}" for a in _SYLLABLES for b in _SYLLABLES]  # two tokens: no single-embedding shortcut
    if not isinstance(n_people, int) or not 4 <= n_people <= len(names):
        raise ValueError(f"n_people must be an int in [4, {len(names)}], got {n_people!r}")
    if not 0.0 < train_frac < 1.0:
        raise ValueError(f"train_frac must be in (0, 1), got {train_frac!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    rng = random.Random(seed)
    people = rng.sample(names, n_people)
    country_of = {c: k for k, (_, cities) in COUNTRIES.items() for c in cities}
    cities = list(country_of)
    city_of = {p: rng.choice(cities) for p in people}
    n_train = max(1, min(n_people - 1, round(train_frac * n_people)))
    return World(city_of=city_of, country_of=country_of, language_of={k: v[0] for k, v in COUNTRIES.items()},
                 train_people=tuple(people[:n_train]), test_people=tuple(people[n_train:]))


# ------------------------------------------------------------------------------------------ graphs
@dataclass(frozen=True)
class Node:
    """A knowledge node (``kind="K"``, a fact recalled from memory, no premises) or a reasoning node
    (``kind="R"``, a conclusion drawn from the nodes named in ``premises``). ``triple = (s, r, o)``."""

    name: str
    triple: tuple
    premises: tuple = ()

    @property
    def kind(self) -> str:
        return self.name[0]

    @property
    def text(self) -> str:
        return " ".join(self.triple)


@dataclass(frozen=True)
class Graph:
    """A reasoning trace as a dependency graph: ``nodes`` in written order, and the final ``answer``."""

    nodes: tuple
    answer: str | None = None

    def __getitem__(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    @property
    def reasoning(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "R"]

    def parents(self, node: Node) -> list[Node]:
        """The cited premises of ``node``, in the order it cites them."""
        return [self[p] for p in node.premises]


_NAME = re.compile(r"^\[([KR]\d+)\]$")


def format_graph(graph: Graph) -> str:
    """``Graph`` → text: ``[K0] s r o`` for knowledge, ``[R0] ( K0 K1 ) s r o`` for reasoning, ``[A] a``."""
    parts = []
    for n in graph.nodes:
        parts.append(f"[{n.name}]")
        if n.kind == "R":
            parts += ["(", *n.premises, ")"]
        parts.append(n.text)
    if graph.answer is not None:
        parts += ["[A]", graph.answer]
    return " ".join(parts)


def parse_graph(text: str) -> Graph:
    """Text → ``Graph``, then ``check_dag``. Raises ``ValueError`` naming the offending node for malformed
    nodes, duplicate names, premises that do not exist or come later (so cycles are impossible)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    words = text.split()
    if not words:
        raise ValueError("text is empty: no graph to parse")
    if "[A]" in words:
        i = words.index("[A]")
        if len(words) != i + 2:
            raise ValueError(f"the answer node [A] must hold exactly one word, got {words[i + 1:]}")
        answer, words = words[i + 1], words[:i]
    else:
        answer = None
    nodes, cur = [], None
    for w in words:
        m = _NAME.match(w)
        if m:
            cur = [m.group(1)]
            nodes.append(cur)
        elif cur is None:
            raise ValueError(f"text must start with a node name like [K0], got {w!r}")
        else:
            cur.append(w)
    out = []
    for name, *body in nodes:
        premises: tuple = ()
        if name[0] == "R":
            if len(body) < 2 or body[0] != "(" or ")" not in body:
                raise ValueError(f"reasoning node {name} must open with its premise list '( ... )', got {body}")
            j = body.index(")")
            premises, body = tuple(body[1:j]), body[j + 1:]
        rel = [i for i, w in enumerate(body) if w in RELATIONS]
        if len(rel) != 1 or rel[0] == 0 or rel[0] == len(body) - 1:
            raise ValueError(f"node {name} must state one fact 'subject relation object' with a relation in "
                             f"{RELATIONS}, got {body}")
        i = rel[0]
        out.append(Node(name, (" ".join(body[:i]), body[i], " ".join(body[i + 1:])), premises))
    graph = Graph(tuple(out), answer)
    check_dag(graph)
    return graph


def check_dag(graph: Graph, *, ordered: bool = True) -> None:
    """The structural checks (no model needed); ``ValueError`` naming the node on failure:

    unique node names; knowledge nodes cite nothing; every reasoning node cites >= 1 premise, each an
    existing node (no dangling premise) and, with ``ordered``, an *earlier* one; no cycle.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a Graph, got {type(graph).__name__}")
    names = [n.name for n in graph.nodes]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"node {dup[0]} appears more than once")
    pos = {n: i for i, n in enumerate(names)}
    for n in graph.nodes:
        if n.kind not in "KR":
            raise ValueError(f"node {n.name} must be named K<i> or R<j>")
        if n.kind == "K" and n.premises:
            raise ValueError(f"knowledge node {n.name} cannot cite premises, got {list(n.premises)}")
        if n.kind == "R" and not n.premises:
            raise ValueError(f"reasoning node {n.name} cites no premise")
        for p in n.premises:
            if p not in pos:
                raise ValueError(f"node {n.name} cites {p}, which is not in the graph (dangling premise)")
            if p == n.name:
                raise ValueError(f"node {n.name} cites itself (cycle)")
    cycle = _find_cycle(graph)
    if cycle:
        raise ValueError(f"node {cycle[0]} is on a cycle: {' -> '.join(cycle + [cycle[0]])}")
    if ordered:
        for n in graph.nodes:
            late = [p for p in n.premises if pos[p] > pos[n.name]]
            if late:
                raise ValueError(f"node {n.name} cites {late[0]}, which comes after it (premises must be earlier)")


def _find_cycle(graph: Graph) -> list[str] | None:
    import networkx as nx

    try:
        edges = nx.find_cycle(to_networkx(graph))
    except nx.NetworkXNoCycle:
        return None
    return [v for _, v in edges]  # premise -> conclusion edges; report the conclusions on the cycle


def to_networkx(graph: Graph):
    """The DAG as a ``networkx.DiGraph`` with edges premise → conclusion (node attrs: kind, text)."""
    import networkx as nx

    g = nx.DiGraph()
    for n in graph.nodes:
        g.add_node(n.name, kind=n.kind, text=n.text)
    for n in graph.nodes:
        for p in n.premises:
            g.add_edge(p, n.name)
    return g


def topological_order(graph: Graph) -> list[Node]:
    """The reasoning nodes in a topological order of the DAG (ties broken by written order)."""
    import networkx as nx

    check_dag(graph, ordered=False)
    pos = {n.name: i for i, n in enumerate(graph.nodes)}
    order = nx.lexicographical_topological_sort(to_networkx(graph), key=pos.__getitem__)
    return [graph[name] for name in order if name[0] == "R"]


def gold_graph(world: World, kind: str, person: str) -> Graph:
    """The correct GRiD graph for question ``kind`` about ``person``."""
    if kind not in QUESTIONS:
        raise ValueError(f"kind must be one of {QUESTIONS}, got {kind!r}")
    c = world.city_of[person]
    k = world.country_of[c]
    nodes = [Node("K0", (person, "lives_in", c)), Node("K1", (c, "in", k)), Node("R0", (person, "in", k), ("K0", "K1"))]
    if kind == "language":
        lang = world.language_of[k]
        nodes += [Node("K2", (k, "speaks", lang)), Node("R1", (person, "speaks", lang), ("R0", "K2"))]
    return Graph(tuple(nodes), nodes[-1].triple[2])


# ------------------------------------------------------------------------------------ noisy traces
@dataclass(frozen=True)
class Trace:
    """One proposer-written training example: the question, its graph (maybe corrupted) and which
    corruption was applied (``None`` = clean)."""

    kind: str
    person: str
    graph: Graph
    corruption: str | None = None

    @property
    def question(self) -> str:
        return f"Q {self.kind} {self.person}"


def _propagate(world: World, nodes: list[Node], start: int) -> list[Node]:
    """Re-derive every node after ``start`` from its (possibly wrong) premises, as a fluent proposer does:
    knowledge recalled about a wrong entity is recalled correctly for *that* entity."""
    nodes = list(nodes)
    for i in range(start + 1, len(nodes)):
        n = nodes[i]
        if n.kind == "K":  # K2 = (country, speaks, ?) follows the country the trace now believes in
            k = nodes[i - 1].triple[2]
            nodes[i] = replace(n, triple=(k, "speaks", world.language_of[k]))
        else:
            a, b = (nodes[[m.name for m in nodes].index(p)] for p in n.premises[:2])
            nodes[i] = replace(n, triple=(a.triple[0], n.triple[1], b.triple[2]))
    return nodes


def _confuse(country: str) -> str:
    ks = list(COUNTRIES)
    return ks[(ks.index(country) + 1) % len(ks)]


def make_traces(world: World, people: Sequence[str] | None = None, *, confusion: float = 0.375,
                consistency: float = 0.75, slip: float = 0.1, seed: int = 0) -> list[Trace]:
    """The proposer's traces for both questions about each of ``people`` (default: the training people).

    The proposer is flawed in two stated ways, mimicking LLM-written data:

    * **systematic misconception** — for a fraction ``confusion`` of the countries (chosen by ``seed``) it
      believes the country speaks the language of the *next* country of ``COUNTRIES``; a language trace
      through such a country shows the belief with probability ``consistency`` (a false knowledge node
      ``K2`` and, derived from it consistently, a wrong conclusion and answer: ``fact``) — a
      coherent-looking chain built on a false fact, and the majority of those traces;
    * **random slips** — every other trace, with probability ``slip``, gets one local error: a reasoning
      node whose conclusion names a wrong entity (``conclusion``, carried on downstream) or that cites a
      wrong premise while keeping its conclusion (``citation``).
    """
    if not all(0.0 <= x <= 1.0 for x in (confusion, consistency, slip)):
        raise ValueError(f"confusion, consistency and slip must be in [0, 1], got {confusion!r}, {consistency!r}, "
                         f"{slip!r}")
    people = world.train_people if people is None else tuple(people)
    if not people:
        raise ValueError("people must be a non-empty list of names from the world")
    unknown = [p for p in people if p not in world.city_of]
    if unknown:
        raise ValueError(f"people contains {unknown[0]!r}, who is not in the world")
    rng = random.Random(seed)
    countries = sorted(world.language_of)
    confused = set(rng.sample(countries, round(confusion * len(countries))))
    out = []
    for p in people:
        for kind in QUESTIONS:
            nodes, corr = list(gold_graph(world, kind, p).nodes), None
            k = world.country_of[world.city_of[p]]
            if kind == "language" and k in confused and rng.random() < consistency:
                nodes[3] = replace(nodes[3], triple=(k, "speaks", world.language_of[_confuse(k)]))
                nodes, corr = _propagate(world, nodes, 3), "fact"
            elif rng.random() < slip:
                r_idx = [i for i, n in enumerate(nodes) if n.kind == "R"]
                i = rng.choice(r_idx)
                alt = [n.name for n in nodes[:i] if n.name not in nodes[i].premises]
                if rng.random() < 0.5 or not alt:
                    rel = nodes[i].triple[1]
                    wrong = rng.choice([o for o in world.objects(rel) if o != nodes[i].triple[2]])
                    nodes[i] = replace(nodes[i], triple=nodes[i].triple[:2] + (wrong,))
                    nodes, corr = _propagate(world, nodes, i), "conclusion"
                else:
                    bad = rng.choice(alt)
                    prem = list(nodes[i].premises)
                    prem[rng.randrange(len(prem))] = bad
                    nodes[i], corr = replace(nodes[i], premises=tuple(prem)), "citation"
            out.append(Trace(kind, p, Graph(tuple(nodes), nodes[-1].triple[2]), corr))
    return out


def render(trace: Trace, fmt: str) -> tuple[str, str]:
    """``(prompt, completion)`` of a trace in one format, selected by a control token:

    * ``direct``: ``Q language P <direct>`` → ``[A] L``
    * ``cot``: ``Q language P <cot>`` → ``P lives_in C , C in K , so P in K , ... [A] L``
    * ``graph``: ``Q language P <graph>`` → ``[K0] P lives_in C [K1] C in K [R0] ( K0 K1 ) P in K ... [A] L``
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    prompt = f"{trace.question} <{fmt}>"
    g = trace.graph
    if fmt == "direct":
        return prompt, f"[A] {g.answer}"
    if fmt == "graph":
        return prompt, format_graph(g)
    steps = [("so " if n.kind == "R" else "") + n.text for n in g.nodes]
    return prompt, " , ".join(steps) + f" [A] {g.answer}"


def extract_answer(text: str) -> str | None:
    """The word after the last ``[A]`` (``None`` if there is none)."""
    w = text.split()
    idx = [i for i, x in enumerate(w) if x == "[A]"]
    return w[idx[-1] + 1] if idx and idx[-1] + 1 < len(w) else None
