"""GUITAR: Gaussian-regression-driven tensorized incomplete multi-view clustering (NeurIPS 2025).

``tensor`` (t-SVD, rank surrogates and their prox), ``data`` (multi-view digits, masks, metrics),
``solver`` (graphs and the ADMM solver), ``baselines`` and ``experiments`` (the chapter's grid;
``python -m neurips25.guitar`` stores it in ``notebooks/results/guitar.json``).
"""
from .baselines import apmc, concat_kmeans, normalise_views, pvc, single_view_kmeans
from .data import (
    MFEAT_VIEW_NAMES,
    N_MFEAT,
    VIEW_NAMES,
    check_views,
    clustering_accuracy,
    clustering_scores,
    digit_indices,
    load_mfeat,
    mfeat,
    mfeat_digits,
    mfeat_indices,
    missing_masks,
    multiview_digits,
    nmi,
    purity,
)
from .experiments import (
    ABLATIONS,
    BASELINES,
    CONFIRM_METHODS,
    DATASETS,
    DEFAULTS,
    DIAGNOSED,
    HALF_ONLY,
    METHODS,
    SENSITIVITY,
    SURROGATES,
    TUNING,
    kmeans_repeats,
    run_grid,
    run_method,
    sensitivity,
    surrogate_runs,
    tune,
)
from .solver import GUITAR, knn_cosine_graph, normalized_laplacian, preprocess, spectral_labels
from .tensor import (
    RANK_SURROGATES,
    rank_surrogate,
    rank_surrogate_grad,
    shrink,
    t_product,
    t_svd,
    t_transpose,
    tensor_prox,
    tensor_rank_penalty,
)

__all__ = [
    "apmc", "concat_kmeans", "normalise_views", "pvc", "single_view_kmeans",
    "ABLATIONS", "BASELINES", "CONFIRM_METHODS", "DATASETS", "DIAGNOSED", "DEFAULTS", "HALF_ONLY", "METHODS", "SENSITIVITY",
    "SURROGATES", "TUNING", "kmeans_repeats", "surrogate_runs", "run_grid", "run_method", "sensitivity", "tune", "MFEAT_VIEW_NAMES", "N_MFEAT", "load_mfeat", "mfeat", "mfeat_indices", "digit_indices", "mfeat_digits", "VIEW_NAMES", "check_views", "clustering_accuracy", "clustering_scores", "missing_masks",
    "multiview_digits", "nmi", "purity", "GUITAR", "knn_cosine_graph", "normalized_laplacian",
    "preprocess", "spectral_labels", "RANK_SURROGATES", "rank_surrogate", "rank_surrogate_grad", "shrink",
    "t_product", "t_svd", "t_transpose", "tensor_prox", "tensor_rank_penalty",
]
