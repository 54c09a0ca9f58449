"""Chapter "Differentiating through any QP solver" — dQP (Magoon, Yang, Aigerman, Kovalsky; NeurIPS 2025).

``core``: the dQP layer (``dqp_solve``, ``DQPLayer``); ``problems``: planted QPs, simplex/chain
projections, sparsemax; ``baselines``: OptNet (qpth, optional), QPLayer (proxsuite), cvxpylayers
and a full-KKT stand-in; ``robust``: a Maros–Meszaros-style set, degenerate, ill-conditioned and
weakly-active QPs and the loose-solver stress test; ``bench``: the timing benchmark (``python -m neurips25.dqp``); ``model``: a Lightning classifier with a dQP head.
"""
from .core import SOLVER_OPTIONS, DQPLayer, QPResult, active_set, available_solvers, dqp_solve
from .problems import (
    planted_gradient,
    planted_qp,
    project,
    projection_constraints,
    sparsemax,
    sparsemax_jacobian,
)

__all__ = ["SOLVER_OPTIONS", "DQPLayer", "QPResult", "active_set", "available_solvers", "dqp_solve",
           "planted_gradient", "planted_qp", "project", "projection_constraints", "sparsemax",
           "sparsemax_jacobian"]
