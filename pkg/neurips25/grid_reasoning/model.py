"""The tiny models (training, decoding, self-consistency), the whole experiment, drawing, the CLI."""
from __future__ import annotations

import random
from collections import Counter
from typing import Sequence

from ..runtime import check_int
from .graph import (
    FORMATS,
    QUESTIONS,
    Graph,
    Trace,
    World,
    extract_answer,
    make_traces,
    make_world,
    render,
    to_networkx,
)
from .verify import (
    LearnedVerifier,
    OracleVerifier,
    acc_at_passed,
    accuracy,
    fact_filter,
    filter_traces,
    runtime_verify,
    selective_accuracy,
    verifier_examples,
)

# ------------------------------------------------------------------------------- the tiny LM itself
CONTROL = ["<direct>", "<cot>", "<graph>", "<verify>"]  # format control tokens (prompt only)
_MARKUP = ["Q", "[A]", "(", ")", ",", ".", "so", "=>", "[K]", "[R]", "yes", "no", *QUESTIONS,
           *(f"{k}{i}" for k in "KR" for i in range(4)), *(f"[{k}{i}]" for k in "KR" for i in range(4))]


def _tokenizer(world: World):
    """Word-level tokenizer: every entity, relation and markup word is one token; the format control
    tokens are special (they only ever appear in prompts, and ``decode`` drops special tokens)."""
    from neurips25.lm import build_tokenizer

    return build_tokenizer("word", world.facts() + [" ".join(_MARKUP)], special_tokens=CONTROL)


def knowledge_corpus(world: World, *, entity_weight: int = 4) -> list[str]:
    """The knowledge corpus: every atomic fact once per person and ``entity_weight`` times per city and
    country (facts about places are more frequent in text than facts about one person)."""
    n_people = len(world.city_of)
    facts = world.facts()
    return facts[:n_people] + facts[n_people:] * entity_weight


def _pack_rows(tok, pairs: Sequence[tuple[str, str]], block_size: int) -> tuple[list[list[int]], list[list[int]]]:
    """Whole ``(prompt, completion)`` examples packed first-fit, in order, into rows of at most
    ``block_size`` tokens (``<bos> prompt completion <eos>`` each, loss mask on completion + EOS): no
    example is cut, and a row of short facts costs what one long trace costs in ``mode="pad"``."""
    enc = lambda s: list(tok(s, add_special_tokens=False)["input_ids"]) if s else []
    rows, masks, cur, cm = [], [], [], []
    for p, a in pairs:
        x = [tok.bos_token_id] + enc(p)
        y = enc(a) + [tok.eos_token_id]
        if len(x) + len(y) > block_size:
            raise ValueError(f"example {p!r} → {a!r} has {len(x) + len(y)} tokens, more than block_size={block_size}")
        if len(cur) + len(x) + len(y) > block_size:
            rows.append(cur)
            masks.append(cm)
            cur, cm = [], []
        cur, cm = cur + x + y, cm + [0] * len(x) + [1] * len(y)
    rows.append(cur)
    masks.append(cm)
    return rows, masks


def _tiny(tok, n_layer: int, n_embd: int, arch: str, seed: int, n_positions: int = 48):
    """A fresh tiny transformer of every role (``neurips25.lm.tiny_model``: 4 heads, 48 positions unless
    a longer context is asked for)."""
    from neurips25.lm import tiny_model

    return tiny_model(tok, n_layer=n_layer, n_embd=n_embd, n_head=4, n_positions=n_positions, arch=arch, seed=seed)


def train_model(world: World, data: Sequence[tuple[str, str]], *, steps: int = 800, n_layer: int = 2,
                n_embd: int = 64, batch_size: int = 64, lr: float = 3e-3, fact_repeats: int = 4, mode: str = "pad",
                arch: str = "llama", n_positions: int = 48, seed: int = 0, tokenizer=None, model=None, device=None):
    """A tiny transformer (``neurips25.lm``: Llama-style by default, GPT-2 with ``arch="gpt2"``; Lightning)
    trained from scratch on the knowledge corpus (every fact of the world, ``knowledge_corpus`` repeated
    ``fact_repeats`` times, so it knows the held-out people's facts too) mixed with ``data``,
    ``(prompt, completion)`` pairs with the loss on the completion (``data=None``: the knowledge corpus
    alone, as for ``base_model``). Returns ``(model, tokenizer)``.

    ``n_positions``: the context of the model it builds, and so the length of its rows (the probes'
    in-context steps need more than 48). ``model`` (with its ``tokenizer``) fine-tunes a given network in
    place instead — e.g. a copy of a real checkpoint from ``neurips25.lm.pretrained``; rows are then as
    long as its context allows (≤ 256), and ``arch`` and ``n_positions`` do not apply.
    ``mode``: ``"pad"`` (one example per row), ``"pack"`` (``neurips25.lm``'s packing, examples may be
    cut) or ``"rows"`` (whole examples packed first-fit into rows, ``_pack_rows``: the same examples for
    about a third of the compute of ``"pad"``, as most are short facts — but the study keeps ``"pad"``:
    tried for a faster notebook, it trained the GPT-2 verifier (absolute positions) and the proposers
    clearly worse for the compute it saves, e.g. proposer B's held-out graph accuracy 0.57 after 800
    packed steps (about half the compute) vs 0.90 after 1,600 padded ones, seed 0). ``steps`` goes through
    ``runtime.cap``; ``device`` (default CPU) is where it trains and where the model is left.
    """
    import torch

    from neurips25.lm import context_length, train_lm
    from neurips25.runtime import cap

    if data is not None and not data:  # e.g. a verifier trained for 2 smoke steps rejects every trace
        import warnings

        warnings.warn("no task data: the model learns the knowledge corpus only", stacklevel=2)
    fact_repeats = check_int(fact_repeats, "fact_repeats")
    if mode not in ("pad", "pack", "rows"):
        raise ValueError(f"mode must be 'pad', 'pack' or 'rows', got {mode!r}")
    if (model is None) != (tokenizer is None) and model is not None:
        raise ValueError("a given model needs its tokenizer")
    device = torch.device("cpu" if device is None else device)
    tok = tokenizer or _tokenizer(world)
    block = n_positions
    if model is None:
        model = _tiny(tok, n_layer, n_embd, arch, seed, n_positions)
    else:
        block = min(context_length(model), 256)
    mix = list(data or ()) + [("", f) for f in knowledge_corpus(world)] * fact_repeats
    random.Random(seed).shuffle(mix)  # the order matters for mode="pack" (what precedes each sequence)
    kw = dict(steps=cap(steps), lr=lr, warmup=40, batch_size=batch_size, mode="pad" if mode == "rows" else mode,
              block_size=block, seed=seed, accelerator="gpu" if device.type == "cuda" else "cpu")
    if mode == "rows":  # whole examples packed into rows (_pack_rows), padded per batch
        rows, masks = _pack_rows(tok, mix, block)
        train_lm(model, tok, rows, mask=masks, **kw)
    else:
        train_lm(model, tok, mix, mask="answer", **kw)
    return model.to(device).eval(), tok


def base_model(world: World, *, steps: int = 1000, n_layer: int = 2, n_embd: int = 64, batch_size: int = 64,
               seed: int = 0, device=None):
    """The shared base model: a tiny Llama-style transformer trained from scratch on the knowledge corpus
    alone (``train_model(world, None, ...)``), so it knows every fact of the world, held-out people
    included. Every role — the verifier and each proposer — then fine-tunes a copy of it on its own data
    (``run_experiment(base_steps=...)``): the paper's shared base model with one fine-tune per role, and
    cheaper than training each role from scratch, as the facts are learned once. Returns
    ``(model, tokenizer)``."""
    for name, v in dict(steps=steps, n_layer=n_layer, n_embd=n_embd, batch_size=batch_size).items():
        check_int(v, name)
    return train_model(world, None, steps=steps, n_layer=n_layer, n_embd=n_embd, batch_size=batch_size, seed=seed,
                       device=device)


def proposer_data(traces: Sequence[Trace], formats: Sequence[str] = FORMATS) -> list[tuple[str, str]]:
    """Every trace rendered in each of ``formats`` (the control token selects the format)."""
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ValueError(f"formats must be a non-empty subset of {FORMATS}, got {list(formats)}")
    return [render(t, f) for t in traces for f in formats]


def answer_questions(model, tok, questions: Sequence[tuple[str, str]], fmt: str, *, temperature: float = 0.0,
                     seed: int = 0) -> list[str]:
    """Generate the completion for each ``(kind, person)`` question in format ``fmt``."""
    from neurips25.lm import generate

    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    prompts = [f"Q {k} {p} <{fmt}>" for k, p in questions]
    return generate(model, tok, prompts, max_new_tokens=_max_new_tokens(model, tok, prompts), temperature=temperature,
                    seed=seed).texts


def _max_new_tokens(model, tok, prompts: Sequence[str]) -> int:
    """40 words for the word-level tokenizer trained here (a graph trace has at most 33); a real
    checkpoint's subword/byte tokenizer needs more tokens per word: up to 256, as its context allows."""
    from neurips25.lm import context_length

    if "lives_in" in tok.get_vocab():
        return 40
    longest = max(len(tok(p, add_special_tokens=False)["input_ids"]) + 1 for p in prompts)
    return max(1, min(256, context_length(model) - longest))


def sequence_confidence(model, tok, questions: Sequence[tuple[str, str]], texts: Sequence[str], fmt: str, *,
                        batch_size: int = 256) -> list[float]:
    """The proposer's own confidence in each generation: the mean token log-probability of ``texts[i]``
    after the prompt of ``questions[i]`` in format ``fmt`` (an empty generation gets ``-inf``). The
    score of the standard abstention baseline (answer only the most confident examples)."""
    from neurips25.lm import continuation_logprobs

    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if len(questions) != len(texts):
        raise ValueError(f"questions and texts must have equal lengths, got {len(questions)} and {len(texts)}")
    out = [float("-inf")] * len(texts)
    todo = [i for i, t in enumerate(texts) if t.strip()]
    for j in range(0, len(todo), batch_size):
        idx = todo[j:j + batch_size]
        lps = continuation_logprobs(model, tok, [f"Q {questions[i][0]} {questions[i][1]} <{fmt}>" for i in idx],
                                    [" " + texts[i].strip() for i in idx])
        for i, lp in zip(idx, lps):
            out[i] = float(lp.mean())
    return out


def self_consistency(model, tok, questions: Sequence[tuple[str, str]], *, n: int = 5, temperature: float = 1.0,
                     seed: int = 0) -> list[str | None]:
    """CoT self-consistency: ``n`` sampled chains per question, majority vote over their answers (ties go
    to the answer seen first)."""
    n = check_int(n, "n")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0 for sampling, got {temperature!r}")
    votes = [answer_questions(model, tok, questions, "cot", temperature=temperature, seed=seed + i) for i in range(n)]
    out = []
    for row in zip(*votes):
        answers = [a for a in map(extract_answer, row) if a is not None]
        out.append(Counter(answers).most_common(1)[0][0] if answers else None)
    return out


def run_experiment(*, n_people: int = 200, confusion: float = 0.375, consistency: float = 0.75, slip: float = 0.1,
                   steps: int = 1600,
                   verifier_steps: int = 800, n_layer: int = 2, n_embd: int = 64, verify_repeats: int = 2,
                   sc_n: int = 5, seed: int = 0, filtered: bool = True, unfiltered: bool = True,
                   fact_filtered: bool = False, batch_size: int = 64, mode: str = "pad", base=None, device=None,
                   base_steps: int = 0, verifier_facts: int = 8, proposer_facts: int = 4,
                   proposer_b=None, return_state: bool = False):
    """The whole study for one seed (every number of the chapter's results table):

    1. world, and the proposer's noisy traces for the training people; 2. the verifier (knowledge corpus +
    verify prompts on the training people); 3. Alg. 1 filters the traces with it; 4. proposer A on the
    noisy traces and proposer B on the kept traces (knowledge corpus + all three formats each);
    5. evaluation on the held-out people: each format's accuracy, CoT self-consistency, GRiD + filtered
    training and runtime verification (learned and oracle verifier: Acc@passed and coverage); the
    verifier's accuracy on held-out steps; the cost of verification in tokens; the controls (the fact
    check alone as a filter, ``fact_filter``; proposer B in linear-CoT format; abstaining on the
    proposer's least confident answers at the coverage of runtime verification). ``filtered=False``
    skips proposer B (its ``filtered_*`` numbers), ``unfiltered=False`` skips proposer A (the plain
    format numbers and self-consistency); the rest is unchanged. ``fact_filtered=True`` adds proposer C,
    trained like B on the traces the fact check alone keeps (``fact_filter``, no graph): its linear CoT
    (``factfiltered_cot``) is the control "CoT + the same fact filter" (``factfiltered_*`` numbers).

    The generator: ``base=None`` with ``base_steps=0`` (the book's run, ``SWEEP``) trains every role from
    scratch as a tiny model on the world's word-level tokenizer (the verifier a GPT-2, the proposers
    Llama-style), replaying the knowledge corpus ``verifier_facts`` / ``proposer_facts`` times beside its
    own data. ``base_steps > 0`` first trains one tiny base model on the knowledge corpus (``base_model``)
    and every role fine-tunes a copy of it for ``verifier_steps`` / ``steps`` instead — the paper's shared
    base with one fine-tune per role. Tried as a faster book run (``base_steps=1000``,
    ``verifier_steps=300``, ``steps=600``, ``verifier_facts=2``, ``proposer_facts=1``: about 60 % of the
    training compute), it came close to the from-scratch run in seeds 0 and 1 (GRiD 0.68 / 0.68, GRiD +
    filtering 0.88 / 0.84, vs 0.69 / 0.67 and 0.90 / 0.98) but not in seed 2 (GRiD 0.34, direct 0.10), so
    the book keeps the from-scratch run. ``base=(model, tokenizer)``, e.g. ``neurips25.lm.pretrained("gpt2")``,
    fine-tunes a copy of that checkpoint for each role (``base_steps`` is then unused). ``device``: where
    every model trains and decodes
    (default CPU). ``proposer_b``: a proposer B already trained on Alg. 1's kept traces of this seed and
    these settings (e.g. the notebook's shipped one, :func:`load_proposer_b`), used instead of training
    one. Under ``NEURIPS25_SMOKE=1`` (``runtime.cap``) training steps, test questions and
    self-consistency samples are capped.
    """
    import copy

    from neurips25.runtime import cap

    if base is not None and not (isinstance(base, (tuple, list)) and len(base) == 2):
        raise TypeError("base must be None or a (model, tokenizer) pair, e.g. neurips25.lm.pretrained('gpt2')")
    if not isinstance(base_steps, int) or base_steps < 0:
        raise ValueError(f"base_steps must be an int >= 0, got {base_steps!r}")
    world = make_world(n_people, seed=seed)
    if base is None and base_steps:  # one tiny base model that knows the world's facts, fine-tuned per role
        base = base_model(world, steps=base_steps, n_layer=n_layer, n_embd=n_embd, batch_size=batch_size,
                          seed=seed, device=device)
    fresh = (lambda: None) if base is None else (lambda: copy.deepcopy(base[0]))
    tok = None if base is None else base[1]
    traces = make_traces(world, confusion=confusion, consistency=consistency, slip=slip, seed=seed)
    # the verifier: knowledge corpus (more repeats: its fact check is recall) + verify prompts whose negatives
    # are dependency/purpose errors (fact errors are caught by recall, see LearnedVerifier)
    ver_data = verifier_examples(world, repeats=verify_repeats, corruptions=("conclusion", "citation"), seed=seed)
    ver_model, tok = train_model(world, ver_data, steps=verifier_steps, n_layer=n_layer, n_embd=n_embd,
                                 fact_repeats=verifier_facts, arch="gpt2", seed=seed, mode="pad",
                                 batch_size=batch_size, tokenizer=tok, model=fresh(), device=device)
    verifier, oracle = LearnedVerifier(ver_model, tok), OracleVerifier(world)
    kept, rejected = filter_traces(traces, verifier)
    fkept, frejected = fact_filter(traces, verifier)  # the no-graph control: the fact check alone
    if not (filtered or unfiltered or fact_filtered):
        raise ValueError("train at least one proposer: filtered, unfiltered and fact_filtered cannot all be False")

    def proposer(data):
        return train_model(world, proposer_data(data), steps=steps, n_layer=n_layer, n_embd=n_embd, seed=seed,
                           fact_repeats=proposer_facts, tokenizer=tok, mode=mode, batch_size=batch_size,
                           model=fresh(), device=device)[0]

    model_a = proposer(traces) if unfiltered else None  # proposer A: every trace
    model_b = None if not filtered else proposer(kept) if proposer_b is None else proposer_b.to(device or "cpu")
    model_c = proposer(fkept) if fact_filtered else None  # proposer C: the traces the fact check alone keeps
    qs = [(k, p) for p in world.test_people for k in QUESTIONS]
    qs = qs[:cap(len(qs), 8)]
    gold = [world.answer(k, p) for k, p in qs]
    bad = [t for t in traces if t.corruption]
    confused = {world.country_of[world.city_of[t.person]] for t in traces if t.corruption == "fact"}
    hit = [i for i, (k, p) in enumerate(qs) if k == "language" and world.country_of[world.city_of[p]] in confused]
    res: dict = {"seed": seed, "n_train_traces": len(traces), "n_test": len(qs),
                 "corrupted_frac": len(bad) / len(traces),
                 # Alg. 1 quality: share of corrupted traces rejected, of clean traces kept
                 "filter_recall": _frac([t for t in rejected if t.corruption], bad),
                 "filter_keep_clean": _frac([t for t in kept if not t.corruption], [t for t in traces if not t.corruption]),
                 "kept_corrupted_frac": _frac([t for t in kept if t.corruption], kept),
                 # the fact check alone on the CoT text (no graph): what it rejects, and how its kept set
                 # compares with Alg. 1's
                 "factfilter_reject_fact": _frac([t for t in frejected if t.corruption == "fact"],
                                                 [t for t in traces if t.corruption == "fact"]),
                 "factfilter_reject_slip": _frac([t for t in frejected if t.corruption in ("conclusion", "citation")],
                                                 [t for t in traces if t.corruption in ("conclusion", "citation")]),
                 "factfilter_keep_clean": _frac([t for t in fkept if not t.corruption],
                                                [t for t in traces if not t.corruption]),
                 "alg1_reject_fact": _frac([t for t in rejected if t.corruption == "fact"],
                                           [t for t in traces if t.corruption == "fact"])}
    texts = {}
    for name, model in (("", model_a), ("filtered_", model_b), ("factfiltered_", model_c)):
        if model is None:
            continue
        for fmt in FORMATS:
            if name == "factfiltered_" and fmt == "direct":
                continue  # proposer C is the CoT control (its graph format is reported too)
            texts[name + fmt] = out = answer_questions(model, tok, qs, fmt)
            res[name + fmt] = accuracy([extract_answer(t) for t in out], gold)
            if fmt != "direct":  # split: questions the misconception touches vs the rest
                for part, idx in (("misconception", hit), ("other", [i for i in range(len(qs)) if i not in hit])):
                    res[f"{name}{fmt}_{part}"] = accuracy([extract_answer(out[i]) for i in idx],
                                                          [gold[i] for i in idx]) if idx else float("nan")
        if name == "factfiltered_":
            continue
        for vname, v in (("learned", LearnedVerifier(ver_model, tok)), ("oracle", oracle)):
            ver = runtime_verify(texts[name + "graph"], v)
            res[f"{name}rv_{vname}_acc"], res[f"{name}rv_{vname}_cov"] = acc_at_passed(
                [x.answer for x in ver], gold, [x.passed for x in ver])
            if vname == "learned":
                n_main = sum(len(t.split()) + 1 for t in texts[name + "graph"])
                res[f"{name}verify_token_ratio"] = v.n_tokens / n_main
                # the abstention control: the proposer's own confidence, answering as many as RV does
                conf = sequence_confidence(model, tok, qs, texts[name + "graph"], "graph")
                res[f"{name}conf_acc_at_rv_cov"] = selective_accuracy(
                    [extract_answer(t) for t in texts[name + "graph"]], gold, conf,
                    res[f"{name}rv_learned_cov"])[0] if res[f"{name}rv_learned_cov"] > 0 else float("nan")
    if model_a is not None:
        res["cot_sc"] = accuracy(self_consistency(model_a, tok, qs, n=cap(sc_n), seed=seed), gold)
    test_steps = verifier_examples(world, world.test_people, seed=seed + 1)
    test_steps = test_steps[:cap(len(test_steps), 8)]
    p = verifier.p_yes([s for s, _ in test_steps])
    res["verifier_acc_heldout"] = sum((q >= 0.5) == (y == "yes") for q, (_, y) in zip(p, test_steps)) / len(p)
    res["verifier_recall_heldout"] = _frac([1 for q, (_, y) in zip(p, test_steps) if y == "no" and q < 0.5],
                                           [1 for _, y in test_steps if y == "no"])
    if not return_state:
        return res
    state = dict(world=world, traces=traces, kept=kept, rejected=rejected, fact_kept=fkept, tok=tok, verifier=verifier,
                 oracle=oracle, model_a=model_a, model_b=model_b, model_c=model_c, questions=qs, gold=gold, texts=texts)
    return res, state


def trace_ids(traces) -> list[str]:
    """A short fingerprint of each trace (question, graph and corruption), to compare trace sets."""
    import hashlib

    return [hashlib.sha1(repr((t.kind, t.person, t.corruption, t.graph)).encode()).hexdigest()[:10] for t in traces]


def ship_proposer_b(*, seed: int = 0, device=None, **config) -> dict:
    """:func:`run_experiment` with proposer B alone (``config``: its settings, e.g. ``SWEEP["small"]``'s),
    and B's trained weights with it: ``{"seed", "row"`` (the run's numbers), ``"kept"`` (:func:`trace_ids`
    of the traces Alg. 1 kept, which B trained on), ``"weights"`` (``results.encode_state``)``}``. The
    notebook loads B (:func:`load_proposer_b`) instead of training it, which costs two to four minutes."""
    from neurips25.results import encode_state

    config = {k: v for k, v in config.items() if k not in ("unfiltered", "fact_filtered", "filtered")}
    row, st = run_experiment(seed=seed, device=device, unfiltered=False, fact_filtered=False, return_state=True,
                             **config)
    return {"seed": seed, "row": row, "kept": trace_ids(st["kept"]),
            "weights": encode_state(st["model_b"].state_dict())}


def load_proposer_b(shipped: dict, world: World, *, n_layer: int = 2, n_embd: int = 64, device=None, **_):
    """The proposer B of :func:`ship_proposer_b`'s output ``shipped`` (a tiny Llama-style model on
    ``world``'s tokenizer, eval mode, on ``device``); ``n_layer``/``n_embd``: the settings it was trained
    with (other settings are ignored)."""
    from neurips25.results import decode_state

    if not isinstance(shipped, dict) or "weights" not in shipped:
        raise ValueError("shipped must be ship_proposer_b's output (a dict with 'weights')")
    model = _tiny(_tokenizer(world), n_layer, n_embd, "llama", shipped.get("seed", 0))
    model.load_state_dict(decode_state(shipped["weights"]))
    return model.to(device or "cpu").eval()


def _frac(part, whole) -> float:
    return len(part) / len(whole) if len(whole) else float("nan")


# --------------------------------------------------------------------------------------- drawing
def draw_graph(graph: Graph, verdicts: dict | None = None, *, ax=None, title: str | None = None):
    """Draw the DAG (premises left of conclusions), nodes green/red by ``verdicts[name]`` (knowledge nodes
    without a verdict grey, unverified reasoning nodes white); the answer is shown in the title."""
    import matplotlib.pyplot as plt
    import networkx as nx

    verdicts = verdicts or {}
    g = to_networkx(graph)
    depth = {}
    for n in graph.nodes:
        depth[n.name] = 0 if n.kind == "K" else 1 + max(depth[p] for p in n.premises)
    rows = Counter()
    pos = {}
    for n in graph.nodes:
        pos[n.name] = (depth[n.name], -rows[depth[n.name]] - 0.5 * depth[n.name])
        rows[depth[n.name]] += 1
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.2))
    default = {"K": "#d9d9d9", "R": "#ffffff"}
    colors = [{True: "#8fd19e", False: "#f4a6a6"}.get(verdicts.get(n.name), default[n.kind]) for n in graph.nodes]
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=True, arrowstyle="-|>", arrowsize=14, node_size=2600,
                           edge_color="#666666")
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colors, node_size=2600, edgecolors="#333333",
                           node_shape="s")
    labels = {n.name: f"{n.name}\n{n.triple[0]}\n{n.triple[1]} {n.triple[2]}" for n in graph.nodes}
    nx.draw_networkx_labels(g, pos, labels, ax=ax, font_size=7)
    ax.set_title(title or f"answer: {graph.answer}")
    ax.set_axis_off()
    xs = [x for x, _ in pos.values()]
    ys = [y for _, y in pos.values()]
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
    return ax


# The stored sweep's settings per scale. "small" is exactly what produced notebooks/results/grid_reasoning.json
# (`python -m neurips25.grid_reasoning`) and what the notebook's live run uses. "full" moves toward the paper,
# which fine-tunes 8B/14B models (LoRA) on thousands of benchmark questions per dataset (StrategyQA 2.3k,
# CommonsenseQA 9.7k training questions): the largest world the name generator allows (256 people: 358
# training traces, 154 held-out questions), 4-layer width-128 models, four times the training steps.
SWEEP = {
    "small": dict(seeds=[0, 1, 2],
                  config=dict(n_people=200, steps=1600, verifier_steps=800, n_layer=2, n_embd=64, batch_size=64,
                              fact_filtered=True)),
    "full": dict(seeds=[0, 1, 2, 3, 4],
                 config=dict(n_people=256, steps=6400, verifier_steps=3200, n_layer=4, n_embd=128, batch_size=64,
                             fact_filtered=True)),
}


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m neurips25.grid_reasoning [--scale small|full] [--out PATH] [--seeds ...]``: the study over
    the scale's seeds with ``SWEEP[scale]``, stored with ``neurips25.results.save_results`` in
    ``notebooks/results/grid_reasoning.json`` (``--scale full``: ``grid_reasoning.full.json``).
    ``--experiment probe``: the recall-order probe (``probe.recall_order_probe``, settings
    ``probe.PROBE[scale]``) in ``notebooks/results/grid_reasoning_probe.json`` (alias: ``python -m
    neurips25.grid_reasoning_probe``); ``--experiment distance``: the premise-distance probe
    (``probe.premise_distance_probe``, settings ``probe.DISTANCE[scale]``) in
    ``notebooks/results/grid_reasoning_distance.json``; ``--experiment proposer``: proposer B of the scale's
    first seed with its weights (:func:`ship_proposer_b`), which the notebook loads instead of training it, in
    ``notebooks/results/grid_reasoning_proposer.json``. The models train where ``runtime.device()`` points (CUDA when
    present)."""
    import argparse
    import os
    import sys

    from neurips25.results import add_scale_arguments, save_results
    from neurips25.runtime import cap, device

    ap = argparse.ArgumentParser(prog="python -m neurips25.grid_reasoning", description=main.__doc__)
    add_scale_arguments(ap)
    ap.add_argument("--seeds", type=int, nargs="+", default=None, help="override the scale's seeds")
    ap.add_argument("--steps", type=int, default=None, help="override the proposers' training steps")
    ap.add_argument("--experiment", choices=("study", "probe", "distance", "proposer"), default="study",
                    help="study: the chapter's sweep (SWEEP); probe: the recall-order probe (probe.PROBE); "
                    "distance: the premise-distance probe (probe.DISTANCE); proposer: proposer B of the "
                    "first seed of SWEEP with its weights, for the notebook (ship_proposer_b)")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    cmd = "python -m neurips25.grid_reasoning " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.experiment == "probe":
        from .probe import PROBE, recall_order_probe  # probe imports this module: not at the top

        table, experiment, slug = PROBE, recall_order_probe, "grid_reasoning_probe"
    elif args.experiment == "distance":
        from .probe import DISTANCE, premise_distance_probe

        table, experiment, slug = DISTANCE, premise_distance_probe, "grid_reasoning_distance"
    elif args.experiment == "proposer":
        table, experiment, slug = SWEEP, ship_proposer_b, "grid_reasoning_proposer"
    else:
        table, experiment, slug = SWEEP, run_experiment, "grid_reasoning"
    sweep = table[args.scale]
    seeds = sweep["seeds"] if args.seeds is None else args.seeds
    seeds = seeds[:cap(len(seeds), 1) if args.experiment != "proposer" else 1]
    config = dict(sweep["config"], **({} if args.steps is None else {"steps": args.steps}))
    runs = []
    for seed in seeds:
        runs.append(experiment(seed=seed, device=device(), **config))
        shown = runs[-1].get("row", runs[-1])  # (a shipped proposer: its numbers, not its weights)
        print({k: round(v, 3) if isinstance(v, float) else v for k, v in shown.items()}, flush=True)
    print(save_results(slug, {"config": config, "runs": runs}, cmd.strip(), seeds[0], path=args.out,
                       scale=args.scale))
