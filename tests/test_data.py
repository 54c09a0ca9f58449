import pytest
import torch

from neurips25 import data


def test_digits_tensors_and_split():
    X, y = data.load_digits_tensors()
    assert X.shape == (1797, 64) and y.shape == (1797,)
    assert 0.0 <= X.min() and X.max() <= 1.0
    s = data.digits_split(0.2, 0.2, seed=0)
    assert sum(len(v[1]) for v in s.values()) == 1797
    assert set(s) == {"train", "val", "test"}
    s2 = data.digits_split(0.2, 0.2, seed=0)
    assert torch.equal(s["test"][1], s2["test"][1])
    with pytest.raises(ValueError, match="val_fraction"):
        data.digits_split(1.2)
    with pytest.raises(ValueError, match="< 1"):
        data.digits_split(0.6, 0.5)


def test_digits_datamodule():
    dm = data.DigitsDataModule(batch_size=32)
    xb, yb = next(iter(dm.train_dataloader()))
    assert xb.shape == (32, 64) and yb.dtype == torch.long
    with pytest.raises(ValueError, match="batch_size"):
        data.DigitsDataModule(batch_size=0)
    with pytest.raises(ValueError, match="split"):
        data.DigitsDataModule(val_fraction=0.0).val_dataloader()


@pytest.mark.parametrize("name", sorted(data.TOY_2D))
def test_toy_2d_shapes_and_seeds(name):
    a = data.toy_2d(name, 200, seed=1)
    assert a.shape == (200, 2) and torch.isfinite(a).all()
    assert a.abs().max() < 6
    assert torch.equal(a, data.toy_2d(name, 200, seed=1))
    assert not torch.equal(a, data.toy_2d(name, 200, seed=2))


def test_toy_2d_bad_inputs():
    with pytest.raises(ValueError, match="name"):
        data.toy_2d("spiral", 10)
    with pytest.raises(ValueError, match="n must"):
        data.toy_2d("moons", 0)


def test_sample_gaussian_moments_and_errors():
    S = data.random_spd(3, seed=0)
    m = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    x = data.sample_gaussian(m, S, 40000, seed=0)
    assert torch.allclose(x.mean(0), m, atol=0.05)
    assert torch.allclose(torch.cov(x.T), S, atol=0.05)
    eig = torch.linalg.eigvalsh(S)
    assert torch.allclose(eig, torch.linspace(0.5, 2.0, 3, dtype=torch.float64), atol=1e-10)
    with pytest.raises(ValueError, match="positive definite"):
        data.sample_gaussian(m, -S, 10)
    with pytest.raises(ValueError, match="cov must have shape"):
        data.sample_gaussian(m, torch.eye(2), 10)
    with pytest.raises(ValueError, match="symmetric"):
        data.sample_gaussian(m, S + torch.triu(torch.ones(3, 3), 1), 10)
    with pytest.raises(ValueError, match="eig_range"):
        data.random_spd(3, eig_range=(0.0, 1.0))
