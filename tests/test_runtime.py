import os
import re

import numpy as np
import pytest
import torch

from neurips25 import runtime


def test_seed_everything_repeats_random_draws():
    runtime.seed_everything(3)
    a = (torch.rand(3), np.random.rand(3))
    runtime.seed_everything(3)
    b = (torch.rand(3), np.random.rand(3))
    assert torch.equal(a[0], b[0]) and np.array_equal(a[1], b[1])


@pytest.mark.parametrize("bad, err", [(-1, ValueError), (2**32, ValueError), (1.5, TypeError), (True, TypeError)])
def test_seed_everything_rejects_bad_seeds(bad, err):
    with pytest.raises(err, match="seed"):
        runtime.seed_everything(bad)


def test_device_is_cpu_without_cuda():
    assert runtime.device("cpu").type == "cpu"
    if not torch.cuda.is_available():
        assert runtime.device().type == "cpu"
        with pytest.raises(ValueError, match="cuda"):
            runtime.device("cuda")
    with pytest.raises(ValueError, match="prefer"):
        runtime.device("tpu")


def test_scale_and_pick(monkeypatch):
    monkeypatch.delenv("NEURIPS25_SCALE", raising=False)
    assert runtime.scale() == "small"
    cfg = {"small": 1, "full": 2}
    assert runtime.pick(cfg) == 1
    monkeypatch.setenv("NEURIPS25_SCALE", "FULL")
    assert runtime.pick(cfg) == 2
    monkeypatch.setenv("NEURIPS25_SCALE", "huge")
    with pytest.raises(ValueError, match="NEURIPS25_SCALE"):
        runtime.scale()
    monkeypatch.delenv("NEURIPS25_SCALE")
    with pytest.raises(ValueError, match="missing"):
        runtime.pick({"small": 1})
    with pytest.raises(TypeError, match="mapping"):
        runtime.pick([1, 2])


def test_in_colab_false_here():
    assert runtime.in_colab() is False


def test_make_trainer_is_quiet_and_writes_nothing(tmp_path, capsys, monkeypatch):
    import lightning as L
    from torch.utils.data import DataLoader, TensorDataset

    monkeypatch.chdir(tmp_path)

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 1)

        def training_step(self, batch, _):
            x, y = batch
            return torch.nn.functional.mse_loss(self.lin(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    x = torch.randn(32, 2)
    loader = DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
    trainer = runtime.make_trainer(2)
    trainer.fit(Tiny(), loader)
    out = capsys.readouterr()
    assert "GPU available" not in out.out + out.err
    assert "LOCAL_RANK" not in out.out + out.err
    assert not (tmp_path / "lightning_logs").exists()
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="max_epochs"):
        runtime.make_trainer(0)


def test_single_thread_restores_the_thread_count_as_context_and_decorator():
    import torch

    from neurips25.runtime import single_thread

    outer = torch.get_num_threads()
    torch.set_num_threads(2)  # the Makefile exports one thread; start from two so a restore shows
    before = torch.get_num_threads()
    with single_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before

    @single_thread()
    def inside():
        return torch.get_num_threads()

    assert inside() == 1 and inside() == 1  # reusable: the decorator re-enters on every call
    assert torch.get_num_threads() == before == 2
    torch.set_num_threads(outer)


def test_smoke_caps_loop_counts(monkeypatch):
    from neurips25.runtime import cap, smoke

    monkeypatch.delenv("NEURIPS25_SMOKE", raising=False)
    assert not smoke() and cap(500) == 500
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    assert smoke() and cap(500) == 2 and cap(500, smoke_value=5) == 5 and cap(1) == 1
    monkeypatch.setenv("NEURIPS25_SMOKE", "yes")
    with pytest.raises(ValueError, match="NEURIPS25_SMOKE must be 0 or 1"):
        smoke()
    monkeypatch.setenv("NEURIPS25_SMOKE", "0")
    with pytest.raises(ValueError, match="n must be a non-negative int"):
        cap(-1)
    with pytest.raises(ValueError, match="smoke_value must be a positive int"):
        cap(3, smoke_value=0)


def test_check_int_accepts_ints_and_numpy_ints():
    from neurips25.runtime import check_int

    assert check_int(3, "n") == 3 and check_int(0, "n", low=0) == 0 and check_int(7, "n", low=7) == 7
    out = check_int(np.int64(4), "n")
    assert out == 4 and type(out) is int  # NumPy ints come back as Python ints


@pytest.mark.parametrize("value, low, message", [
    (0, 1, "n must be a positive int, got 0"),
    (-1, 0, "n must be a non-negative int, got -1"),
    (1, 2, "n must be an int >= 2, got 1"),
    (np.int64(2), 3, "n must be an int >= 3, got "),
    (True, 1, "n must be a positive int, got True"),  # a bool would silently count as 1
    (False, 0, "n must be a non-negative int, got False"),
    (2.0, 1, "n must be a positive int, got 2.0"),
    ("3", 1, "n must be a positive int, got '3'"),
    (None, 1, "n must be a positive int, got None"),
])
def test_check_int_rejects_with_a_message_naming_the_argument(value, low, message):
    from neurips25.runtime import check_int

    with pytest.raises(ValueError, match=re.escape(message)):
        check_int(value, "n", low)
