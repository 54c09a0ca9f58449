"""Lightning modules: training the tiny ViT and reduced fine-tuning with self-distillation."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..runtime import lightning_module
from .core import (
    ReductionPlan,
)
from .vit import TinyViT

# --- Lightning modules --------------------------------------------------------------------------------



class ViTClassifier(lightning_module()):
    """Trains a :class:`TinyViT` with cross-entropy (AdamW, one-cycle learning rate, optional random
    shifts by up to ``shift`` pixels)."""

    def __init__(self, dim: int = 32, depth: int = 6, heads: int = 4, mlp_ratio: float = 2.0,
                 lr: float = 2e-3, weight_decay: float = 0.05, shift: int = 0):
        super().__init__()
        self.save_hyperparameters()
        self.model = TinyViT(dim=dim, depth=depth, heads=heads, mlp_ratio=mlp_ratio)

    def forward(self, x, plan=None):
        return self.model(x, plan)

    def training_step(self, batch, batch_idx):
        x, y = batch
        s = self.model.image_size
        x = _random_shift(x.reshape(-1, self.model.in_chans, s, s), self.hparams.shift)
        return F.cross_entropy(self.model(x), y)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, self.hparams.lr, pct_start=0.15,
                                                    total_steps=self.trainer.estimated_stepping_batches)
        return [opt], [{"scheduler": sched, "interval": "step"}]


def _random_shift(x: torch.Tensor, shift: int) -> torch.Tensor:
    """Translate each image by up to ``shift`` pixels (zero padding) -- cheap augmentation."""
    if shift == 0:
        return x
    B, C, H, W = x.shape
    pad = F.pad(x, (shift,) * 4)
    dy, dx = torch.randint(0, 2 * shift + 1, (2, B, 1), device=x.device)
    rows = (dy + torch.arange(H, device=x.device))[:, None, :, None].expand(B, C, H, W + 2 * shift)
    pad = pad.gather(2, rows)
    cols = (dx + torch.arange(W, device=x.device))[:, None, None, :].expand(B, C, H, W)
    return pad.gather(3, cols)


class ReducedFineTuner(lightning_module()):
    """Fine-tunes a copy of a trained :class:`TinyViT` *with* its reduction plan: cross-entropy plus
    self-distillation from the frozen unreduced model, ``(1-alpha) CE + alpha tau^2 KL(p_t || p_s)``.
    With ``plan["reweight"]`` the per-head ``omega1, omega2`` train (at ``omega_lr``) as well."""

    def __init__(self, student: TinyViT, plan: dict, teacher: TinyViT | None = None, lr: float = 5e-4,
                 omega_lr: float = 1e-2, alpha: float = 0.5, tau: float = 2.0):
        super().__init__()
        self.save_hyperparameters(ignore=["student", "teacher"])
        self.student, self.plan = student.requires_grad_(True), ReductionPlan(**plan)
        self.teacher = teacher
        if teacher is not None:
            teacher.requires_grad_(False).eval()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")

    def forward(self, x):
        return self.student(x, self.plan)

    def training_step(self, batch, batch_idx):
        x, y = batch
        s = self.student(x, self.plan)
        loss = F.cross_entropy(s, y)
        if self.teacher is not None and self.hparams.alpha > 0:
            with torch.no_grad():
                t = self.teacher(x)
            tau, a = self.hparams.tau, self.hparams.alpha
            kl = F.kl_div(F.log_softmax(s / tau, -1), F.log_softmax(t / tau, -1), log_target=True,
                          reduction="batchmean")
            loss = (1 - a) * loss + a * tau ** 2 * kl
        return loss

    def configure_optimizers(self):
        omega = [p for n, p in self.student.named_parameters() if "omega" in n]
        rest = [p for n, p in self.student.named_parameters() if "omega" not in n]
        groups = [{"params": rest, "lr": self.hparams.lr}]
        if self.plan.reweight:
            groups.append({"params": omega, "lr": self.hparams.omega_lr, "weight_decay": 0.0})
        return torch.optim.AdamW(groups, weight_decay=0.01)


def digits_loaders(seed: int = 0, batch_size: int = 32):
    """Train loader and the splits of the digits used here: 60% train (1,078), 40% test (719 images)."""
    from neurips25.data import DigitsDataModule

    dm = DigitsDataModule(batch_size=batch_size, val_fraction=0.0, test_fraction=0.4, seed=seed)
    return dm.train_dataloader(), dm.splits


def train_tiny_vit(seed: int = 0, epochs: int = 7, batch_size: int = 32, **hparams) -> tuple[TinyViT, dict]:
    """Train a :class:`TinyViT` on the digits with Lightning; returns ``(model, splits)``."""
    from ..runtime import make_trainer, seed_everything

    seed_everything(seed)
    loader, splits = digits_loaders(seed, batch_size)
    lm = ViTClassifier(**hparams)
    make_trainer(epochs).fit(lm, train_dataloaders=loader)
    return lm.model.eval(), splits


def fine_tune(model: TinyViT, plan: ReductionPlan, epochs: int = 2, seed: int = 0, batch_size: int = 32,
              distill: bool = True, **hparams) -> TinyViT:
    """A reduced copy of ``model`` fine-tuned with ``plan`` (self-distillation from ``model`` itself)."""
    import copy

    from ..runtime import make_trainer, seed_everything

    seed_everything(seed)
    loader, _ = digits_loaders(seed, batch_size)
    teacher = copy.deepcopy(model) if distill else None
    ft = ReducedFineTuner(copy.deepcopy(model), plan.to_dict(), teacher=teacher, **hparams)
    make_trainer(epochs).fit(ft, train_dataloaders=loader)
    return ft.student.eval()
