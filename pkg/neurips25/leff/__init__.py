"""LEFF: layer-wise efficient federated fine-tuning (Shen et al., NeurIPS 2025), on the tiny ViT.

Each round the server samples, for every client ``i``, a block of ``L_i`` consecutive layers (its
capacity) with probability ``p_i(k) = softmax_k(B(k)/tau)`` of the block's Taylor importance,
compresses the unselected layers into ``ceil(|L_-i| r)`` layers by distillation on a public proxy
set, the client trains only its block (and the head), and the server aggregates layer by layer.

Submodules: ``core`` (partitions, capacities, importance, sampling, aggregation), ``model``
(sub-models, LoRA, compression, the compute/memory accountant), ``federation`` (``Method``,
``ClientPlan``, ``Client``, ``Server``) and ``experiment`` (tasks, sweep, CLI).
"""
from .core import (
    SAMPLINGS,
    block_importance,
    block_probabilities,
    capacity_profile,
    check_capacities,
    choose_blocks,
    dirichlet_split,
    fedavg,
    layerwise_aggregate,
    taylor_importance,
)
from .experiment import (
    METHODS,
    SWEEP,
    TUNED,
    capacity_study,
    draw_study,
    epoch_study,
    final_accuracy,
    label_skew,
    leff_client_cost,
    main,
    peft_study,
    pretrain,
    protocol_study,
    run_method,
    sweep,
    task_data,
    tune_lr,
)
from .federation import (
    CAPACITY_SCHEDULES,
    KINDS,
    Client,
    ClientPlan,
    LocalFit,
    Method,
    Server,
    trainable_names,
)
from .model import (
    Cost,
    LayerDistiller,
    LoRALinear,
    ModelSpec,
    add_lora,
    build_model,
    compress_segment,
    compress_segments,
    compression_groups,
    distill_loss,
    n_compressed,
    round_time,
    run_blocks,
    set_trainable,
    step_cost,
    submodel,
)

__all__ = [
    "SAMPLINGS", "KINDS", "METHODS", "SWEEP", "block_importance", "block_probabilities", "capacity_profile",
    "check_capacities", "choose_blocks", "dirichlet_split", "fedavg", "layerwise_aggregate",
    "taylor_importance", "Method", "ClientPlan", "Client", "Server", "LocalFit", "trainable_names",
    "Cost", "LayerDistiller", "LoRALinear", "ModelSpec", "add_lora", "build_model", "compress_segment", "compress_segments",
    "compression_groups", "distill_loss", "n_compressed", "round_time", "run_blocks", "set_trainable", "step_cost",
    "submodel",
    "task_data", "pretrain", "leff_client_cost", "run_method", "sweep", "main", "TUNED", "final_accuracy", "tune_lr",
    "capacity_study", "CAPACITY_SCHEDULES", "label_skew", "epoch_study", "draw_study", "protocol_study",
    "peft_study",
]
