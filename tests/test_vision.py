"""The shared tiny ViT (neurips25.vision): shapes, validation, the reducer hook, token bookkeeping."""
import pytest
import torch

from neurips25.vision import ReducerPlan, TinyViT, TokenState, ViTClassifier, random_shift


def test_token_state_initial_is_identity():
    s = TokenState.initial(3, 16)
    assert s.src.shape == (3, 17, 17) and torch.equal(s.src[0], torch.eye(17))
    assert torch.equal(s.size, torch.ones(3, 17)) and bool(s.valid.all()) and not bool(s.is_dc.any())


@pytest.mark.parametrize("patch, n_tokens", [(2, 17), (1, 65), (4, 5)])
def test_forward_shapes_and_flat_input(patch, n_tokens):
    torch.manual_seed(0)
    m = TinyViT(patch_size=patch, depth=2).eval()
    x = torch.rand(4, 1, 8, 8)
    logits, traces = m(x, trace=True)
    assert logits.shape == (4, 10) and len(traces) == 2
    assert traces[0].attn.shape == (4, 4, n_tokens, n_tokens)
    assert torch.allclose(m(x.reshape(4, 64)), logits)


@pytest.mark.parametrize("kwargs, match", [
    (dict(patch_size=3), "patch_size must divide"),
    (dict(dim=30, heads=4), "heads must divide"),
    (dict(depth=0), "depth must be a positive int"),
    (dict(num_classes=2.0), "num_classes must be a positive int"),
])
def test_constructor_validates(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TinyViT(**kwargs)


def test_forward_validates_images_and_plan():
    m = TinyViT(depth=2)
    with pytest.raises(ValueError, match="images must have shape"):
        m(torch.rand(2, 1, 7, 7))

    class Plan:
        layers, proportional, reweight = (5,), False, False

        def make_generator(self):
            return None

        def reduce(self, model, x, state, attn, keys, generator):
            return x, state

    assert isinstance(Plan(), ReducerPlan)
    with pytest.raises(ValueError, match="plan.layers must be < depth"):
        m(torch.rand(2, 64), plan=Plan())


class _KeepFirst:
    """A minimal reducer: keep CLS and the first ``k`` tokens after the attention of block 0."""

    layers, proportional, reweight = (0,), False, False

    def __init__(self, k):
        self.k = k

    def make_generator(self):
        return None

    def reduce(self, model, x, state, attn, keys, generator):
        keep = slice(0, 1 + self.k)
        return x[:, keep], TokenState(state.src[:, keep], state.is_dc[:, keep])


def test_reducer_hook_runs_after_the_attention_of_its_block():
    torch.manual_seed(0)
    m = TinyViT(depth=3).eval()
    logits, traces = m(torch.rand(2, 64), plan=_KeepFirst(5), trace=True)
    assert logits.shape == (2, 10)
    assert traces[0].x_attn.shape[1] == 17 and traces[0].x_out.shape[1] == 6
    assert traces[1].attn.shape[-1] == 6 and traces[2].state_out.src.shape == (2, 6, 17)


def test_reweight_is_identity_at_zero_omegas_and_masks_empty_tokens():
    torch.manual_seed(0)
    m = TinyViT(depth=1).eval()
    x = m.embed(torch.rand(2, 64))
    state = TokenState.initial(2, 16)
    attn = m.blocks[0].attn
    assert torch.allclose(attn(x, state)[0], attn(x, state, reweight=True)[0], atol=1e-6)
    state.src[:, 3] = 0.0                                   # token 3 stands for nothing
    _, a, _ = attn(x, state)
    assert torch.all(a[..., 3] == 0) and torch.allclose(a.sum(-1), torch.ones_like(a.sum(-1)))


def test_random_shift_keeps_pixels_and_validates():
    torch.manual_seed(0)
    x = torch.zeros(8, 1, 8, 8)
    x[:, :, 3:5, 3:5] = 1.0
    y = random_shift(x, 1)
    assert y.shape == x.shape and torch.all(y.sum((1, 2, 3)) == 4)   # a 2x2 blob 1 px from the edge
    assert torch.equal(random_shift(x, 0), x)
    with pytest.raises(ValueError, match="shift must be"):
        random_shift(x, -1)
    with pytest.raises(ValueError, match="shift must be"):
        ViTClassifier(shift=-1)


def test_classifier_builds_the_requested_vit():
    lm = ViTClassifier(dim=16, depth=2, heads=2, patch_size=1, num_classes=5)
    assert lm.model.n_patches == 64 and lm.model.head.out_features == 5
    assert lm(torch.rand(3, 64)).shape == (3, 5)
