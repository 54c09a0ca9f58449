import pytest
import torch

from neurips25.data import DigitsDataModule
from neurips25.getting_started import DigitsClassifier, accuracy
from neurips25.runtime import make_trainer, seed_everything


def test_accuracy_metric():
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, 1.0]])
    assert accuracy(logits, torch.tensor([0, 1, 1])) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="logits"):
        accuracy(logits, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="empty"):
        accuracy(torch.zeros(0, 2), torch.zeros(0, dtype=torch.long))


def test_classifier_validates_lr():
    with pytest.raises(ValueError, match="lr"):
        DigitsClassifier(lr=0)


def test_smoke_training_learns(any_device):
    seed_everything(0)
    dm = DigitsDataModule(batch_size=64)
    model = DigitsClassifier(hidden=(32,))
    make_trainer(3, accelerator=any_device.type).fit(model, datamodule=dm)
    X, y = dm.splits["test"]
    assert accuracy(model.predict_proba(X).log(), y) > 0.8
    assert len(model.history["train_loss"]) == 3
    assert model.history["train_loss"][-1] < model.history["train_loss"][0]
