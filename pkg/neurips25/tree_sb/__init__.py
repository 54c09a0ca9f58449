"""TreeDSBM: Schrödinger bridge matching on trees and entropic Wasserstein barycentres.

Howard, Potaptchik, Deligiannidis, "Schrödinger Bridge Matching for Tree-Structured Costs and
Entropic Wasserstein Barycentres", NeurIPS 2025 (arXiv 2506.17197).

A tree T = (V, E) carries a Brownian motion of variance σ² per unit time along each edge e of
length T_e (the reference Q). TreeSB (Eq. 5) is the process P closest to Q in KL whose marginals
on the observed vertices S are μ_i; its static form is multi-marginal entropic OT with cost
Σ_e ‖x_u − x_v‖² / T_e and ε = 2σ². The star tree with T_i = 1/λ_i gives the entropic barycentre.

Contents: the ``Tree`` description and its Laplacian conditional (Eq. 12), Brownian bridges,
closed forms for Gaussians (fixed-point and exact entropic TreeSB), a Lightning module that
bridge-matches every edge in both directions at once, one network per directed edge (Eq. 15), the simulation leaf → root →
leaves and the TreeIMF loop (Alg. 2), the paper's baseline TreeDSB (tree IPF by alternating
half-bridges, Noble et al. 2023; learned, and exact for Gaussians), and the BW2²-UVP metric.

Modules: ``tree``, ``gaussian`` (closed forms, metrics), ``matching`` (Lightning, TreeIMF),
``experiment`` (configs; ``python -m neurips25.tree_sb`` regenerates the stored sweep).
"""
from .experiment import (
    CONFIGS,
    gaussian_problem,
    h_tree,
    independent_reference,
    main,
    run_config,
    run_gaussian,
)
from .gaussian import (
    bw2,
    bw2_uvp,
    gaussian_fixed_point_barycenter,
    gaussian_tree_ipf,
    gaussian_tree_sb,
    grid_multimarginal_sinkhorn,
)
from .matching import (
    EdgeDrifts,
    TreeBridgeMatching,
    TreeHalfBridge,
    pot_free_support_barycenter,
    simulate_tree,
    sinkhorn_divergence,
    tree_dsb,
    tree_dsbm,
)
from .tree import Tree, brownian_bridge, star_tree

__all__ = [
    "Tree", "star_tree", "brownian_bridge", "gaussian_fixed_point_barycenter", "gaussian_tree_sb", "gaussian_tree_ipf",
    "grid_multimarginal_sinkhorn", "bw2", "bw2_uvp", "EdgeDrifts", "TreeBridgeMatching", "simulate_tree",
    "tree_dsbm", "TreeHalfBridge", "tree_dsb", "sinkhorn_divergence", "h_tree", "gaussian_problem", "independent_reference", "run_gaussian",
    "CONFIGS", "run_config", "pot_free_support_barycenter", "main",
]

