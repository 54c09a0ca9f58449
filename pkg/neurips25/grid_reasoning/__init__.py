r"""GRiD — Grounded Reasoning in Dependency: reasoning as a DAG of knowledge and reasoning nodes.

Wen et al., *Dependency Matters: Enhancing LLM Reasoning with Explicit Knowledge Grounding*,
NeurIPS 2025 (OpenReview DlkM0q4Cvk). At CPU scale, in a symbolic world that stands in for an LLM's
knowledge:

* ``make_world`` — people live in cities, cities are in countries, countries speak languages; every
  atomic fact is in a knowledge corpus (``knowledge_corpus``); QA traces exist for the training
  people only, the others are held out.
* ``make_traces`` / ``render`` — a simulated, flawed *proposer* writes each answer in three formats
  (direct, linear chain-of-thought, GRiD graph); a stated part of its traces is corrupted: a
  systematic misconception plus random slips (``CORRUPTIONS``).
* ``Node`` / ``Graph`` / ``format_graph`` / ``parse_graph`` / ``check_dag`` — the graph format
  ``[K0] P lives_in C [K1] C in K [R0] ( K0 K1 ) P in K ... [A] L``: knowledge nodes ``K_i``,
  reasoning nodes ``R_j`` that open with their minimal premise list, and the answer.
* ``OracleVerifier`` (exact, the upper bound) and ``LearnedVerifier`` (a tiny LM: fact check by
  recall, dependency/purpose check by a verify prompt) — callables ``verifier(step, premises) -> bool``
  that see ONE reasoning step and its cited premises only (local verification).
* ``verify_graph`` / ``filter_traces`` (Alg. 1, training-data filtering) / ``runtime_verify``
  (inference-time verification) and the metrics ``accuracy`` / ``acc_at_passed``; the controls
  ``fact_filter`` (the fact check alone on a linear CoT, no graph) and ``selective_accuracy`` with
  ``sequence_confidence`` (abstaining on the proposer's least confident answers at the same coverage).
* ``train_model`` / ``answer_questions`` / ``self_consistency`` — tiny transformers trained from
  scratch with Lightning (``neurips25.lm``) and their decoding; ``run_experiment`` is the whole study
  for one seed; ``python -m neurips25.grid_reasoning`` runs it over seeds and stores the results.
* ``probe`` — the recall-order probe of the graph-vs-CoT claim: a constructed world where a step's
  premise is not the statement just before it (``recall_order_probe``, settings ``PROBE``; stored by
  ``python -m neurips25.grid_reasoning --experiment probe``), and the premise-distance probe: the step's
  premise stands 3 to 12 statements back among distractor statements (``distance_example``,
  ``premise_distance_probe``, settings ``DISTANCE``; ``--experiment distance``).
"""
from __future__ import annotations

from .graph import (
    CORRUPTIONS,
    COUNTRIES,
    FORMATS,
    QUESTIONS,
    RELATIONS,
    RULES,
    Graph,
    Node,
    Trace,
    World,
    _confuse,  # noqa: F401  (used by the tests)
    check_dag,
    extract_answer,
    format_graph,
    gold_graph,
    make_traces,
    make_world,
    parse_graph,
    render,
    to_networkx,
    topological_order,
)
from .model import (
    CONTROL,
    SWEEP,
    answer_questions,
    base_model,
    draw_graph,
    knowledge_corpus,
    load_proposer_b,
    main,
    proposer_data,
    run_experiment,
    self_consistency,
    sequence_confidence,
    ship_proposer_b,
    trace_ids,
    train_model,
)
from .probe import DISTANCE, PROBE, distance_example, premise_distance_probe, recall_order_probe
from .verify import (
    LearnedVerifier,
    OracleVerifier,
    Verified,
    Verifier,
    acc_at_passed,
    accuracy,
    cot_facts,
    fact_filter,
    filter_traces,
    runtime_verify,
    selective_accuracy,
    verifier_examples,
    verify_graph,
    verify_prompt,
)

__all__ = ["COUNTRIES", "RULES", "RELATIONS", "QUESTIONS", "FORMATS", "CORRUPTIONS", "CONTROL", "World", "make_world",
           "Node", "Graph", "format_graph", "parse_graph", "check_dag", "topological_order", "to_networkx",
           "gold_graph", "Trace", "make_traces", "render", "extract_answer", "Verifier", "OracleVerifier",
           "verify_prompt", "verifier_examples", "LearnedVerifier", "verify_graph", "filter_traces", "runtime_verify",
           "Verified", "accuracy", "acc_at_passed", "cot_facts", "fact_filter", "selective_accuracy",
           "sequence_confidence", "knowledge_corpus", "SWEEP", "base_model", "train_model", "proposer_data",
           "answer_questions", "self_consistency", "run_experiment", "ship_proposer_b", "load_proposer_b", "trace_ids",
           "draw_graph", "main", "PROBE",
           "recall_order_probe", "DISTANCE", "distance_example", "premise_distance_probe"]
