"""Tests for neurips25.lambda_orth: the λ-orthogonality regularizer, adapters, metrics, backfilling."""
import math

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from neurips25.lambda_orth import (
    AffineMap,
    CompatibleAdapters,
    DownstreamAdapter,
    EmbeddingClassifier,
    OrthogonalMap,
    backfill_order,
    backfilling_curve,
    defect_pull,
    downstream_tradeoff,
    lambda_orth_reg,
    match_dims,
    normalize_by_mean_norm,
    orthogonal_procrustes,
    orthogonality_defect,
    retrieval_metrics,
    supcon_loss,
)
from neurips25.lambda_orth import gate_equilibrium as lo_gate
from neurips25.runtime import make_trainer, seed_everything


def _random_orthogonal(d, seed=0):
    g = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    return Q


# --- regularizer -------------------------------------------------------------------------------

def test_regularizer_is_zero_for_orthogonal_W():
    Q = _random_orthogonal(8)
    assert float(orthogonality_defect(Q)) < 1e-5
    for lam in (0.0, 1.0, math.inf):
        assert float(lambda_orth_reg(Q, lam)) < 1e-5


def test_defect_closed_form():
    # W = s I_d: ‖WWᵀ − I‖_F = |s² − 1| √d
    W = 2.0 * torch.eye(4, dtype=torch.float64)
    assert float(orthogonality_defect(W)) == pytest.approx(3.0 * 2.0, rel=1e-9)


def test_gate_switches_around_lambda():
    W = 2.0 * torch.eye(4, dtype=torch.float64)  # defect 6
    alpha = 10.0
    well_below = float(lambda_orth_reg(W, lam=5.0, alpha=alpha))  # defect > λ: penalty on
    at = float(lambda_orth_reg(W, lam=6.0, alpha=alpha))  # at λ: half the defect
    above = float(lambda_orth_reg(W, lam=7.0, alpha=alpha))  # defect < λ: penalty off
    assert well_below == pytest.approx(6.0, rel=1e-3)
    assert at == pytest.approx(3.0, rel=1e-6)
    assert above < 1e-3
    assert float(lambda_orth_reg(W, lam=math.inf)) == 0.0
    # λ = 0: soft orthogonality, the full defect
    assert float(lambda_orth_reg(W, lam=0.0)) == pytest.approx(6.0, rel=1e-6)


def test_regularizer_gradient_matches_finite_differences():
    g = torch.Generator().manual_seed(1)
    W = (torch.eye(3, dtype=torch.float64) + 0.3 * torch.randn(3, 3, generator=g, dtype=torch.float64))
    W.requires_grad_(True)
    d0 = float(orthogonality_defect(W.detach()))
    f = lambda M: lambda_orth_reg(M, lam=d0 - 0.05, alpha=5.0)
    (grad,) = torch.autograd.grad(f(W), W)
    eps = 1e-6
    num = torch.zeros_like(W)
    with torch.no_grad():
        for i in range(3):
            for j in range(3):
                E = torch.zeros_like(W)
                E[i, j] = eps
                num[i, j] = (f(W + E) - f(W - E)) / (2 * eps)
    assert torch.allclose(grad, num, atol=1e-6)


def test_regularizer_validation():
    with pytest.raises(ValueError, match="lam"):
        lambda_orth_reg(torch.eye(2), lam=-1.0)
    with pytest.raises(ValueError, match="alpha"):
        lambda_orth_reg(torch.eye(2), lam=1.0, alpha=0.0)
    with pytest.raises(ValueError, match="2-D"):
        orthogonality_defect(torch.ones(3))
    with pytest.raises(TypeError, match="torch.Tensor"):
        orthogonality_defect(np.eye(2))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_regularizer_rejects_non_finite_matrices(bad):
    W = torch.eye(3)
    W[1, 2] = bad
    with pytest.raises(ValueError, match="W must be finite"):
        lambda_orth_reg(W, lam=1.0)
    with pytest.raises(ValueError, match="W must be finite"):
        orthogonality_defect(W)


# --- adapters ----------------------------------------------------------------------------------

def test_orthogonal_adapter_preserves_distances():
    seed_everything(0)
    B = OrthogonalMap(6).double()
    with torch.no_grad():  # move it away from the identity
        B.linear.parametrizations.weight.original.copy_(torch.randn(6, 6, dtype=torch.float64))
    W = B.weight.detach()
    assert float(orthogonality_defect(W)) < 1e-10
    h = torch.randn(20, 6, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(torch.cdist(B(h), B(h)), torch.cdist(h, h), atol=1e-10)
    assert not torch.allclose(W, torch.eye(6, dtype=torch.float64))


def test_mismatched_dimensions_raise():
    with pytest.raises(ValueError, match="last dimension 4"):
        AffineMap(4, 4)(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="last dimension 4"):
        OrthogonalMap(4)(torch.zeros(2, 3))
    a = CompatibleAdapters(4, "orthogonal")
    with pytest.raises(ValueError, match="same shape"):
        a.losses(torch.zeros(3, 4), torch.zeros(3, 5), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="same dimension"):
        retrieval_metrics(torch.zeros(3, 4), torch.zeros(3, 5), [0, 1, 2], [0, 1, 2])
    with pytest.raises(ValueError, match="same items"):
        match_dims(torch.zeros(3, 4), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="backward"):
        CompatibleAdapters(4, "mlp")


def test_match_dims_truncates_higher_dimension():
    ho, hn = match_dims(torch.zeros(5, 8), torch.ones(5, 3))
    assert ho.shape == hn.shape == (5, 3)


def test_normalize_by_mean_norm():
    h = torch.randn(50, 4) * 7
    assert float(normalize_by_mean_norm(h).norm(dim=1).mean()) == pytest.approx(1.0, rel=1e-5)


def test_supcon_prefers_aligned_views():
    g = torch.Generator().manual_seed(0)
    y = torch.arange(4).repeat(5)
    centres = torch.randn(4, 8, generator=g) * 3
    a = centres[y] + 0.1 * torch.randn(20, 8, generator=g)
    good = centres[y] + 0.1 * torch.randn(20, 8, generator=g)
    bad = good[torch.randperm(20, generator=g)]
    assert supcon_loss(a, good, y) < supcon_loss(a, bad, y)
    with pytest.raises(ValueError, match="tau"):
        supcon_loss(a, good, y, tau=0.0)


# --- retrieval metrics vs brute force ----------------------------------------------------------

def _brute_force(q, g, yq, yg, exclude):
    top1, aps = [], []
    for i in range(len(q)):
        items = [j for j in range(len(g)) if not (exclude and j == i)]
        dist = {j: float(torch.dist(q[i], g[j])) for j in items}
        ranked = sorted(items, key=lambda j: (dist[j], j))
        rel = [int(yq[i] == yg[j]) for j in ranked]
        if sum(rel) == 0:
            continue
        top1.append(rel[0])
        hits, precs = 0, []
        for r, x in enumerate(rel, 1):
            if x:
                hits += 1
                precs.append(hits / r)
        aps.append(sum(precs) / sum(rel))
    return 100 * np.mean(top1), 100 * np.mean(aps)


@pytest.mark.parametrize("exclude", [False, True])
def test_retrieval_metrics_match_brute_force(exclude):
    g = torch.Generator().manual_seed(3)
    n = 12
    q = torch.randn(n, 3, generator=g, dtype=torch.float64)
    gal = torch.randn(n, 3, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (n,), generator=g)
    m = retrieval_metrics(q, gal, y, y, exclude_same_index=exclude, topk=(1, 3))
    top1, mAP = _brute_force(q, gal, y, y, exclude)
    assert m["top1"] == pytest.approx(top1)
    assert m["mAP"] == pytest.approx(mAP)


def test_retrieval_metrics_against_sklearn_average_precision():
    from sklearn.metrics import average_precision_score

    g = torch.Generator().manual_seed(4)
    q = torch.randn(1, 2, generator=g, dtype=torch.float64)
    gal = torch.randn(9, 2, generator=g, dtype=torch.float64)
    yg = torch.tensor([0, 1, 0, 1, 1, 0, 2, 0, 1])
    m = retrieval_metrics(q, gal, [1], yg)
    score = -torch.cdist(q, gal)[0].numpy()
    assert m["mAP"] == pytest.approx(100 * average_precision_score((yg == 1).numpy(), score))


def test_perfect_and_trivial_retrieval():
    y = torch.tensor([0, 0, 1, 1])
    h = torch.tensor([[0.0], [0.1], [5.0], [5.1]])
    m = retrieval_metrics(h, h, y, y, exclude_same_index=True)
    assert m == {"mAP": 100.0, "top1": 100.0}


# --- backfilling -------------------------------------------------------------------------------

def test_backfilling_curve_endpoints_and_order():
    g = torch.Generator().manual_seed(0)
    y = torch.arange(3).repeat(10)
    new = torch.eye(3, dtype=torch.float64)[y] * 4 + 0.3 * torch.randn(30, 3, generator=g, dtype=torch.float64)
    old = torch.randn(30, 3, generator=g, dtype=torch.float64)
    order = backfill_order(old, y, "distance")
    assert sorted(order.tolist()) == list(range(30))
    c = backfilling_curve(new, old, new, y, order, n_steps=5)
    assert c["values"][0] == pytest.approx(retrieval_metrics(new, old, y, y, True)["mAP"])
    assert c["values"][-1] == pytest.approx(retrieval_metrics(new, new, y, y, True)["mAP"])
    assert min(c["values"]) <= c["auc"] <= max(c["values"])
    # the first item of the distance order is the farthest from its class mean
    means = torch.stack([old[y == k].mean(0) for k in range(3)])
    dist = (old - means[y]).norm(dim=1)
    assert int(order[0]) == int(dist.argmax())
    with pytest.raises(ValueError, match="strategy"):
        backfill_order(old, y, "nearest")
    with pytest.raises(ValueError, match="permutation"):
        backfilling_curve(new, old, new, y, torch.zeros(30, dtype=torch.long))
    with pytest.raises(TypeError, match="y must hold integer class labels"):
        backfill_order(old, y.double(), "distance")
    with pytest.raises(ValueError, match=r"y must have shape \(30,\)"):
        backfill_order(old, y[:5], "distance")
    assert torch.equal(backfill_order(old, y.numpy(), "distance"), order)  # numpy int labels are fine


def test_backfill_order_in_the_forward_adapted_space():
    """The paper's order (Sec. 3.6): distance of F(h^k) to its class mean over the F-adapted gallery."""
    g = torch.Generator().manual_seed(1)
    y = torch.arange(4).repeat(12)
    old = torch.randn(48, 3, generator=g, dtype=torch.float64)
    W = torch.diag(torch.tensor([5.0, 1.0, 0.2], dtype=torch.float64))  # anisotropic: reorders items
    b = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)

    def F(h):
        return h @ W.T + b

    order = backfill_order(old, y, "distance", forward=F)
    Fh = F(old)
    means = torch.stack([Fh[y == k].mean(0) for k in range(4)])
    dist = (Fh - means[y]).norm(dim=1)
    assert torch.equal(order, torch.sort(dist, descending=True, stable=True).indices)
    assert torch.equal(order, backfill_order(Fh, y, "distance"))  # = ranking the adapted features
    assert not torch.equal(order, backfill_order(old, y, "distance"))  # differs from the raw old space
    # an isometry (rotation + shift) keeps every distance to the class mean: the same order as raw
    Q, _ = torch.linalg.qr(torch.randn(3, 3, generator=g, dtype=torch.float64))
    assert torch.equal(backfill_order(old, y, forward=lambda h: h @ Q.T + b), backfill_order(old, y))
    # a trained forward adapter is accepted as is (its forward_map), no gradient is kept
    ad = CompatibleAdapters(3, backward="affine", lam=1.0)
    with torch.no_grad():
        ref = backfill_order(ad.forward_map(old), y)
    assert torch.equal(backfill_order(old, y, forward=ad.forward_map), ref)
    # the random order does not look at the features
    assert torch.equal(backfill_order(old, y, "random", seed=3, forward=F), backfill_order(old, y, "random", seed=3))


def test_backfill_order_forward_is_validated():
    y = torch.arange(3).repeat(4)
    old = torch.randn(12, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    with pytest.raises(TypeError, match="forward must be a callable"):
        backfill_order(old, y, forward=torch.eye(3))
    with pytest.raises(TypeError, match=r"forward\(h_old\) must be a torch.Tensor"):
        backfill_order(old, y, forward=lambda h: h.numpy())
    with pytest.raises(ValueError, match=r"forward\(h_old\) must keep one row per gallery item \(12\)"):
        backfill_order(old, y, forward=lambda h: h[:5])
    with pytest.raises(ValueError, match=r"forward\(h_old\) must be finite"):
        backfill_order(old, y, forward=lambda h: h * float("nan"))
    with pytest.raises(ValueError, match=r"forward\(h_old\) must be a non-empty \(N, D\) matrix"):
        backfill_order(old, y, forward=lambda h: h.sum(1))


def test_non_finite_features_are_rejected():
    h = torch.randn(6, 3, dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    bad = h.clone()
    bad[2, 1] = float("nan")
    with pytest.raises(ValueError, match="query must be finite"):
        retrieval_metrics(bad, h, y, y)
    with pytest.raises(ValueError, match="gallery must be finite"):
        retrieval_metrics(h, h * float("inf"), y, y)
    with pytest.raises(ValueError, match="h_old must be finite"):
        backfill_order(bad, y)


# --- smoke training ----------------------------------------------------------------------------

def test_smoke_training_embedding_and_adapters():
    seed_everything(0)
    g = torch.Generator().manual_seed(0)
    y = torch.arange(3).repeat(20)
    X = torch.randn(3, 8, generator=g)[y] + 0.2 * torch.randn(60, 8, generator=g)
    emb = EmbeddingClassifier(8, (16,), 4, 3)
    make_trainer(3).fit(emb, DataLoader(TensorDataset(X, y), batch_size=20))
    h = emb.embed(X).detach()
    assert h.shape == (60, 4) and torch.isfinite(h).all()

    Q = _random_orthogonal(4, seed=2)
    h_old = h.double()
    h_new = h_old @ Q.T  # the new space is a rotation of the old one
    for kind, lam in (("orthogonal", 1.0), ("affine", 0.5)):
        seed_everything(0)
        a = CompatibleAdapters(4, kind, lam=lam, lr=5e-2)
        with torch.no_grad():
            before = float(a.losses(h_old, h_new, y)["L_B"])
        make_trainer(30).fit(a, DataLoader(TensorDataset(h_old, h_new, y), batch_size=60))
        after = a.losses(h_old, h_new, y)
        assert float(after["L_B"].detach()) < before
        assert torch.isfinite(after["loss"])
    assert a.defect() < 0.5 + 0.3  # the gated regularizer keeps the defect near λ or below


# --- downstream adaptation -----------------------------------------------------------------------

def test_downstream_adapter_validation():
    with pytest.raises(ValueError, match="lam"):
        DownstreamAdapter(4, lam=float("nan"))
    with pytest.raises(ValueError, match="dim"):
        DownstreamAdapter(0)
    with pytest.raises(ValueError, match="alpha, tau and lr"):
        DownstreamAdapter(4, tau=0.0)
    ad = DownstreamAdapter(4)
    assert ad.defect() == pytest.approx(0.0, abs=1e-12)          # starts at the identity
    h = torch.randn(6, 4, dtype=torch.float64)
    assert torch.allclose(ad(h), h)


def test_downstream_tradeoff_orthogonal_vs_free():
    """λ = 0 keeps B near the orthogonal group; λ = ∞ lets it distort: the defect grows and the
    downstream task (class signal in 4 dimensions, strong noise in the other 4) gains more."""
    g = torch.Generator().manual_seed(0)

    def task(n, classes, offset):
        y = torch.arange(n) % classes + offset
        centers = torch.randn(classes + offset, 8, generator=g, dtype=torch.float64)
        noise = torch.randn(n, 8, generator=g, dtype=torch.float64) * torch.tensor([0.3] * 4 + [3.0] * 4)
        return centers[y] * torch.tensor([1.0] * 4 + [0.0] * 4) + noise, y

    seed_everything(0)
    dn_tr, dn_te, up_te = task(120, 3, 3), task(60, 3, 3), task(60, 3, 0)
    out = downstream_tradeoff(dn_tr, dn_te, up_te, [0.0, math.inf], epochs=15, seed=0)
    r0, rinf = out["runs"][0.0], out["runs"][math.inf]
    # measured: λ = 0 defect 0.41, gain 1.8; λ = ∞ defect 1.84, gain 9.7
    assert r0["defect"] < 0.6 < 1.2 < rinf["defect"]
    assert rinf["gain"] > r0["gain"] + 5.0
    with pytest.raises(ValueError, match="same dimension"):
        downstream_tradeoff(dn_tr, (dn_te[0][:, :4], dn_te[1]), up_te, [0.0])


def test_adapters_and_retrieval_on_any_device(any_device):
    """Adapters, their losses and the retrieval metrics compute where the features live (labels may
    stay on the CPU), and agree with the CPU."""
    g = torch.Generator().manual_seed(0)
    h_old = torch.randn(40, 6, generator=g, dtype=torch.float64)
    h_new = torch.randn(40, 6, generator=g, dtype=torch.float64)
    y = torch.arange(40) % 4
    for backward in ("affine", "orthogonal", "identity"):
        seed_everything(0)
        ad = CompatibleAdapters(6, backward=backward, lam=1.0)
        ref = {k: float(v.detach()) for k, v in ad.losses(h_old, h_new, y).items()}
        ad = ad.to(any_device)
        out = ad.losses(h_old.to(any_device), h_new.to(any_device), y.to(any_device))
        assert out["loss"].device.type == any_device.type
        assert all(float(out[k].detach()) == pytest.approx(v, rel=1e-9, abs=1e-12) for k, v in ref.items())
        assert math.isfinite(ad.defect())
    cpu = retrieval_metrics(h_new, h_old, y, y, exclude_same_index=True, topk=(1, 5))
    dev = retrieval_metrics(h_new.to(any_device), h_old.to(any_device), y, y.numpy(),
                            exclude_same_index=True, topk=(1, 5))
    assert dev == pytest.approx(cpu, rel=1e-12)
    assert torch.equal(backfill_order(h_old.to(any_device), y).cpu(), backfill_order(h_old, y))
    W = torch.randn(6, 6, generator=g, dtype=torch.float64).to(any_device)
    assert orthogonality_defect(W).device.type == lambda_orth_reg(W, 1.0).device.type == any_device.type


# --- the gate law, the task's pull, the best rotation ---------------------------------------------

def test_gate_equilibrium_balances_the_gate_slope():
    for lam, alpha, pull in ((1.0, 10.0, 0.1), (2.0, 100.0, 0.05), (12.0, 10.0, 5.0)):
        d = lo_gate(lam, alpha, pull)
        s = 1.0 / (1.0 + math.exp(-alpha * (d - lam)))
        assert s + alpha * s * (1 - s) * d == pytest.approx(pull, rel=1e-6)
        assert d < lam + 2.0 / alpha
        # small pulls: the closed-form approximation λ − ln(αλ/g)/α
        if pull < 0.2:
            assert d == pytest.approx(lam - math.log(alpha * lam / pull) / alpha, abs=0.05)
    # a sharper gate or a stronger pull moves the defect towards λ
    assert lo_gate(1.0, 10.0, 0.1) < lo_gate(1.0, 100.0, 0.1) < 1.0
    assert lo_gate(1.0, 10.0, 0.1) < lo_gate(1.0, 10.0, 1.0)
    # past the gate's peak slope the defect breaks through; no pull keeps W orthogonal
    assert lo_gate(1.0, 10.0, 5.0) == math.inf
    assert lo_gate(1.0, 10.0, 0.0) == 0.0
    with pytest.raises(ValueError, match="alpha"):
        lo_gate(1.0, 0.0, 0.1)
    with pytest.raises(ValueError, match="lam"):
        lo_gate(math.inf, 10.0, 0.1)


def test_defect_pull_predicts_the_trained_defect(any_device):
    # a trained B_λ sits where its task's pull meets the gate: the gate law recovers its defect
    g = torch.Generator().manual_seed(0)
    h_new = torch.randn(256, 6, generator=g, dtype=torch.float64)
    h_old = h_new @ torch.diag(torch.tensor([1.6, 1.4, 1.0, 1.0, 0.7, 0.6], dtype=torch.float64))
    y = torch.arange(256) % 4
    seed_everything(0)
    ad = CompatibleAdapters(6, backward="affine", lam=0.5, alpha=10.0, w_c=0.0, lr=1e-2).to(any_device)
    opt = ad.configure_optimizers()
    h_old, h_new, y = h_old.to(any_device), h_new.to(any_device), y.to(any_device)
    for _ in range(600):
        loss = ad.losses(h_old, h_new, y)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    pull = defect_pull(ad, h_old, h_new, y)
    assert pull > 0  # the task wants more distortion than the gate allows
    assert ad.defect() < 0.5
    assert lo_gate(0.5, 10.0, pull) == pytest.approx(ad.defect(), abs=0.02)
    with pytest.raises(ValueError, match="affine"):
        defect_pull(CompatibleAdapters(6, backward="orthogonal"), h_old.cpu(), h_new.cpu(), y.cpu())


def test_orthogonal_procrustes_recovers_a_rotation():
    Q = _random_orthogonal(5, seed=3)
    h = torch.randn(100, 5, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    R = orthogonal_procrustes(h, h @ Q.T)
    assert torch.allclose(R, Q, atol=1e-10)
    with pytest.raises(ValueError, match="same shape"):
        orthogonal_procrustes(h, h[:, :4])


def test_digits_features_are_normalised_and_check_noise():
    from neurips25.lambda_orth import digits_features

    f = digits_features(0, 0.0, epochs=1)
    assert set(f) == {"ho_tr", "hn_tr", "y_tr", "ho_te", "hn_te", "y_te"}
    assert f["ho_tr"].shape == (len(f["y_tr"]), 32) and f["hn_te"].shape == (len(f["y_te"]), 32)
    for k in ("ho_tr", "hn_tr"):  # divided by the mean training norm
        assert f[k].norm(dim=1).mean().item() == pytest.approx(1.0, abs=1e-9)
    noisy = digits_features(0, 0.3, epochs=1)
    assert torch.equal(noisy["y_te"], f["y_te"]) and not torch.equal(noisy["ho_te"], f["ho_te"])
    with pytest.raises(ValueError, match="noise"):
        digits_features(0, -0.1, epochs=1)


def test_choose_lambda_respects_the_zero_shot_tolerance():
    from neurips25.lambda_orth_confirm import SELECT_LAMS, ZERO_SHOT_TOL, choose_lambda

    g = torch.Generator().manual_seed(0)
    y = torch.arange(200) % 5
    h = torch.randn(200, 8, generator=g, dtype=torch.float64) + 2.0 * torch.nn.functional.one_hot(y, 8)
    up_y = torch.arange(100) % 5
    up = torch.randn(100, 8, generator=g, dtype=torch.float64) + 2.0 * torch.nn.functional.one_hot(up_y + 3, 8)
    lam, val = choose_lambda(h, y, up, up_y, seed=0, epochs=2)
    assert lam in SELECT_LAMS and set(val) == {str(x) for x in SELECT_LAMS}
    ok = [x for x in SELECT_LAMS if abs(val[str(x)]["zero_shot"]) < ZERO_SHOT_TOL]
    if ok:  # the largest validation gain among the λ that keep zero-shot within the tolerance
        assert lam in ok and val[str(lam)]["gain"] == max(val[str(x)]["gain"] for x in ok)


def test_confirm_small_is_the_stored_study():
    from neurips25.lambda_orth_confirm import CONFIRM, N_RANDOM, SELECT_LAMS
    from neurips25.results import load_results

    payload = load_results("lambda_orth_confirm")
    cfg, small = payload["data"]["settings"], CONFIRM["small"]
    assert payload["slug"] == "lambda_orth_confirm" and cfg["seeds"] == small["seeds"] == list(range(3, 13))
    assert cfg["select_lams"] == list(SELECT_LAMS) and cfg["n_random"] == N_RANDOM
    for k in ("emb_dim", "emb_epochs", "adapter_epochs", "batch_size", "noise"):
        assert cfg[k] == small[k]
    runs = payload["data"]["runs"]
    assert sorted(map(int, runs)) == small["seeds"]
    for r in runs.values():
        assert r["downstream"]["lam_star"] in SELECT_LAMS and len(r["backfill"]["random_aucs"]) == N_RANDOM
        assert set(r["backfill"]) == {"distance_F_auc", "distance_old_auc", "random_aucs"}
        assert set(r["adapters"]["BF_mAP"]) == {"FCT", "B⊥", "B_λ, λ=0", "B_λ, λ=1", "B_λ, λ=2", "B_λ, λ=inf"}
