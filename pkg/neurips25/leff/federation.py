"""One client/server interface for every method: the server's ``configure_round`` hands each client
its weights and a :class:`ClientPlan` (which parameters to train, on what model), ``Client.fit``
trains locally with Lightning and returns ``(update, n_samples, metrics)``, and the server's
``aggregate`` applies the layer-wise rule. The shapes follow Flower's ``Strategy.configure_fit`` /
``aggregate_fit`` and ``NumPyClient.fit``."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..runtime import cap, check_int, lightning_module, make_trainer
from ..vision import TinyViT
from .core import SAMPLINGS, check_capacities, choose_blocks, layerwise_aggregate, taylor_importance
from .model import (
    ModelSpec,
    add_lora,
    build_model,
    compress_segments,
    run_blocks,
    set_trainable,
    submodel,
)

KINDS = ("fedavg", "headonly", "bitfit", "lora", "leff")
CAPACITY_SCHEDULES = ("fixed", "rotate", "shuffle", "draw")


@dataclass(frozen=True)
class Method:
    """A federated fine-tuning method. ``kind``: ``"fedavg"`` (all layers), ``"headonly"`` (no body
    fine-tuning), ``"bitfit"`` (biases + LayerNorms), ``"lora"`` (rank-``lora_rank`` adapters on the
    attention's qkv/proj), ``"leff"``. LEFF's knobs: ``sampling`` of the blocks, compression ratio ``r``,
    softmax ``temperature``, distillation ``distill_steps`` and ``distill_alpha``. Every method also
    trains the final LayerNorm and the (fresh) classification head on every client; the patch and
    position embeddings stay frozen in every method."""

    kind: str = "leff"
    lr: float = 1e-3
    sampling: str = "importance"
    r: float = 0.5
    temperature: float = 0.1
    lora_rank: int = 4
    distill_steps: int = 20
    distill_alpha: float = 0.5

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be one of {SAMPLINGS}, got {self.sampling!r}")
        if not 0 < self.r <= 1:
            raise ValueError(f"r must be in (0, 1], got {self.r!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr!r}")


@dataclass(frozen=True)
class ClientPlan:
    """What the server asks of one client this round (Flower: the ``config`` of a ``FitIns``)."""

    spec: ModelSpec
    trainable: tuple[str, ...]
    steps: int = 10
    lr: float = 1e-3
    batch_size: int = 32
    seed: int = 0
    block: tuple[int, ...] = ()

    def to_global(self, name: str) -> str:
        """Sub-model parameter name -> global name (``blocks.j.`` -> ``blocks.layer_map[j].``)."""
        m = re.match(r"blocks\.(\d+)\.(.*)", name)
        if not m:
            return name
        g = self.spec.layer_map[int(m.group(1))]
        if g < 0:
            raise ValueError(f"{name!r} belongs to a compressed block and has no global counterpart")
        return f"blocks.{g}.{m.group(2)}"


def trainable_names(model: nn.Module, kind: str, trained_blocks=None) -> tuple[str, ...]:
    """The parameters a method trains (in ``model``'s namespace); see :class:`Method`."""
    names = []
    for n, _ in model.named_parameters():
        if "omega" in n or n.startswith(("patch_embed", "cls_token", "pos_embed")):
            continue            # token-reduction re-weighting (unused here) and embeddings: frozen
        if n.startswith(("norm.", "head.")):
            names.append(n)
            continue
        blk = int(n.split(".")[1])
        if kind == "fedavg" or (kind == "leff" and blk in trained_blocks):
            names.append(n)
        elif kind == "bitfit" and (n.endswith("bias") or ".norm1." in n or ".norm2." in n) and "lora" not in n:
            names.append(n)
        elif kind == "lora" and "lora_" in n:
            names.append(n)
    return tuple(names)


class LocalFit(lightning_module()):
    """Local training on a client: cross-entropy, Adam on the parameters that require grad."""

    def __init__(self, model: nn.Module, lr: float = 1e-3):
        super().__init__()
        self.save_hyperparameters(ignore=["model"])
        self.model = model
        self.losses: list[float] = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.model(x), y)
        self.losses.append(float(loss.detach()))
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam([p for p in self.model.parameters() if p.requires_grad], lr=self.hparams.lr)


class Client:
    """A simulated client holding its local data (Flower: a ``NumPyClient``)."""

    def __init__(self, cid: int, X: torch.Tensor, y: torch.Tensor):
        if len(X) == 0 or len(X) != len(y):
            raise ValueError(f"client {cid}: X and y must be non-empty and of equal length")
        self.cid, self.X, self.y = cid, X, y

    def _model(self, global_state, spec):
        model = build_model(spec)
        model.load_state_dict(global_state)
        return model

    def fit(self, global_state: dict, plan: ClientPlan):
        """Train ``plan.trainable`` for ``plan.steps`` steps; return the trained tensors under their
        global names, the number of local samples ``D_i`` and metrics."""
        model = set_trainable(self._model(global_state, plan.spec), plan.trainable)
        g = torch.Generator().manual_seed(plan.seed)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(self.X, self.y),
                                             batch_size=plan.batch_size, shuffle=True, generator=g)
        module = LocalFit(model, plan.lr)
        make_trainer(None, max_steps=cap(plan.steps)).fit(module, train_dataloaders=loader)
        update = {plan.to_global(n): p.detach().clone() for n, p in model.named_parameters() if n in plan.trainable}
        return update, len(self.X), {"loss": module.losses[-1], "block": plan.block}

    def layer_importance(self, global_state: dict, spec: ModelSpec, batch_size: int = 32, seed: int = 0):
        """Taylor importance ``I^l`` of every layer of the global model on one local mini-batch
        (one forward + backward, no optimizer state), reported to the server."""
        model = self._model(global_state, spec)
        idx = torch.randperm(len(self.X), generator=torch.Generator().manual_seed(seed))[:batch_size]
        dev = next(model.parameters()).device
        loss = F.cross_entropy(model(self.X[idx].to(dev)), self.y[idx].to(dev))
        return taylor_importance(loss, list(model.blocks))


class Server:
    """Drives the rounds: ``configure_round(t)`` -> clients ``fit`` -> ``aggregate(results)``.

    Args:
        model: the pre-trained global tiny ViT (with its downstream head).
        clients: the :class:`Client` objects (all participate every round).
        capacities: ``L_i`` per client, the consecutive layers each can fine-tune (LEFF only).
        method: a :class:`Method`.
        proxy: public proxy images for LEFF's compression by distillation (unlabelled).
        local_steps: ``K``; batch_size: local batch; seed: sampling and data order.
        local_epochs: if given, client ``i`` runs ``local_epochs * ceil(D_i / batch_size)`` steps
            instead of ``K`` (the paper: one local epoch per round).
        capacity_schedule: which client holds which capacity in round ``t``. ``"fixed"`` (default):
            client ``i`` always has ``L_i``. ``"rotate"``: the profile shifts by one client per round,
            ``L_{(i + t) mod N}``, so every client holds every level equally often. ``"shuffle"``: a
            random permutation of the profile every round. The levels, hence the compute, of a round
            are the same in these three. ``"draw"``: every client reports a fresh ``L_{i,t}``, drawn
            independently and uniformly from the profile's levels, every round (the compute of a round
            varies). The paper's clients "report their local fine-tuning capacity" in the first of
            the "four steps per communication round" (Sec. 3.1) and "dynamically adjust their local
            training workload according to their available resources"; it gives no distribution,
            and says nowhere that a capacity stays with a client.
    """

    def __init__(self, model: TinyViT, clients: list[Client], capacities, method: Method,
                 proxy: torch.Tensor | None = None, local_steps: int = 10, batch_size: int = 32, seed: int = 0,
                 local_epochs: int | None = None, capacity_schedule: str = "fixed"):
        if not clients:
            raise ValueError("clients must be a non-empty list")
        self.depth = len(model.blocks)
        self.capacities = check_capacities(tuple(capacities), self.depth)
        if len(self.capacities) != len(clients):
            raise ValueError(f"capacities has {len(self.capacities)} entries for {len(clients)} clients")
        if method.kind == "leff" and method.r < 1 and proxy is None:
            raise ValueError("LEFF with r < 1 needs proxy images for the compression")
        local_steps = check_int(local_steps, "local_steps")
        if local_epochs is not None and (not isinstance(local_epochs, int) or local_epochs < 1):
            raise ValueError(f"local_epochs must be None or a positive int, got {local_epochs!r}")
        if capacity_schedule not in CAPACITY_SCHEDULES:
            raise ValueError(f"capacity_schedule must be one of {CAPACITY_SCHEDULES}, got {capacity_schedule!r}")
        self.method, self.clients, self.proxy = method, clients, proxy
        self.K, self.batch_size, self.seed = local_steps, batch_size, seed
        self.local_epochs, self.capacity_schedule, self.profile = local_epochs, capacity_schedule, self.capacities
        self.model = add_lora(model, method.lora_rank, seed) if method.kind == "lora" else model
        self.model.eval()
        blk = self.model.blocks[0]
        self.spec = ModelSpec(dim=self.model.pos_embed.shape[-1], heads=blk.attn.heads,
                              mlp_ratio=blk.mlp[0].out_features / blk.mlp[0].in_features,
                              num_classes=self.model.head.out_features, layer_map=tuple(range(self.depth)),
                              lora_rank=method.lora_rank if method.kind == "lora" else 0)
        self.rng = np.random.default_rng(seed)
        self.importance: torch.Tensor | None = None
        self.last_plans: list[ClientPlan] = []

    def state(self) -> dict:
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    # -- configure_fit --------------------------------------------------------------------------------
    def configure_round(self, t: int) -> list[tuple[Client, dict, ClientPlan]]:
        """Per client: the weights to send and its plan for round ``t``."""
        m = self.method
        n = len(self.profile)
        if self.capacity_schedule == "rotate":
            self.capacities = tuple(self.profile[(i + t) % n] for i in range(n))
        elif self.capacity_schedule == "shuffle":   # own generator: block draws keep using self.rng
            perm = np.random.default_rng([self.seed, t, 17]).permutation(n)
            self.capacities = tuple(self.profile[j] for j in perm)
        elif self.capacity_schedule == "draw":      # own generator, as for "shuffle"
            levels = sorted(set(self.profile))
            self.capacities = tuple(int(L) for L in np.random.default_rng([self.seed, t, 29]).choice(levels, n))
        base = dict(lr=m.lr, batch_size=self.batch_size)
        seeds = [self.seed * 100_003 + t * 1009 + c.cid for c in self.clients]
        steps = [self.local_steps(c) for c in self.clients]
        if m.kind != "leff":
            state = self.state()
            plan = dict(spec=self.spec, trainable=trainable_names(self.model, m.kind), **base)
            self.last_plans = [ClientPlan(seed=s, steps=k, **plan) for s, k in zip(seeds, steps)]
            return [(c, state, p) for c, p in zip(self.clients, self.last_plans)]
        if m.sampling == "importance":
            self.importance = self.collect_importance(t)
        starts = choose_blocks(self.capacities, self.depth, m.sampling, t, self.rng, self.importance,
                               m.temperature)
        segment = self._segments([(0, k) for k in starts]
                                 + [(k + L, self.depth) for k, L in zip(starts, self.capacities)])
        out, self.last_plans = [], []
        for c, k, L, s, n_steps in zip(self.clients, starts, self.capacities, seeds, steps):
            pre, pre_map = segment[0, k]
            post, post_map = segment[k + L, self.depth]
            blocks = pre + list(self.model.blocks[k:k + L]) + post
            layer_map = pre_map + tuple(range(k, k + L)) + post_map
            sub = submodel(self.model, blocks)
            trained = range(len(pre), len(pre) + L)
            plan = ClientPlan(spec=replace(self.spec, layer_map=layer_map),
                              trainable=trainable_names(sub, "leff", trained), seed=s, steps=n_steps,
                              block=tuple(range(k, k + L)), **base)
            self.last_plans.append(plan)
            out.append((c, {k_: v.detach().clone() for k_, v in sub.state_dict().items()}, plan))
        return out

    def local_steps(self, client: Client) -> int:
        """Local steps this client runs in a round: ``K``, or ``local_epochs`` passes over its data."""
        if self.local_epochs is None:
            return self.K
        return self.local_epochs * math.ceil(len(client.X) / self.batch_size)

    def collect_importance(self, t: int) -> torch.Tensor:
        """``I^l`` averaged over clients with weights ``D_i`` (each reports one mini-batch's Taylor sums)."""
        state, total, acc = self.state(), 0, 0
        for c in self.clients:
            acc = acc + len(c.X) * c.layer_importance(state, self.spec, self.batch_size, seed=t * 7919 + c.cid)
            total += len(c.X)
        return acc / total

    def _segments(self, keys) -> dict:
        """``{(a, b): (blocks, layer_map)}``: stand-ins for the unselected layers ``[a, b)`` --
        compressed by distillation when ``r < 1`` (once per round: many clients share a prefix or
        suffix), the original (frozen) layers when ``r = 1``."""
        m, keys = self.method, sorted(set(keys))
        if m.r == 1:
            return {(a, b): (list(self.model.blocks[a:b]), tuple(range(a, b))) for a, b in keys}
        with torch.no_grad():
            x0 = self.model.embed(self.proxy)
            hidden, attns = run_blocks(self.model.blocks, x0, self.model.n_patches)
        inputs = [x0] + hidden
        segs = {(a, b): (list(self.model.blocks[a:b]), inputs[a], hidden[a:b], attns[a:b]) for a, b in keys}
        comp = compress_segments(segs, m.r, self.model.n_patches, m.distill_steps, m.distill_alpha)
        return {key: (blocks, tuple(range(*key)) if len(blocks) == key[1] - key[0] else (-1,) * len(blocks))
                for key, blocks in comp.items()}

    # -- aggregate_fit --------------------------------------------------------------------------------
    def aggregate(self, results) -> dict:
        """Layer-wise aggregation of ``(update, n_samples, metrics)`` into the global model."""
        new = layerwise_aggregate(self.model.state_dict(), [(u, n) for u, n, _ in results])
        self.model.load_state_dict(new)
        return {"loss": float(np.mean([mt["loss"] for _, _, mt in results]))}

    @torch.no_grad()
    def evaluate(self, X: torch.Tensor, y: torch.Tensor) -> float:
        dev = next(self.model.parameters()).device   # the data go to the model, wherever it lives
        return float((self.model(X.to(dev)).argmax(-1) == y.to(dev)).float().mean())

    def run(self, rounds: int, X_test: torch.Tensor, y_test: torch.Tensor, on_round=None) -> list[float]:
        """``rounds`` synchronous rounds; returns the global test accuracy after each."""
        acc = []
        for t in range(rounds):
            results = [c.fit(state, plan) for c, state, plan in self.configure_round(t)]
            self.aggregate(results)
            acc.append(self.evaluate(X_test, y_test))
            if on_round is not None:
                on_round(t, self)
        return acc
