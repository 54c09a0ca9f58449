"""Lightning modules: training the tiny ViT and reduced fine-tuning with self-distillation."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..runtime import cap, lightning_module, smoke
from ..vision import TinyViT, ViTClassifier
from .core import ReductionPlan

__all__ = ["ViTClassifier", "ReducedFineTuner", "digits_loaders", "train_tiny_vit", "fine_tune"]

# --- Lightning modules --------------------------------------------------------------------------------


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
    # NEURIPS25_SMOKE=1: a bounded run (2 epochs of 4 batches) that proves the configuration runs
    make_trainer(cap(epochs), limit_train_batches=4 if smoke() else None).fit(lm, train_dataloaders=loader)
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
    make_trainer(cap(epochs, 1), limit_train_batches=4 if smoke() else None).fit(ft, train_dataloaders=loader)
    return ft.student.eval()
