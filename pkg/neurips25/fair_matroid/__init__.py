"""Fair online selection on matroids (Banihashem, Hajiaghayi & Mittal, "Fair Matroid Selection", NeurIPS 2025).

Elements of a matroid ``M = (E, I)`` arrive one at a time; each is accepted or rejected on arrival,
irrevocably, and the accepted set must stay independent. An algorithm is *f-fair* if every element is
accepted with probability at least ``1/f``. ``alpha`` is the arboricity (fewest independent sets that
cover ``E``; Edmonds: ``alpha = max_A ceil(|A| / r(A))``) and ``k`` the rank.

Contents: independence oracles with incremental states (graphic, uniform, laminar, partition),
arboricity by Edmonds' matroid partition, the online algorithms as objects with ``offer(e) -> bool``
(greedy baseline; Alg. 1 first-fit colouring; Alg. 2 laminar colouring; the uniform-matroid colouring;
Alg. 3 random-order graphic as printed in Sec. 4.1, and Cor. 4's alpha-knowing use of it), instance
generators, and Monte Carlo fairness estimators with Clopper-Pearson bounds (Alg. 3's is vectorised over
trials). Nothing here learns, so nothing is a LightningModule: these are plain, exact combinatorial
procedures.
"""
from .algorithms import (  # noqa: F401
    AcceptAll,
    FirstFitFair,
    Greedy,
    LaminarFair,
    RandomOrderGraphicFair,
    UniformFair,
    alg1_colours,
    alg3_orient,
    alg3_q,
    alg3_sample_sizes,
    cor4_algorithm,
    cor4_d,
    d_levels,
    first_fit_colours,
    lemma15_bound,
    u_position,
)
from .matroids import (  # noqa: F401
    GraphicMatroid,
    LaminarMatroid,
    UniformMatroid,
    arboricity,
    arboricity_bruteforce,
    complete_graph,
    first_fit_worst_case,
    matroid_partition,
    partition_matroid,
    random_laminar,
    spanning_tree_union,
)
from .montecarlo import (  # noqa: F401
    FairnessEstimate,
    acceptance_mc,
    alg3_accept_batch,
    alg3_acceptance_mc,
    cor4_acceptance_mc,
    hill_climb,
)

__all__ = [
    "GraphicMatroid", "UniformMatroid", "LaminarMatroid", "partition_matroid",
    "matroid_partition", "arboricity", "arboricity_bruteforce",
    "Greedy", "FirstFitFair", "LaminarFair", "UniformFair", "RandomOrderGraphicFair", "AcceptAll",
    "first_fit_colours", "alg1_colours", "lemma15_bound", "alg3_q", "alg3_sample_sizes", "alg3_orient",
    "d_levels", "u_position", "cor4_d", "cor4_algorithm",
    "spanning_tree_union", "complete_graph", "random_laminar", "first_fit_worst_case",
    "FairnessEstimate", "acceptance_mc", "alg3_accept_batch", "alg3_acceptance_mc", "cor4_acceptance_mc",
    "hill_climb",
]
