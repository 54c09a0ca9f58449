import math

import pytest
import torch

from neurips25.nn import MLP, SinusoidalTimeEmbedding, TimeConditionedMLP


def test_mlp_shapes_and_layers():
    m = MLP(3, [8, 8], 2, activation="tanh")
    assert m(torch.zeros(5, 3)).shape == (5, 2)
    assert sum(isinstance(l, torch.nn.Linear) for l in m) == 3
    assert isinstance(m[-1], torch.nn.Linear)  # no activation after the output layer
    assert MLP(3, [], 1)(torch.zeros(2, 3)).shape == (2, 1)


@pytest.mark.parametrize("kwargs, match", [
    (dict(in_dim=0, hidden=[4], out_dim=1), "in_dim"),
    (dict(in_dim=2, hidden=[0], out_dim=1), "hidden"),
    (dict(in_dim=2, hidden=[4], out_dim=1, activation="swish"), "activation"),
    (dict(in_dim=2, hidden=[4], out_dim=1, dropout=1.0), "dropout"),
])
def test_mlp_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MLP(**kwargs)


def test_mlp_rejects_wrong_width():
    with pytest.raises(ValueError, match="last dimension 3"):
        MLP(3, [4], 1)(torch.zeros(2, 4))


def test_time_embedding_values():
    emb = SinusoidalTimeEmbedding(8, scale=1.0)
    t = torch.tensor([0.0, 0.5])
    e = emb(t)
    assert e.shape == (2, 8)
    assert torch.allclose(e[0], torch.tensor([0.0] * 4 + [1.0] * 4))
    assert math.isclose(e[1, 0].item(), math.sin(0.5), rel_tol=1e-6)
    assert torch.allclose(emb(t[:, None]), e)
    with pytest.raises(ValueError, match="even"):
        SinusoidalTimeEmbedding(7)
    with pytest.raises(ValueError, match="shape"):
        emb(torch.zeros(2, 2))


def test_time_conditioned_mlp():
    v = TimeConditionedMLP(2, hidden=(16,), time_dim=8)
    x = torch.randn(4, 2)
    assert v(x, torch.rand(4)).shape == (4, 2)
    assert v(x, 0.3).shape == (4, 2)
    with pytest.raises(ValueError, match="one entry per row"):
        v(x, torch.rand(3))
    with pytest.raises(ValueError, match=r"\(B, 2\)"):
        v(torch.randn(4, 3), 0.3)
