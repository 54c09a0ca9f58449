"""A probe of claim 2: can a premise list help a tiny proposer where a step's premise is not adjacent?

In the book's world every step cites the two statements just before it, so a linear chain of thought
finds its premises by position and a premise list adds nothing. This probe makes the position vary:
every person also has a birth city (``born_in``, in another country), the proposer recalls both cities
and then both cities' countries, **in a random order per trace**, and the question asks for one branch:

    [K0] P born_in B [K1] P lives_in C [K2] B in K' [K3] C in K [R0] ( K1 K3 ) P in K [A] K

so the step ``R0`` needs the country statement of the asked-for branch, at a position that changes from
trace to trace. A linear CoT must locate it by content; the graph names it (``K1 K3``) and then only has
to copy the object of a named node. One proposer is trained on clean traces (both formats, both recall
orders) and evaluated on held-out people: for each format, how often the step's conclusion follows from
the facts the model itself wrote, and for the graph how often it cites the right premises.

The second probe, ``premise_distance_probe``, asks how far back the premise may stand: the two branches
are given in the prompt among 0 to ``max_distract`` distractor statements of the same shapes
(``distance_example``), the model writes the step alone, and accuracy is counted per premise distance.
"""
from __future__ import annotations

import random
import re

from ..runtime import cap, check_int
from .graph import World, make_world
from .model import train_model

KINDS = ("country", "birth_country")  # the lives_in branch ("P in K") or the born_in branch ("P from K'")
_BRANCH = {"country": ("lives_in", "in"), "birth_country": ("born_in", "from")}


def birth_cities(world: World, *, seed: int = 0) -> dict:
    """A birth city per person, always in another country than the city the person lives in."""
    rng = random.Random(seed + 7)
    cities = sorted(world.country_of)
    return {p: rng.choice([c for c in cities if world.country_of[c] != world.country_of[world.city_of[p]]])
            for p in world.people}


def probe_trace(world: World, born: dict, kind: str, person: str, born_first: bool, fmt: str) -> tuple[str, str]:
    """``(prompt, completion)`` of the clean trace for ``kind`` about ``person`` with the two cities
    recalled in the order ``born_first`` picks, in format ``fmt`` ("cot" or "graph")."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if fmt not in ("cot", "graph"):
        raise ValueError(f"fmt must be 'cot' or 'graph', got {fmt!r}")
    if person not in world.city_of or person not in born:
        raise ValueError(f"person must be one of the world's people with a birth city, got {person!r}")
    c, b = world.city_of[person], born[person]
    live = [(person, "lives_in", c), (c, "in", world.country_of[c])]
    birth = [(person, "born_in", b), (b, "in", world.country_of[b])]
    first, second = (birth, live) if born_first else (live, birth)
    facts = [first[0], second[0], first[1], second[1]]
    i = [f[1] for f in facts].index(_BRANCH[kind][0])  # the asked-for branch's city fact: K0 or K1
    step = (person, _BRANCH[kind][1], facts[i + 2][2])
    if fmt == "graph":
        body = " ".join(f"[K{j}] {' '.join(f)}" for j, f in enumerate(facts))
        text = f"{body} [R0] ( K{i} K{i + 2} ) {' '.join(step)} [A] {step[2]}"
    else:
        text = " , ".join(" ".join(f) for f in facts) + f" , so {' '.join(step)} [A] {step[2]}"
    return f"Q {kind} {person} <{fmt}>", text


def adjacent_share(world: World, born: dict) -> float:
    """The share of the probe's gold reasoning steps (every person, both kinds, both recall orders) whose
    premise list names exactly the two statements written just before the step (in the book's world:
    all of them; here: none, by construction)."""
    people = sorted(world.people)
    if not people or set(people) - set(born):
        raise ValueError("born must give a birth city for every person of world (see birth_cities)")
    adj = []
    for p in people:
        for kind in KINDS:
            for first in (False, True):
                text = probe_trace(world, born, kind, p, first, "graph")[1]
                adj.append(_read(text, "graph")[1] == ["K2", "K3"])
    return sum(adj) / len(adj)


def _read(text: str, fmt: str) -> tuple[list, list, list]:
    """The facts, the cited premise names (graph) and the step a generated trace states."""
    body = text.split("[A]")[0]
    if fmt == "graph":
        parts = re.findall(r"\[([KR]\d)\]\s*(?:\( ([^)]*) \))?\s*([^\[]*)", body)
        facts = [t.split() for n, _, t in parts if n[0] == "K"]
        cited = next((pr.split() for n, pr, _ in parts if n[0] == "R"), [])
        step = next((t.split() for n, _, t in parts if n[0] == "R"), [])
    else:
        stmts = [s.split() for s in body.split(" , ")]
        facts = [s for s in stmts if s and s[0] != "so"]
        cited, step = [], next((s[1:] for s in stmts if s and s[0] == "so"), [])
    return facts, cited, step


def probe_scores(world: World, born: dict, questions, texts, fmt: str) -> dict:
    """For generated ``texts`` (one per ``(kind, person)`` question): ``accuracy``; ``follows``, how often
    the step's object is the country the model's *own* facts give the asked-for branch's city; for the
    graph ``cites_right``, how often the premise list names exactly that branch's two facts; and
    ``far``, the share of traces whose asked-for branch was recalled first (its country statement is then
    two statements before the step, with the other branch's country in between), with ``follows_far`` /
    ``follows_near`` split by it (``nan`` where a part is empty)."""
    if fmt not in ("cot", "graph"):
        raise ValueError(f"fmt must be 'cot' or 'graph', got {fmt!r}")
    questions, texts = list(questions), list(texts)
    if len(questions) != len(texts) or not texts:
        raise ValueError(f"questions and texts must be non-empty and of equal lengths, got {len(questions)} "
                         f"and {len(texts)}")
    acc = follows = cites = 0
    part = {True: [], False: []}  # far -> did the step follow, per trace
    for (kind, p), text in zip(questions, texts):
        if kind not in KINDS:
            raise ValueError(f"question kinds must be in {KINDS}, got {kind!r}")
        rel = _BRANCH[kind][0]
        want = world.country_of[world.city_of[p] if kind == "country" else born[p]]
        acc += text.split()[-1:] == [want]
        facts, cited, step = _read(text, fmt)
        city = [i for i, f in enumerate(facts) if f[2:3] == [rel] and f[:2] == p.split()]
        if not city or not step:
            continue
        where = [j for j, f in enumerate(facts) if f[:1] == facts[city[0]][-1:] and f[1:2] == ["in"]]
        ok = bool(where) and step[-1:] == facts[where[0]][-1:]
        follows += ok
        cites += bool(where) and cited == [f"K{city[0]}", f"K{where[0]}"]
        other = [i for i, f in enumerate(facts) if f[2:3] and f[2] in ("lives_in", "born_in") and f[2] != rel]
        part[bool(other) and city[0] < other[0]].append(ok)
    n = len(texts)
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
    out = {"accuracy": acc / n, "follows": follows / n, "far": len(part[True]) / n,
           "follows_far": mean(part[True]), "follows_near": mean(part[False])}
    if fmt == "graph":
        out["cites_right"] = cites / n
    return out


def recall_order_probe(*, n_people: int = 120, steps: int = 1200, n_layer: int = 2, n_embd: int = 64,
                       seed: int = 0, device=None) -> dict:
    """Train one tiny proposer from scratch on the knowledge corpus (with the birth cities) and on clean
    probe traces of the training people (both formats, both recall orders of every question), then score
    its greedy traces for the held-out people (``probe_scores``). Returns ``{"cot": {...}, "graph": {...}}``
    plus the settings. ``steps`` goes through ``runtime.cap``; ``device`` (default CPU) is where the model
    trains and decodes."""
    from neurips25.lm import build_tokenizer, generate

    from .model import _MARKUP, CONTROL

    for name, v in dict(n_people=n_people, steps=steps, n_layer=n_layer, n_embd=n_embd).items():
        check_int(v, name)
    world = make_world(n_people, seed=seed)
    born = birth_cities(world, seed=seed)
    extra = [f"{p} born_in {c} ." for p, c in born.items()]
    tok = build_tokenizer("word", world.facts() + extra + [" ".join(_MARKUP + [*KINDS, "from", "born_in"])],
                          special_tokens=CONTROL)
    data = [probe_trace(world, born, k, p, first, fmt) for p in world.train_people for k in KINDS
            for first in (False, True) for fmt in ("cot", "graph")]
    data += [("", f) for f in extra] * 4  # the birth cities join the knowledge corpus (train_model adds the rest)
    model, tok = train_model(world, data, steps=steps, n_layer=n_layer, n_embd=n_embd, seed=seed, tokenizer=tok,
                             device=device)
    qs = [(k, p) for p in world.test_people for k in KINDS]
    out = {"n_people": n_people, "steps": steps, "n_layer": n_layer, "n_embd": n_embd, "seed": seed,
           "n_test": len(qs)}
    for fmt in ("cot", "graph"):
        texts = generate(model, tok, [f"Q {k} {p} <{fmt}>" for k, p in qs], max_new_tokens=40).texts
        out[fmt] = probe_scores(world, born, qs, texts, fmt)
    return out


# The probe's stored settings per scale (`python -m neurips25.grid_reasoning --experiment probe`, or its
# alias `python -m neurips25.grid_reasoning_probe`, writes notebooks/results/grid_reasoning_probe.json).
PROBE = {
    "small": dict(seeds=[0, 1, 2], config=dict(n_people=120, steps=1200, n_layer=2, n_embd=64)),
    "full": dict(seeds=[0, 1, 2, 3, 4], config=dict(n_people=256, steps=4800, n_layer=4, n_embd=128)),
}


# ---------------------------------------------------------------------------------------------------
# The premise-distance probe: how far back the step's premise stands, with distractor statements.

def distance_example(world: World, kind: str, person: str, n_distract: int, fmt: str, *,
                     seed: int = 0) -> tuple[str, str, int]:
    """``(prompt, completion, distance)`` of one in-context step: the prompt states both branches of
    ``probe_trace`` (``person`` lives in one city and was born in another, each city in its country, the
    recall order drawn) with ``n_distract`` distractor statements (other people's cities, other cities'
    countries), each inserted at the end or, with probability 1/2, at a random place. The person's two
    cities (and the distractor people's) are drawn afresh per example — counterfactual, so the step must
    find the asked-for city in the statements written, not in memory; the cities' countries are the
    world's. The completion is the reasoning step alone (graph: ``[R0] ( Ki Kj ) P in K [A] K``; CoT:
    ``so P in K [A] K``). ``distance`` counts how many statements back the step's farther premise (the
    asked-for city statement) stands (1: the statement just before the step). The draw depends on
    ``(person, kind, n_distract, seed)`` only, so both formats see the same statements."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if fmt not in ("cot", "graph"):
        raise ValueError(f"fmt must be 'cot' or 'graph', got {fmt!r}")
    if person not in world.city_of:
        raise ValueError(f"person must be one of the world's people, got {person!r}")
    n_distract = check_int(n_distract, "n_distract", 0)
    rng = random.Random(f"{person}|{kind}|{n_distract}|{seed}")
    cities = sorted(world.country_of)
    c = rng.choice(cities)
    b = rng.choice([x for x in cities if world.country_of[x] != world.country_of[c]])
    rest = rng.sample([x for x in cities if x not in (c, b)], n_distract)
    k, kb = world.country_of[c], world.country_of[b]
    live, birth = [[*person.split(), "lives_in", c], [c, "in", k]], [[*person.split(), "born_in", b], [b, "in", kb]]
    first, second = (birth, live) if rng.random() < 0.5 else (live, birth)
    core = [first[0], second[0], first[1], second[1]]
    others = [p for p in sorted(world.city_of) if p != person]
    seq = [("core", f) for f in core]
    for x in rest:  # a distractor about another city: someone's home or birthplace, or its country
        d = ([*rng.choice(others).split(), rng.choice(["lives_in", "born_in"]), x] if rng.random() < 0.5
             else [x, "in", world.country_of[x]])
        seq.insert(len(seq) if rng.random() < 0.5 else rng.randint(0, len(seq)), ("x", d))  # half at the end
    stmts = [f for _, f in seq]
    ci = next(j for j, f in enumerate(stmts) if f[:-1] == [*person.split(), _BRANCH[kind][0]])
    ki = next(j for j, (t, f) in enumerate(seq) if t == "core" and f[:2] == [stmts[ci][-1], "in"])
    step = [*person.split(), _BRANCH[kind][1], stmts[ki][-1]]
    if fmt == "graph":
        ctx = " ".join(f"[K{j}] {' '.join(s)}" for j, s in enumerate(stmts))
        out = f"[R0] ( K{ci} K{ki} ) {' '.join(step)} [A] {step[-1]}"
    else:
        ctx = " , ".join(" ".join(s) for s in stmts) + " ,"
        out = f"so {' '.join(step)} [A] {step[-1]}"
    return f"Q {kind} {person} <{fmt}> {ctx}", out, len(stmts) - ci


def premise_distance_probe(*, n_people: int = 120, steps: int = 1200, n_layer: int = 2, n_embd: int = 64,
                           max_distract: int = 8, draws: int = 4, arch: str = "llama", seed: int = 0,
                           device=None) -> dict:
    """Train one tiny proposer from scratch (knowledge corpus + ``distance_example`` pairs of the training
    people: both formats, both kinds, ``draws`` draws per number of distractors ``0..max_distract``), then
    decode the step greedily for the held-out people (one fresh draw per question and number of
    distractors) and score it: ``{"cot": ..., "graph":
    ...}``, each with ``accuracy`` and ``by_distance`` (``{distance: [n_correct, n]}``), plus the settings.
    ``arch`` is the proposer's architecture (``neurips25.lm.ARCHS``, built by ``train_model``): ``"llama"`` (rotary, relative
    positions; the chapter's other models) or ``"gpt2"`` (learned absolute positions), which at 2 layers x 64
    and 1,200 steps never learned the in-context lookup (a coin flip between the person's two branches at
    every distance in seeds 0-2; seed 0: accuracy 0.49 CoT / 0.50 GRiD, against 0.94 / 0.94 with
    ``"llama"``, which learned it in 2 of those 3 seeds).
    ``steps`` goes through ``runtime.cap``; ``device`` (default CPU) is where it trains and decodes."""
    from neurips25.lm import ARCHS, build_tokenizer, generate

    from .model import _MARKUP, CONTROL

    for name, v in dict(n_people=n_people, steps=steps, n_layer=n_layer, n_embd=n_embd, draws=draws).items():
        check_int(v, name)
    if not isinstance(max_distract, int) or isinstance(max_distract, bool) or not 0 <= max_distract <= 12:
        raise ValueError(f"max_distract must be an int in [0, 12], got {max_distract!r}")
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
    world = make_world(n_people, seed=seed)
    born = birth_cities(world, seed=seed)
    extra = [f"{p} born_in {c} ." for p, c in born.items()]
    names = [f"{k}{i}" for k in "KR" for i in range(max_distract + 4)]
    tok = build_tokenizer("word", world.facts() + extra + [" ".join(_MARKUP + [*KINDS, "from", "born_in"] + names)]
                          + [" ".join(f"[{n}]" for n in names)], special_tokens=CONTROL)
    ex = lambda people, fmt, base: [distance_example(world, k, p, d, fmt, seed=base + r) for p in people
                                    for k in KINDS for d in range(max_distract + 1) for r in range(draws)]
    data = [(q, a) for fmt in ("cot", "graph") for q, a, _ in ex(world.train_people, fmt, 0)]
    data += [("", f) for f in extra] * 4
    n_pos = 8 + 5 * (max_distract + 4) + 12
    model, tok = train_model(world, data, steps=steps, n_layer=n_layer, n_embd=n_embd, arch=arch, n_positions=n_pos,
                             seed=seed, tokenizer=tok, device=device)
    out = {"n_people": n_people, "steps": steps, "n_layer": n_layer, "n_embd": n_embd, "max_distract": max_distract,
           "draws": draws, "arch": arch, "seed": seed}
    for fmt in ("cot", "graph"):
        test = ex(world.test_people, fmt, 1000)[::draws]  # one draw per question and number of distractors
        test = test[:cap(len(test), 64)]                   # NEURIPS25_SMOKE=1: 64 held-out steps
        texts = generate(model, tok, [q for q, _, _ in test], max_new_tokens=16).texts
        by = {}
        for (_, gold, dist), text in zip(test, texts):
            ok = text.split()[-1:] == gold.split()[-1:]
            n = by.setdefault(dist, [0, 0])
            n[0], n[1] = n[0] + ok, n[1] + 1
        out[fmt] = {"accuracy": sum(v[0] for v in by.values()) / len(test),
                    "by_distance": {str(d): by[d] for d in sorted(by)}}
    return out


# The premise-distance probe's stored settings per scale (`python -m neurips25.grid_reasoning --experiment
# distance` writes notebooks/results/grid_reasoning_distance.json).
DISTANCE = {
    "small": dict(seeds=[0, 1, 2], config=dict(n_people=120, steps=1200, n_layer=2, n_embd=64, max_distract=8,
                                               draws=4, arch="llama")),
    "full": dict(seeds=[0, 1, 2, 3, 4], config=dict(n_people=256, steps=4800, n_layer=4, n_embd=128,
                                                    max_distract=12, draws=4, arch="llama")),
}
