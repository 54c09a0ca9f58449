"""Bridge matching on every edge (Eq. 15), simulation leaf → root → leaves, TreeIMF (Alg. 2)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..nn import TimeConditionedMLP
from ..runtime import lightning_module
from .tree import Tree, brownian_bridge

# --- bridge matching on every edge (Eq. 15) ----------------------------------------------------



class TreeBridgeMatching(lightning_module()):
    """Drifts v_θ(x, t; e, direction) for all edges and both directions, in one network.

    A batch holds observed vertices only; ``training_step`` performs the reciprocal projection on
    the fly (Laplacian conditional for Y_U, then a Brownian bridge per edge) and regresses the
    bridge drift (x_1 − x_t)/(1 − t) of every directed edge at once.
    """

    def __init__(self, n_vertices: int, edges, lengths, observed, sigma: float, dim: int = 2,
                 hidden: Sequence[int] = (128, 128, 128), lr: float = 5e-3, t_max: float = 0.99):
        super().__init__()
        self.save_hyperparameters()
        self.tree = Tree(n_vertices, edges, lengths, observed, sigma)
        self.n_codes = 2 * len(self.tree.edges)
        self.net = TimeConditionedMLP(dim + self.n_codes, tuple(hidden), out_dim=dim)
        self.register_buffer("sig_e", torch.tensor(self.tree.edge_sigma(), dtype=torch.float32), persistent=False)

    def drift(self, x: torch.Tensor, t, code: int) -> torch.Tensor:
        onehot = torch.zeros(x.shape[0], self.n_codes, dtype=x.dtype, device=x.device)
        onehot[:, code] = 1
        return self.net(torch.cat([x, onehot], dim=1), t)

    def loss(self, y_obs: torch.Tensor) -> torch.Tensor:
        Y = self.tree.sample_unobserved(y_obs)  # reciprocal projection: Y_U | Y_S
        N = Y.shape[0]
        src = [u for (u, v) in self.tree.edges] + [v for (u, v) in self.tree.edges]
        dst = [v for (u, v) in self.tree.edges] + [u for (u, v) in self.tree.edges]
        codes = [2 * k for k in range(len(self.tree.edges))] + [2 * k + 1 for k in range(len(self.tree.edges))]
        x0 = Y[:, src].transpose(0, 1).reshape(-1, Y.shape[2])
        x1 = Y[:, dst].transpose(0, 1).reshape(-1, Y.shape[2])
        code = torch.tensor(codes, device=Y.device).repeat_interleave(N)
        sig = self.sig_e[code // 2]
        t = torch.rand(x0.shape[0], device=Y.device) * self.hparams.t_max
        xt = brownian_bridge(x0, x1, t, sig)
        target = (x1 - xt) / (1 - t[:, None])
        onehot = torch.nn.functional.one_hot(code, self.n_codes).to(Y.dtype)
        pred = self.net(torch.cat([xt, onehot], dim=1), t)
        return ((pred - target) ** 2).sum(1).mean()

    def training_step(self, batch, batch_idx):
        loss = self.loss(batch[0])
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        # Cosine decay within each IMF iteration: the late small steps average out the bridge noise.
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, self.trainer.max_steps))
        return [opt], [{"scheduler": sched, "interval": "step"}]


@torch.no_grad()
def simulate_tree(model: TreeBridgeMatching, start: int, y_start: torch.Tensor, n_steps: int = 50) -> torch.Tensor:
    """Euler–Maruyama along every edge, breadth-first from ``start`` (leaf → root → other leaves).

    Returns (N, |V|, d) with ``y_start`` at ``start``; the last step is noise-free.
    """
    tree = model.tree
    if y_start.ndim != 2:
        raise ValueError(f"y_start must have shape (N, d), got {tuple(y_start.shape)}")
    model.eval()
    N, d = y_start.shape
    Y = y_start.new_zeros(N, tree.n_vertices, d)
    Y[:, start] = y_start
    dt = 1.0 / n_steps
    sig = tree.edge_sigma()
    for u, v, code in tree.traversal(start):
        x = Y[:, u].clone()
        for k in range(n_steps):
            x = x + model.drift(x, torch.full((N,), k * dt, device=x.device), code) * dt
            if k < n_steps - 1:
                x = x + sig[code // 2] * np.sqrt(dt) * torch.randn_like(x)
        Y[:, v] = x
    return Y


def tree_dsbm(tree: Tree, data: Sequence[torch.Tensor], n_iter: int = 3, steps: int = 300, batch_size: int = 256,
              hidden: Sequence[int] = (128, 128, 128), lr: float = 5e-3, n_steps: int = 50,
              start: int | None = None, callback=None) -> TreeBridgeMatching:
    """TreeIMF with bridge matching (Alg. 2): alternate reciprocal and per-edge Markovian projections.

    ``data[i]`` are samples of μ at ``tree.observed[i]`` (equal sizes). Iteration 1 trains on the
    independent coupling; each later one on the coupling simulated from ``start`` (default: the
    observed vertices in turn), whose unobserved vertices are re-drawn from Q_{U|S} in training.
    The network is warm-started across iterations. ``callback(it, model)`` runs after each.
    """
    from ..runtime import make_trainer

    if len(data) != len(tree.observed):
        raise ValueError(f"data must hold one tensor per observed vertex ({len(tree.observed)}), got {len(data)}")
    N, d = data[0].shape
    if any(x.shape != (N, d) for x in data):
        raise ValueError(f"data tensors must all have shape ({N}, {d})")
    model = TreeBridgeMatching(tree.n_vertices, tree.edges, tree.lengths, tree.observed, tree.sigma, d, hidden, lr)
    # Independent coupling: shuffle each marginal separately.
    coupling = torch.stack([x[torch.randperm(N)] for x in data], dim=1).float()
    for it in range(1, n_iter + 1):
        ds = torch.utils.data.TensorDataset(coupling)
        dl = torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=True)
        make_trainer(None, max_steps=steps).fit(model, dl)
        s = tree.observed[(it - 1) % len(tree.observed)] if start is None else start
        Y = simulate_tree(model, s, data[tree.observed.index(s)].float(), n_steps)
        coupling = Y[:, tree.observed].detach()
        if callback is not None:
            callback(it, model)
    return model


def sinkhorn_divergence(A: torch.Tensor, B: torch.Tensor, reg: float = 0.05) -> float:
    """Debiased Sinkhorn divergence (POT), squared-Euclidean cost."""
    import ot

    a = np.asarray(A, dtype=float)
    b = np.asarray(B, dtype=float)
    return float(ot.bregman.empirical_sinkhorn_divergence(a, b, reg, numIterMax=2000, warn=False))


def pot_free_support_barycenter(samples: Sequence[torch.Tensor], weights, n_support: int = 300, seed: int = 0,
                                n_iter: int = 20) -> np.ndarray:
    """Unregularised W2 barycentre of point clouds with POT's free-support solver (the 2-D reference)."""
    import ot

    lam = np.asarray(weights, dtype=float)
    if lam.shape != (len(samples),) or np.any(lam <= 0):
        raise ValueError(f"weights must be {len(samples)} positive numbers, got {list(weights)}")
    rng = np.random.default_rng(seed)
    locs = [np.asarray(x, dtype=float)[rng.choice(len(x), n_support, replace=False)] for x in samples]
    w = [np.full(n_support, 1.0 / n_support)] * len(locs)
    X0 = rng.normal(size=(n_support, locs[0].shape[1]))
    return ot.lp.free_support_barycenter(locs, w, X0, weights=lam / lam.sum(), numItermax=n_iter)
