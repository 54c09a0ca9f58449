"""WALL-E 2.0 (NeurIPS 2025): world alignment by neurosymbolic learning, with model-predictive control.

``world``: the MiniMars crafting environment and the default-world prior; ``safe``: validation and
restricted execution of generated rule code; ``learning``: knowledge graph, rule induction, code
generation, verification and pruning; ``agents``: planner, MPC agent, baselines, evaluation.
"""
from .agents import (
    BUDGET_ARMS,
    MAX_TRIES,
    METHODS,
    REFLEXION_MEMORY,
    Agent,
    Planner,
    SceneGraph,
    evaluate,
    fit_hypothesis_prior,
    prediction_accuracy,
    run_episode,
    run_world,
)
from .learning import (
    K_MAX,
    HypothesisPrior,
    KnowledgeGraph,
    LanguageModelPrior,
    Rule,
    Transition,
    WorldModel,
    align,
    induce_rules,
    prune_rules,
    rank_hypotheses,
    verify_rules,
)
from .safe import (
    CodeRule,
    RuleTimeoutError,
    UnsafeCodeError,
    call_limited,
    compile_rule,
    validate_rule_source,
)
from .world import (
    CRAFT_ACTIONS,
    DEFAULT_RECIPES,
    GOAL,
    ITEMS,
    RESOURCES,
    STATIONS,
    TOOLS,
    MiniMars,
    Recipe,
    World,
    check_action,
    obtainable,
    sample_world,
    succeeds,
)

__all__ = ["MAX_TRIES", "METHODS", "BUDGET_ARMS", "REFLEXION_MEMORY", "Agent", "Planner", "SceneGraph", "evaluate", "fit_hypothesis_prior", "prediction_accuracy",
           "run_episode", "run_world", "K_MAX", "HypothesisPrior", "KnowledgeGraph", "LanguageModelPrior", "Rule", "Transition", "WorldModel", "align",
           "induce_rules", "prune_rules", "rank_hypotheses", "verify_rules", "CodeRule", "RuleTimeoutError", "UnsafeCodeError",
           "call_limited", "compile_rule", "validate_rule_source", "CRAFT_ACTIONS", "DEFAULT_RECIPES", "GOAL",
           "ITEMS", "RESOURCES", "STATIONS", "TOOLS", "MiniMars", "Recipe", "World", "check_action",
           "obtainable", "sample_world", "succeeds"]
