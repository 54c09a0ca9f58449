"""The orientation chapter's model: an MLP classifier on the bundled digits, trained with Lightning.

It is the smallest complete example of the book's conventions: a ``LightningModule`` with
``save_hyperparameters``, a ``DataModule`` from ``neurips25.data``, the quiet trainer from
``neurips25.runtime``, and a history of metrics kept on the module for plotting.
"""
from __future__ import annotations

import lightning as L
import torch
import torch.nn.functional as F

from .nn import MLP

__all__ = ["DigitsClassifier", "accuracy"]


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of rows whose arg-max logit equals the label."""
    if logits.ndim != 2 or y.ndim != 1 or logits.shape[0] != y.shape[0]:
        raise ValueError(f"logits must be (N, C) and y (N,), got {tuple(logits.shape)} and {tuple(y.shape)}")
    if logits.shape[0] == 0:
        raise ValueError("accuracy of an empty batch is undefined")
    return (logits.argmax(-1) == y).float().mean().item()


class DigitsClassifier(L.LightningModule):
    """Softmax classifier ``p(y | x) = softmax(f_θ(x))`` with ``f_θ`` an MLP, trained by cross-entropy."""

    def __init__(self, hidden: tuple[int, ...] = (64,), lr: float = 3e-3, weight_decay: float = 1e-4,
                 in_dim: int = 64, n_classes: int = 10):
        super().__init__()
        if lr <= 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        self.save_hyperparameters()
        self.net = MLP(in_dim, list(hidden), n_classes, activation="relu")
        self.history: dict[str, list[float]] = {"train_loss": [], "val_acc": []}
        self._epoch_losses: list[float] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self._epoch_losses.append(loss.item())
        return loss

    def on_train_epoch_end(self) -> None:
        self.history["train_loss"].append(sum(self._epoch_losses) / len(self._epoch_losses))
        self._epoch_losses.clear()

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self._val.append((self(x).argmax(-1) == y).float())

    def on_validation_epoch_start(self) -> None:
        self._val: list[torch.Tensor] = []

    def on_validation_epoch_end(self) -> None:
        if not self.trainer.sanity_checking:
            self.history["val_acc"].append(torch.cat(self._val).mean().item())

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)

    @torch.no_grad()
    def predict_proba(self, x: torch.Tensor) -> torch.Tensor:
        self.eval()
        return self(x.to(self.device)).softmax(-1).cpu()
