"""Tests of the GUITAR chapter module: t-SVD algebra, rank surrogates, graphs, metrics, solver."""
import itertools

import numpy as np
import pytest
import torch

from neurips25.guitar import (
    GUITAR,
    MFEAT_VIEW_NAMES,
    N_MFEAT,
    apmc,
    check_views,
    clustering_accuracy,
    clustering_scores,
    concat_kmeans,
    digit_indices,
    kmeans_repeats,
    knn_cosine_graph,
    load_mfeat,
    mfeat,
    mfeat_digits,
    mfeat_indices,
    missing_masks,
    multiview_digits,
    normalized_laplacian,
    purity,
    pvc,
    rank_surrogate,
    rank_surrogate_grad,
    run_method,
    sensitivity,
    shrink,
    surrogate_runs,
    t_product,
    t_svd,
    t_transpose,
    tensor_prox,
    tensor_rank_penalty,
)


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("n3", [1, 4, 5])
def test_t_svd_reconstructs_and_is_orthogonal(n3):
    T = _rand(6, 4, n3)
    U, S, V = t_svd(T)
    rec = t_product(t_product(U, S), t_transpose(V))
    assert torch.allclose(rec, T, atol=1e-10)
    eye = t_product(t_transpose(U), U)  # identity tensor: I in slice 0, zeros elsewhere
    assert torch.allclose(eye[:, :, 0], torch.eye(4, dtype=T.dtype), atol=1e-10)
    assert torch.allclose(eye[:, :, 1:], torch.zeros_like(eye[:, :, 1:]), atol=1e-10)


def test_t_product_matches_block_circulant():
    A, B = _rand(3, 2, 4, seed=1), _rand(2, 5, 4, seed=2)
    n3 = 4
    circ = torch.cat([torch.cat([A[:, :, (i - j) % n3] for j in range(n3)], 1) for i in range(n3)], 0)
    unfold = torch.cat([B[:, :, k] for k in range(n3)], 0)
    C = circ @ unfold
    expected = torch.stack([C[3 * k:3 * (k + 1)] for k in range(n3)], 2)
    assert torch.allclose(t_product(A, B), expected, atol=1e-10)


def test_nuclear_prox_is_singular_value_soft_thresholding():
    # With n3 = 1 the tensor is a matrix and the prox is ordinary SVT.
    M, tau = _rand(7, 5, seed=3), 0.8
    U, s, Vh = torch.linalg.svd(M, full_matrices=False)
    svt = U @ torch.diag((s - tau).clamp_min(0)) @ Vh
    G = tensor_prox(M[:, :, None], tau, "nuclear")
    assert torch.allclose(G[:, :, 0], svt, atol=1e-10)


def test_nuclear_tensor_prox_is_optimal():
    # The prox minimises tau ||G||_* + ||G - T||^2 / 2; random perturbations must not do better.
    T, tau = _rand(5, 4, 3, seed=4), 0.7
    obj = lambda G: tau * tensor_rank_penalty(G, "nuclear") + 0.5 * ((G - T) ** 2).sum()  # noqa: E731
    G = tensor_prox(T, tau, "nuclear")
    best = obj(G)
    for s in range(20):
        assert obj(G + 1e-3 * _rand(5, 4, 3, seed=100 + s)) >= best - 1e-12


def test_hp_ldelta_shrinks_large_singular_values_less_than_nuclear():
    sigma = torch.tensor([0.001, 0.05, 1.0, 3.0, 10.0], dtype=torch.float64)
    tau = 0.5
    nuc, hp = shrink(sigma, tau, "nuclear"), shrink(sigma, tau, "hp_ldelta", 1e-2)
    big = sigma >= 1
    assert (sigma[big] - hp[big] < sigma[big] - nuc[big]).all()
    assert torch.allclose(hp[sigma >= 3], sigma[sigma >= 3], atol=1e-2)  # large ones kept ~intact
    assert (hp[sigma < 0.1] == 0).all()  # small ones removed
    # and on a tensor: the top singular value of every Fourier slice survives better
    T = _rand(8, 4, 3, seed=5) * 3
    top = lambda G: torch.linalg.svdvals(torch.fft.rfft(G, dim=2).permute(2, 0, 1))[:, 0]  # noqa: E731
    assert (top(tensor_prox(T, 1.0, "hp_ldelta")) > top(tensor_prox(T, 1.0, "nuclear"))).all()


@pytest.mark.parametrize("kind", ["ldelta", "hp_ldelta"])
def test_surrogate_gradient_matches_finite_differences(kind):
    x = torch.linspace(0.05, 4, 30, dtype=torch.float64)
    h = 1e-6
    fd = (rank_surrogate(x + h, kind) - rank_surrogate(x - h, kind)) / (2 * h)
    assert torch.allclose(rank_surrogate_grad(x, kind), fd, rtol=1e-5, atol=1e-8)
    assert torch.allclose(rank_surrogate(torch.zeros(1, dtype=torch.float64), kind), torch.zeros(1, dtype=torch.float64))
    assert rank_surrogate(torch.tensor(50.0), kind) <= 1.01 + 1e-9


def test_tensor_rank_penalty_counts_conjugate_slices():
    T = _rand(4, 3, 6, seed=6)
    full = torch.linalg.svdvals(torch.fft.fft(T, dim=2).permute(2, 0, 1)).sum() / 6
    assert torch.allclose(tensor_rank_penalty(T, "nuclear"), full, atol=1e-9)


def test_knn_graph_and_laplacian_properties():
    Z = _rand(5, 40, seed=7)
    S = knn_cosine_graph(Z, 4)
    assert torch.equal(S, S.T) and (S >= 0).all() and (S.diagonal() == 0).all()
    assert ((S > 0).sum(1) >= 1).all()
    L = normalized_laplacian(S)
    assert torch.allclose(L, L.T)
    ev = torch.linalg.eigvalsh(L)
    assert ev.min() > -1e-10 and ev.max() < 2 + 1e-10  # spectrum of a normalised Laplacian in [0, 2]
    d = S.sum(1)
    assert torch.allclose(L @ d.sqrt(), torch.zeros_like(d), atol=1e-10)  # D^{1/2} 1 is in the kernel
    with pytest.raises(ValueError, match="k must be"):
        knn_cosine_graph(Z, 40)
    with pytest.raises(ValueError, match="symmetric"):
        normalized_laplacian(torch.triu(S))


def test_accuracy_matches_brute_force_permutations():
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 4, 60), rng.integers(0, 4, 60)
    brute = max(np.mean(np.array(perm)[p] == y) for perm in itertools.permutations(range(4)))
    assert clustering_accuracy(y, p) == pytest.approx(brute)
    assert clustering_accuracy(y, (y + 1) % 4) == 1.0  # relabelling does not matter
    assert purity(y, p) >= clustering_accuracy(y, p)
    with pytest.raises(ValueError, match="equal length"):
        clustering_accuracy(y, p[:-1])
    with pytest.raises(ValueError, match="y_true must not contain NaN"):
        clustering_accuracy(np.array([0, 1, np.nan, 1.0]), np.array([0, 1, 1, 0]))
    with pytest.raises(ValueError, match="y_pred must not contain NaN"):
        purity(np.array([0, 1, 1, 0]), np.array([0.0, np.inf, 1.0, 0.0]))
    assert clustering_accuracy(y.astype(float), p) == clustering_accuracy(y, p)  # finite floats are fine


def test_missing_masks_keep_a_view_per_sample():
    M = missing_masks(300, 4, 0.5, seed=1)
    assert M.shape == (300, 4) and M.any(1).all()
    assert 0.4 < 1 - M.mean() <= 0.5
    with pytest.raises(ValueError, match="rate"):
        missing_masks(10, 3, 1.0)


def test_mask_with_a_sample_missing_every_view_raises():
    views, _ = multiview_digits(50, seed=0)
    M = np.ones((50, 4), dtype=bool)
    M[[3, 7]] = False
    with pytest.raises(ValueError, match=r"samples \[3, 7\].*miss every view"):
        GUITAR(10).fit(views, M)
    with pytest.raises(TypeError, match="boolean"):
        check_views(views, M.astype(int))
    with pytest.raises(ValueError, match="shape"):
        check_views(views, M[:, :3])


def test_guitar_validates_its_parameters():
    views, _ = multiview_digits(30, seed=0)
    M = missing_masks(30, 4, 0.2, seed=0)
    with pytest.raises(ValueError, match="rank must be"):
        GUITAR(3, rank="logdet").fit(views, M)
    with pytest.raises(ValueError, match="noise must be"):
        GUITAR(3, noise="l1").fit(views, M)
    with pytest.raises(ValueError, match="n_clusters"):
        GUITAR(1).fit(views, M)
    for eta in (0.5, 1.0, float("inf"), float("nan")):  # Theorem 1 needs growing penalties
        with pytest.raises(ValueError, match="eta must be a finite number > 1"):
            GUITAR(3, eta=eta).fit(views, M)
    with pytest.raises(ValueError, match="max_iter must be a positive int"):
        GUITAR(3, max_iter=True).fit(views, M)
    for name in ("mu", "rho", "tol"):
        with pytest.raises(ValueError, match=f"{name} must be positive"):
            GUITAR(3, **{name: 0.0}).fit(views, M)


def _blobs(n_per=30, seed=0):
    """Three well-separated clusters seen through two views, a third of each view missing."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), n_per)
    centers = [np.eye(8)[:3] * 6, np.eye(6)[:3] * 6]
    views = [c[y] + 0.3 * rng.standard_normal((len(y), c.shape[1])) for c in centers]
    M = missing_masks(len(y), 2, 0.3, seed=seed)
    return views, M, y


def test_separable_toy_is_clustered_perfectly_and_converges(any_device):
    views, M, y = _blobs()
    g = GUITAR(3, max_iter=100, eta=1.3, seed=0, device=str(any_device))
    labels = g.fit_predict(views, M, dims=[8, 6])
    assert clustering_scores(y, labels) == {"ACC": 1.0, "NMI": 1.0, "purity": 1.0}
    h = g.history_
    assert h["residual_X"][-1] < 1e-4 and h["residual_Z"][-1] < 1e-4
    assert all(np.isfinite(h["objective"]))
    assert clustering_accuracy(y, apmc(views, M, 3)) == 1.0


def test_mfeat_views_are_six_finite_deterministic_feature_sets():
    views, y = mfeat_digits(40, seed=3)
    again, y2 = mfeat_digits(40, seed=3)
    assert len(views) == len(MFEAT_VIEW_NAMES) == 6
    assert [X.shape[1] for X in views] == [24, 58, 32, 16, 36, 6]
    assert all(X.shape[0] == 40 and np.isfinite(X).all() for X in views)
    assert all(np.array_equal(a, b) for a, b in zip(views, again)) and np.array_equal(y, y2)
    holes = views[5][:, 0]
    assert holes.min() >= 0 and (holes[y == 8] >= holes[y == 1].max()).mean() > 0.5  # 8s have holes, 1s none
    with pytest.raises(ValueError, match="n must be"):
        mfeat_digits(5)


def test_apmc_falls_back_to_near_complete_anchors():
    views, _ = mfeat_digits(120, seed=0)
    M = missing_masks(120, 6, 0.5, seed=0)
    assert M.all(1).sum() < 10  # too few complete samples to anchor 10 clusters
    labels = apmc(views, M, 10)
    assert labels.shape == (120,) and len(np.unique(labels)) == 10
    one_view = np.zeros((120, 6), dtype=bool)
    one_view[np.arange(120), np.arange(120) % 6] = True  # no sample seen twice: nothing can anchor
    with pytest.raises(ValueError, match="anchors"):
        apmc(views, one_view, 10)


def test_pvc_clusters_the_toy_and_validates_its_inputs():
    views, M, y = _blobs()
    assert clustering_accuracy(y, pvc(views, M, 3)) == 1.0
    for kw, name in (({"latent_per_cluster": 0}, "latent_per_cluster"), ({"max_iter": 1.5}, "max_iter"),
                     ({"lam": -1.0}, "lam")):
        with pytest.raises(ValueError, match=name):
            pvc(views, M, 3, **kw)


def test_apmc_anchor_fraction_subsamples_and_validates():
    views, M, y = _blobs()
    assert clustering_accuracy(y, apmc(views, M, 3, anchor_fraction=0.5)) == 1.0
    with pytest.raises(ValueError, match="anchor_fraction"):
        apmc(views, M, 3, anchor_fraction=0.0)
    for k in (0, True, 2.0):  # 0 used to run on with NumPy warnings (mean of an empty slice)
        with pytest.raises(ValueError, match="n_neighbors must be a positive int"):
            apmc(views, M, 3, n_neighbors=k)


def test_sensitivity_lays_each_setting_over_the_tuned_params_and_validates():
    rows = sensitivity({"APMC": {"n_neighbors": 5}}, seeds=(0,), grids={"APMC": [{"n_neighbors": 3}]}, n=60)
    assert len(rows) == 1 and rows[0]["method"] == "APMC" and rows[0]["n_neighbors"] == 3
    assert 0.0 <= rows[0]["ACC"] <= 1.0
    # a schedule setting replaces the run's max_iter / eta instead of reaching the model
    rows = sensitivity({}, seeds=(0,), grids={"GUITAR": [{"max_iter": 2, "eta": 2.0}]}, n=60)
    assert rows[0]["max_iter"] == 2 and 0.0 <= rows[0]["ACC"] <= 1.0
    with pytest.raises(TypeError, match="params"):
        sensitivity([("APMC", {})], grids={"APMC": [{}]})
    with pytest.raises(ValueError, match="grids"):
        sensitivity({}, grids={"k-means": [{}]})
    with pytest.raises(ValueError, match="rate"):
        sensitivity({}, grids={"APMC": [{}]}, rate=1.0)


def test_surrogate_runs_are_paired_and_kmeans_run_zero_is_the_fit():
    rows = surrogate_runs({}, seeds=(0,), runs=2, n=60, max_iter=3)
    assert [r["method"] for r in rows] == ["GUITAR", "GUITAR (ℓδ)"]
    assert all(len(r["kmeans_ACC"]) == 2 and r["ACC"] == np.mean(r["kmeans_ACC"]) for r in rows)
    # run 0 of the k-means repeats is the fitted model's own labels (the grid's number)
    s, model = run_method("GUITAR", 0.5, 0, n=60, max_iter=3, return_model=True)
    _, y = mfeat(60, 0)
    assert kmeans_repeats(model, y, 1, 0)[0] == s["ACC"] == rows[0]["kmeans_ACC"][0]
    with pytest.raises(TypeError, match="params"):
        surrogate_runs([], seeds=(0,))
    with pytest.raises(ValueError, match="methods"):
        surrogate_runs({}, methods=("PVC",))
    with pytest.raises(TypeError, match="model"):
        kmeans_repeats(GUITAR(3), y, 1, 0)
    with pytest.raises(ValueError, match="runs"):
        kmeans_repeats(model, y, 0, 0)
    with pytest.raises(ValueError, match="y must"):
        kmeans_repeats(model, y[:10], 1, 0)


def test_kmeans_runs_average_over_one_embedding_and_run_zero_is_one_run():
    from neurips25.guitar.baselines import baseline_embeddings

    for method in ("GUITAR", "Concat + k-means", "PVC", "APMC", "Best single view"):
        one = run_method(method, 0.5, 0, n=60, max_iter=3)
        five = run_method(method, 0.5, 0, n=60, max_iter=3, kmeans_runs=3)
        assert len(five["kmeans_ACC"]) == 3 and np.isclose(five["ACC"], np.mean(five["kmeans_ACC"]))
        if method != "Best single view":  # its best view is chosen by the mean over the runs
            assert five["kmeans_ACC"][0] == one["ACC"]
        assert "kmeans_ACC" not in one
    with pytest.raises(ValueError, match="kmeans_runs"):
        run_method("PVC", 0.5, 0, n=60, kmeans_runs=0)
    with pytest.raises(ValueError, match="method"):
        baseline_embeddings("GUITAR", [np.ones((4, 2))], np.ones((4, 1), bool), 2)


def test_perturb_is_a_tiny_relative_change_and_validates():
    a = run_method("GUITAR", 0.5, 0, n=60, max_iter=3)
    b = run_method("GUITAR", 0.5, 0, n=60, max_iter=3, perturb=1e-13)
    assert set(a) == set(b) and all(0.0 <= v <= 1.0 for v in b.values())
    with pytest.raises(ValueError, match="perturb"):
        run_method("GUITAR", 0.5, 0, n=60, perturb=0.1)
    with pytest.raises(ValueError, match="perturb"):
        run_method("PVC", 0.5, 0, n=60, perturb=1e-13)


def test_digit_indices_are_the_instance_subsample_and_validate():
    idx = digit_indices(50, 3)
    assert len(set(idx.tolist())) == 50 and (np.diff(idx) > 0).all() and idx.max() < 1797
    _, y = mfeat_digits(50, seed=3)
    from sklearn.datasets import load_digits

    assert (load_digits().target[idx] == y).all()
    with pytest.raises(ValueError, match="n must be"):
        digit_indices(1798, 0)


def test_packaged_mfeat_is_the_uci_data_set():
    views, y = load_mfeat()
    assert [X.shape for X in views] == [(2000, 76), (2000, 216), (2000, 64), (2000, 240), (2000, 47), (2000, 6)]
    assert N_MFEAT == 2000 and np.array_equal(np.bincount(y), np.full(10, 200))  # 200 digits per class
    assert (np.diff(y) >= 0).all()  # stored in class order, as UCI distributes it
    assert all(X.dtype == np.float64 and np.isfinite(X).all() and not X.flags.writeable for X in views)
    pix = views[MFEAT_VIEW_NAMES.index("pix")]
    assert set(np.unique(pix)) <= set(range(7))  # 2x3-window pixel counts: integers 0..6
    assert views[0][0, 0] == pytest.approx(0.065882, abs=1e-6)  # first value of mfeat-fou


def test_mfeat_instances_subsample_consistently_and_validate():
    views, y = mfeat(100, seed=4)
    idx = mfeat_indices(100, 4)
    full, y_all = load_mfeat()
    assert len(set(idx.tolist())) == 100 and (np.diff(idx) > 0).all()
    assert all(np.array_equal(X, F[idx]) for X, F in zip(views, full)) and np.array_equal(y, y_all[idx])
    assert np.array_equal(mfeat_indices(2000, 7), np.arange(2000))  # the whole data set, whatever the seed
    for bad in (5, 2001, 50.0):
        with pytest.raises(ValueError, match="n must be"):
            mfeat(bad)


def test_concat_fills_missing_views_with_their_mean_not_zeros():
    # View 0 holds the clusters (two directions 33 degrees apart); view 1 is noise around a constant and
    # half its samples are missing at random. Zero-filling splits the samples by whether they have view
    # 1 (ACC ~0.5 here): a missing view moves a sample by 1, farther than the clusters lie apart.
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 40)
    views = [np.array([[1, 0.3], [1, -0.3]])[y] + 0.02 * rng.standard_normal((80, 2)),
             5 + 0.1 * rng.standard_normal((80, 3))]
    M = np.ones((80, 2), dtype=bool)
    M[rng.choice(80, 40, replace=False), 1] = False
    assert clustering_accuracy(y, concat_kmeans(views, M, 2)) == 1.0


def test_stored_mfeat_lambda_study_is_the_papers_setting_on_fresh_seeds():
    from neurips25.guitar.experiments import BASELINES, MFEAT_LAMBDAS, SWEEP
    from neurips25.results import load_results

    data = load_results("guitar")["data"]
    study, rows = data["mfeat_lambdas"], data["mfeat_lambda_rows"]
    # lam3 inside the paper's Mfeat range {1e-3, 1e-2, 1e-1}; fresh seeds disjoint from every other use
    assert study["lam3"] == MFEAT_LAMBDAS["lam3"] == 0.1
    used = set(SWEEP["small"]["seeds"]) | set(SWEEP["small"]["confirm_seeds"]) | {100, 101}
    assert not set(study["fresh"]) & used and set(study["fresh"]) <= set(study["seeds"])
    assert {(r["method"], r["rate"], r["seed"]) for r in rows} == {
        (m, rate, s) for m in ("GUITAR", *BASELINES) for rate in (0.1, 0.3, 0.5) for s in study["seeds"]}
    # the baselines do not depend on lam3: on the grid's seeds they repeat the grid's rows
    grid = {(r["method"], r["rate"], r["seed"]): r["ACC"] for r in data["rows"]}
    assert all(r["ACC"] == grid[r["method"], r["rate"], r["seed"]] for r in rows
               if r["method"] != "GUITAR" and r["seed"] in SWEEP["small"]["seeds"])
