"""Frequency-aware token reduction for Vision Transformers (Lee, Hur, Choi, Yu & Kim, NeurIPS 2025).

A tiny ViT with pluggable per-layer token reducers. Every reducer is written as one row-stochastic
matrix ``M`` (Sec. 3, "pruning and merging are ``MX``"): row ``r`` of ``M`` says which old tokens
new token ``r`` averages. Tracking a 0/1 *source* matrix beside it keeps every token's original
patch positions and size (how many patches it stands for), which local DC windows, ToMe's
proportional attention and the diagnostics all need.

Methods (``METHODS``):

* ``"ours"``     -- score tokens by the high-pass attention ``A^HP = A - (1/n) 1 1^T`` (column sums
  over queries and heads, Sec. 3.2), keep the top (high-frequency, HF) tokens and average the
  low-frequency (LF) rest into one DC token per ``window x window`` spatial window, updated
  recursively at later reduction layers;
* ``"keep_lf"``  -- the same partition, but keep the LF tokens and aggregate the HF ones (ablation);
* ``"evit"``     -- EViT: keep the tokens the CLS token attends to most, fuse the rest into one token;
* ``"tome"``     -- ToMe: bipartite soft matching on the keys, size-weighted merging, proportional
  attention;
* ``"random"``   -- keep a random subset.

The code lives in submodules -- ``core`` (frequency tools, bookkeeping, reducers), ``vit`` (the
tiny ViT), ``diagnostics``, ``training`` (Lightning), ``experiment`` and ``vit64`` (the over-smoothed 64-token model, trained once
and shipped) -- and is re-exported here.
"""
from .core import (
    METHODS,
    ReductionPlan,
    TokenState,
    apply_reduction,
    hf_energy,
    hf_scores,
    high_pass,
    reduce_evit,
    reduce_ours,
    reduce_random,
    reduce_tome,
    window_ids,
)
from .diagnostics import (
    cls_probe,
    dc_cosine_stats,
    evaluate,
    hf_amplitude_per_layer,
    hf_energy_per_layer,
    hf_lf_partition,
    measure_macs,
    measure_throughput,
    reduction_step,
    unmerged_map,
)
from .experiment import (
    ABLATIONS,
    MAIN_VARIANTS,
    SWEEP,
    VARIANTS,
    main,
    plan_for,
    reduced_energies,
    run_experiment,
    single_thread,
    training_free,
)
from .training import ReducedFineTuner, ViTClassifier, digits_loaders, fine_tune, train_tiny_vit
from .vit import Attention, LayerTrace, TinyViT
from .vit64 import (
    EARLY,
    PAPER_ABLATIONS,
    PAPER_PROTOCOLS,
    REPLICATION,
    VIT64,
    VIT64_SWEEP,
    decode_state,
    encode_state,
    fine_tuned,
    load_vit64,
    main_paper_ablations,
    main_paper_protocols,
    main_replication,
    main_vit64,
    paper_ablations,
    paper_protocols,
    run_vit64,
    train_vit64,
)

__all__ = [
    "METHODS", "ReductionPlan", "TokenState", "TinyViT", "Attention", "LayerTrace", "ViTClassifier",
    "ReducedFineTuner", "high_pass", "hf_energy", "hf_scores", "window_ids", "reduce_ours", "reduce_evit",
    "reduce_tome", "reduce_random", "apply_reduction", "evaluate", "dc_cosine_stats", "hf_lf_partition",
    "hf_energy_per_layer", "hf_amplitude_per_layer", "unmerged_map", "reduction_step", "cls_probe", "measure_macs", "measure_throughput", "digits_loaders", "train_tiny_vit",
    "fine_tune", "SWEEP", "VARIANTS", "ABLATIONS", "MAIN_VARIANTS", "single_thread", "run_experiment", "main", "plan_for",
    "training_free", "reduced_energies", "VIT64", "VIT64_SWEEP", "encode_state", "decode_state", "train_vit64", "load_vit64",
    "run_vit64", "main_vit64", "paper_ablations", "PAPER_ABLATIONS", "main_paper_ablations", "PAPER_PROTOCOLS", "paper_protocols", "main_paper_protocols",
    "fine_tuned", "REPLICATION", "EARLY", "main_replication",
]
