"""Bridge matching on every edge (Eq. 15), simulation leaf → root → leaves, TreeIMF (Alg. 2)."""
from __future__ import annotations

import copy
from typing import Sequence

import numpy as np
import torch

from ..nn import SinusoidalTimeEmbedding
from ..runtime import check_int, lightning_module
from .tree import Tree, brownian_bridge

# --- bridge matching on every edge (Eq. 15) ----------------------------------------------------

class EdgeDrifts(torch.nn.Module):
    """One MLP v_θ^c(x, t) per directed edge c, as in the paper: ``n_nets`` networks with separate
    weights, evaluated together by batched matrix products (one ``baddbmm`` per layer).

    ``forward(x, t)`` takes x (C, N, d) and t (C, N) for all C = ``n_nets`` networks at once;
    ``drift(x, t, code)`` evaluates network ``code`` on x (N, d).
    """

    def __init__(self, n_nets: int, dim: int, hidden: Sequence[int] = (64, 64, 64), time_dim: int = 16):
        super().__init__()
        n_nets = check_int(n_nets, "n_nets")
        self.embed = SinusoidalTimeEmbedding(time_dim)
        sizes = [dim + time_dim, *hidden, dim]
        self.W = torch.nn.ParameterList()
        self.b = torch.nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):  # nn.Linear's default initialisation
            bound = 1 / np.sqrt(fan_in)
            self.W.append(torch.nn.Parameter(torch.empty(n_nets, fan_in, fan_out).uniform_(-bound, bound)))
            self.b.append(torch.nn.Parameter(torch.empty(n_nets, 1, fan_out).uniform_(-bound, bound)))
        self.n_nets, self.dim = n_nets, dim

    def _run(self, x: torch.Tensor, t: torch.Tensor, idx) -> torch.Tensor:
        C, N, _ = x.shape
        h = torch.cat([x, self.embed(t.reshape(-1)).to(x.dtype).reshape(C, N, -1)], dim=-1)
        for k, (W, b) in enumerate(zip(self.W, self.b)):
            h = torch.baddbmm(b[idx], h, W[idx])
            if k < len(self.W) - 1:
                h = torch.nn.functional.silu(h)
        return h

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        if x.ndim != 3 or x.shape[0] != self.n_nets or x.shape[2] != self.dim:
            raise ValueError(f"x must have shape ({self.n_nets}, N, {self.dim}), got {tuple(x.shape)}")
        return self._run(x, t, slice(None))

    def drift(self, x: torch.Tensor, t: torch.Tensor, code: int) -> torch.Tensor:
        return self._run(x[None], t.reshape(1, -1), slice(code, code + 1))[0]


class TreeBridgeMatching(lightning_module()):
    """Drifts v_θ^e(x, t) for every edge e and both directions: one network per directed edge.

    A batch holds observed vertices only; ``training_step`` performs the reciprocal projection on
    the fly (Laplacian conditional for Y_U, then a Brownian bridge per edge) and regresses the
    bridge drift (x_1 − x_t)/(1 − t) of every directed edge at once. An exponential moving average
    (EMA, ``ema_decay``) of the weights is kept and used for simulation, as in the paper's code.
    Its window, ~1/(1 − ema_decay) steps, must stay a small fraction of an IMF iteration (the paper:
    100 of 10,000 steps): at 300 steps per iteration a 100-step window (0.99) simulates with stale
    weights, so the default is 0.9.
    """

    def __init__(self, n_vertices: int, edges, lengths, observed, sigma: float, dim: int = 2,
                 hidden: Sequence[int] = (64, 64, 64), lr: float = 5e-3, t_max: float = 0.99,
                 ema_decay: float = 0.9):
        super().__init__()
        if not 0 <= ema_decay < 1:
            raise ValueError(f"ema_decay must lie in [0, 1), got {ema_decay!r}")
        self.save_hyperparameters()
        self.tree = Tree(n_vertices, edges, lengths, observed, sigma)
        self.n_codes = 2 * len(self.tree.edges)
        self.net = EdgeDrifts(self.n_codes, dim, tuple(hidden))
        self.ema = copy.deepcopy(self.net).requires_grad_(False)
        self.register_buffer("sig_e", torch.tensor(self.tree.edge_sigma(), dtype=torch.float32), persistent=False)

    def drift(self, x: torch.Tensor, t, code: int, ema: bool = True) -> torch.Tensor:
        """Drift of directed edge ``code`` (2k: edge k as listed, 2k+1: reversed) at x (N, d), t (N,)."""
        return (self.ema if ema else self.net).drift(x, t, code)

    def loss(self, y_obs: torch.Tensor) -> torch.Tensor:
        Y = self.tree.sample_unobserved(y_obs)  # reciprocal projection: Y_U | Y_S
        src = [u for (u, v) in self.tree.edges] + [v for (u, v) in self.tree.edges]
        dst = [v for (u, v) in self.tree.edges] + [u for (u, v) in self.tree.edges]
        codes = [2 * k for k in range(len(self.tree.edges))] + [2 * k + 1 for k in range(len(self.tree.edges))]
        order = np.argsort(codes)  # network c sees directed edge c
        x0 = Y[:, [src[i] for i in order]].transpose(0, 1)  # (C, N, d)
        x1 = Y[:, [dst[i] for i in order]].transpose(0, 1)
        C, N, d = x0.shape
        t = torch.rand(C, N, device=Y.device) * self.hparams.t_max
        sig = self.sig_e[torch.arange(C, device=Y.device) // 2].repeat_interleave(N)
        xt = brownian_bridge(x0.reshape(-1, d), x1.reshape(-1, d), t.reshape(-1), sig).reshape(C, N, d)
        target = (x1 - xt) / (1 - t[..., None])
        return ((self.net(xt, t) - target) ** 2).sum(-1).mean()

    def training_step(self, batch, batch_idx):
        loss = self.loss(batch[0])
        self.log("train_loss", loss)
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        with torch.no_grad():
            a = self.hparams.ema_decay
            for pe, p in zip(self.ema.parameters(), self.net.parameters()):
                pe.mul_(a).add_(p.detach(), alpha=1 - a)

    def configure_optimizers(self):
        # Cosine decay within each IMF iteration: the late small steps average out the bridge noise.
        opt = torch.optim.Adam(self.net.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, self.trainer.max_steps))
        return [opt], [{"scheduler": sched, "interval": "step"}]


@torch.no_grad()
def simulate_tree(model: TreeBridgeMatching, start: int, y_start: torch.Tensor, n_steps: int = 50,
                  noise_last: bool = False, paths: bool = False):
    """Euler–Maruyama along every edge, breadth-first from ``start`` (leaf → root → other leaves).

    Runs on the model's device (``y_start`` is moved there); returns (N, |V|, d) on that device with
    ``y_start`` at ``start``. The last step is noise-free unless ``noise_last`` (TreeDSB's discrete
    chains are noisy at every step). With ``paths`` it also returns ``{code: (n_steps + 1, N, d)}``,
    the trajectory along every directed edge simulated.
    """
    tree = model.tree
    if y_start.ndim != 2:
        raise ValueError(f"y_start must have shape (N, d), got {tuple(y_start.shape)}")
    model.eval()
    y_start = y_start.to(model.device)
    N, d = y_start.shape
    Y = y_start.new_zeros(N, tree.n_vertices, d)
    Y[:, start] = y_start
    dt = 1.0 / n_steps
    sig = tree.edge_sigma()
    traj = {}
    for u, v, code in tree.traversal(start):
        x = Y[:, u].clone()
        xs = [x]
        for k in range(n_steps):
            x = x + model.drift(x, torch.full((N,), k * dt, device=x.device), code) * dt
            if k < n_steps - 1 or noise_last:
                x = x + sig[code // 2] * np.sqrt(dt) * torch.randn_like(x)
            xs.append(x)
        Y[:, v] = x
        if paths:
            traj[code] = torch.stack(xs)
    return (Y, traj) if paths else Y


def _check_data(tree: Tree, data: Sequence[torch.Tensor]) -> tuple[int, int]:
    """(N, d) of ``data``: one (N, d) tensor per observed vertex."""
    if len(data) != len(tree.observed):
        raise ValueError(f"data must hold one tensor per observed vertex ({len(tree.observed)}), got {len(data)}")
    N, d = data[0].shape
    if any(x.shape != (N, d) for x in data):
        raise ValueError(f"data tensors must all have shape ({N}, {d})")
    return N, d


def tree_dsbm(tree: Tree, data: Sequence[torch.Tensor], n_iter: int = 3, steps: int = 300, batch_size: int = 256,
              hidden: Sequence[int] = (64, 64, 64), lr: float = 5e-3, n_steps: int = 50,
              start: int | None = None, callback=None, ema_decay: float = 0.9,
              device=None) -> TreeBridgeMatching:
    """TreeIMF with bridge matching (Alg. 2): alternate reciprocal and per-edge Markovian projections.

    ``data[i]`` are samples of μ at ``tree.observed[i]`` (equal sizes). Iteration 1 trains on the
    independent coupling; each later one on the coupling simulated from ``start`` (default: the
    observed vertices in turn), whose unobserved vertices are re-drawn from Q_{U|S} in training.
    The networks (and their EMA) are warm-started across iterations. ``callback(it, model)`` runs after each.
    Training and simulation run on ``device`` (default CPU), where the returned model lives.
    ``n_iter`` and ``steps`` are bounded by ``runtime.cap`` under ``NEURIPS25_SMOKE=1``.
    """
    from ..runtime import cap, make_trainer

    dev = torch.device("cpu") if device is None else torch.device(device)

    N, d = _check_data(tree, data)
    model = TreeBridgeMatching(tree.n_vertices, tree.edges, tree.lengths, tree.observed, tree.sigma, d, hidden, lr,
                               ema_decay=ema_decay)
    # Independent coupling: shuffle each marginal separately.
    coupling = torch.stack([x[torch.randperm(N)] for x in data], dim=1).float()
    for it in range(1, cap(n_iter) + 1):
        ds = torch.utils.data.TensorDataset(coupling.cpu())
        dl = torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=True)
        make_trainer(None, max_steps=cap(steps), accelerator=dev.type).fit(model, dl)
        model = model.to(dev)  # Lightning hands the model back on the CPU
        s = tree.observed[(it - 1) % len(tree.observed)] if start is None else start
        Y = simulate_tree(model, s, data[tree.observed.index(s)].float(), n_steps)
        coupling = Y[:, tree.observed].detach()
        if callback is not None:
            callback(it, model)
    return model


# --- TreeDSB: tree IPF with alternating half-bridges (the paper's baseline, Noble et al. 2023) ----

class TreeHalfBridge(TreeBridgeMatching):
    """TreeDSB's learner: the same networks (one per directed edge, EMA), trained by DSB's mean matching.

    An IPF half-bridge moves the start of the process from leaf s to leaf s'. Edges off the path
    s → s' keep their drifts; each edge on it is reversed in time. The reversed drift is regressed on
    the simulated discrete chains X_0..X_n of the current process, as in De Bortoli et al. (2021):
    at X_{k+1}, reversed time 1 − t_{k+1}, the target is (X_k − X_{k+1})/Δt + f(X_k) − f(X_{k+1})
    with f the current forward drift at t_k. A batch is (x, s, target), each (B, C, ·) for the
    C = len(``train_codes``) reversed directed edges trained in this half-bridge. The last layer of
    every network starts at zero, so the initial process is the reference Q (zero drift).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for p in (self.net.W[-1], self.net.b[-1], self.ema.W[-1], self.ema.b[-1]):
            torch.nn.init.zeros_(p)
        self.train_codes: list[int] = []

    def loss(self, batch) -> torch.Tensor:
        x, s, target = (b.transpose(0, 1) for b in batch)  # (C, B, ·)
        if x.shape[0] != len(self.train_codes):
            raise ValueError(f"batch holds {x.shape[0]} edges but train_codes has {len(self.train_codes)}")
        idx = torch.as_tensor(self.train_codes, device=x.device)
        return ((self.net._run(x, s, idx) - target) ** 2).sum(-1).mean()

    def training_step(self, batch, batch_idx):
        loss = self.loss(batch)
        self.log("train_loss", loss)
        return loss


def _path_codes(tree: Tree, start: int, end: int) -> list[int]:
    """Codes of the directed edges from ``start`` to ``end`` in ``tree.traversal(start)``."""
    parent = {v: (u, code) for u, v, code in tree.traversal(start)}
    codes, v = [], end
    while v != start:
        v, code = parent[v]
        codes.append(code)
    return codes[::-1]


@torch.no_grad()
def _mean_matching_data(model: TreeHalfBridge, traj: dict, codes: Sequence[int]):
    """(x, s, target) for the reversals of ``codes`` from their simulated chains (DSB mean matching)."""
    xs, ss, ts = [], [], []
    for code in codes:
        X = traj[code]  # (n + 1, N, d)
        n, N = X.shape[0] - 1, X.shape[1]
        dt = 1.0 / n
        t = (torch.arange(n, device=X.device, dtype=X.dtype) * dt).repeat_interleave(N)
        prev, nxt = X[:-1].reshape(n * N, -1), X[1:].reshape(n * N, -1)
        target = (prev - nxt) / dt + model.drift(prev, t, code) - model.drift(nxt, t, code)
        xs.append(nxt)
        ss.append(1 - (t + dt))
        ts.append(target)
    return torch.stack(xs, 1), torch.stack(ss, 1), torch.stack(ts, 1)


def tree_dsb(tree: Tree, data: Sequence[torch.Tensor], n_iter: int = 3, steps: int = 300, batch_size: int = 256,
             hidden: Sequence[int] = (64, 64, 64), lr: float = 5e-3, n_steps: int = 50, callback=None,
             ema_decay: float = 0.9, device=None) -> TreeHalfBridge:
    """TreeDSB (tree IPF, Noble et al. 2023): alternating half-bridges, the baseline of the paper.

    P⁰ is the reference Q started from μ at ``tree.observed[0]``. Half-bridge h simulates the
    current process from its start leaf s and learns, by mean matching, the reversal of every edge
    on the path from s to s' = ``tree.observed[h mod K]`` (``steps`` Adam steps, ``batch_size``
    chain points per reversed edge); the new process starts from μ_{s'}. An iteration is a sweep of
    K half-bridges: on a star each of the 2|E| networks is then trained once, the same number of
    Adam steps per network as one TreeDSBM iteration. ``callback(h, model, start)`` runs after each
    half-bridge. ``n_iter`` and ``steps`` are bounded by ``runtime.cap`` under ``NEURIPS25_SMOKE=1``.
    """
    from ..runtime import cap, make_trainer

    dev = torch.device("cpu") if device is None else torch.device(device)
    N, d = _check_data(tree, data)
    n_iter = check_int(n_iter, "n_iter")
    model = TreeHalfBridge(tree.n_vertices, tree.edges, tree.lengths, tree.observed, tree.sigma, d, hidden, lr,
                           ema_decay=ema_decay).to(dev)
    S, K = tree.observed, len(tree.observed)
    start = S[0]
    for h in range(1, cap(n_iter) * K + 1):
        new = S[h % K]
        _, traj = simulate_tree(model, start, data[S.index(start)].float(), n_steps,
                                noise_last=True, paths=True)
        codes = _path_codes(tree, start, new)
        x, s, target = (b.cpu() for b in _mean_matching_data(model, traj, codes))
        model.train_codes = [c ^ 1 for c in codes]  # the reversed directed edges
        dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, s, target), batch_size=batch_size,
                                         shuffle=True, drop_last=True)
        make_trainer(None, max_steps=cap(steps), accelerator=dev.type).fit(model, dl)
        model = model.to(dev)
        start = new
        if callback is not None:
            callback(h, model, start)
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
