"""Tests for neurips25.model_collapse: closed forms, the loop's bookkeeping, collapse, validation."""
import math

import numpy as np
import pytest
import torch

from neurips25.model_collapse import (
    SCHEMES,
    CouplingFlow,
    FlowFamily,
    GaussianFamily,
    GaussianParams,
    NonSmoothFamily,
    _sample_closed_form,
    closed_form_iterations,
    closed_form_mle,
    gaussian_kl,
    gaussian_replications,
    gaussian_sq_error,
    iterate_mle,
    mean_error,
    neg_log_lik,
    nonsmooth_replications,
    optimized_iterations,
)


def _gauss_real(R=3, d=2):
    fam = GaussianFamily()
    star = GaussianParams(torch.zeros(R, d, dtype=torch.float64), torch.eye(d, dtype=torch.float64).expand(R, d, d))
    return fam, (lambda k, g: fam.sample(star, k, g))


def test_gaussian_mle_equals_numerical_maximisation():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, 2, generator=g, dtype=torch.float64) @ torch.tensor([[1.0, 0.3], [0.0, 0.5]],
                                                                             dtype=torch.float64) + 1.0
    fam = GaussianFamily()
    th = fam.fit(x)
    # maximise the log-likelihood numerically over (μ, Cholesky factor) from a poor start
    mu = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    A = torch.eye(2, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([mu, A], max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-14,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        L = torch.tril(A)
        loss = -torch.distributions.MultivariateNormal(mu, scale_tril=L).log_prob(x).mean()
        loss.backward()
        return loss

    opt.step(closure)
    L = torch.tril(A).detach()
    assert torch.allclose(mu.detach(), th.mean, atol=1e-6)
    assert torch.allclose(L @ L.T, th.cov, atol=1e-6)
    # the MLE divides by m (not m - 1)
    assert torch.allclose(th.cov, torch.cov(x.T, correction=0))


@pytest.mark.parametrize("scheme,size", [("accumulate", lambda t, n: (t + 1) * n),
                                         ("replace", lambda t, n: n), ("fresh", lambda t, n: 2 * n)])
def test_loop_training_set_sizes(scheme, size):
    fam, real = _gauss_real()
    n, T = 7, 6
    res = iterate_mle(fam, real, n, T, scheme, torch.Generator().manual_seed(0))
    assert len(res.thetas) == T
    # θ(t+1) is fit on (t+1)·n points under Algorithm 1
    assert res.sizes == [n] + [size(t, n) for t in range(1, T)]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_vectorised_runner_matches_generic_loop(scheme):
    R, d, n, T = 3, 2, 5, 8
    fam, real = _gauss_real(R, d)
    res = iterate_mle(fam, real, n, T, scheme, torch.Generator().manual_seed(3))
    fast = gaussian_replications(torch.zeros(d), torch.eye(d), n, T, R, scheme, seed=3)
    for t in range(T):
        assert torch.allclose(fast.mean[t], res.thetas[t].mean, atol=1e-9)
        assert torch.allclose(fast.cov[t], res.thetas[t].cov, atol=1e-9)


def test_replace_collapses_accumulate_does_not():
    kw = dict(n=10, T=300, R=200, seed=0)
    rep = gaussian_replications([0.0], [[1.0]], scheme="replace", **kw)
    acc = gaussian_replications([0.0], [[1.0]], scheme="accumulate", **kw)
    assert float(rep.cov[-1].median()) < 1e-4          # variance → 0
    assert 0.5 < float(acc.cov[-1].median()) < 1.5
    err = gaussian_sq_error(acc, [0.0], [[1.0]]).mean(-1)
    assert float(err[-1] / err[0]) < 2.0


def test_gaussian_kl_closed_form_1d():
    th = GaussianParams(torch.tensor([[0.5]], dtype=torch.float64), torch.tensor([[[2.0]]], dtype=torch.float64))
    kl = float(gaussian_kl(th, [0.0], [[1.0]]))
    assert kl == pytest.approx(0.5 * (1 / 2 + 0.25 / 2 - 1 + math.log(2)))
    sing = GaussianParams(torch.zeros(1, 2, dtype=torch.float64), torch.zeros(1, 2, 2, dtype=torch.float64))
    assert math.isinf(float(gaussian_kl(sing, torch.zeros(2), torch.eye(2))))


def test_nonsmooth_mle_matches_brute_force_grid():
    fam = NonSmoothFamily(n=5)
    rng = np.random.default_rng(1)
    cases = [rng.random(10), np.r_[rng.random(9), 1.37], np.r_[rng.random(8), 1.2, 1.7]]
    for x in cases:
        th = fam.fit(x)
        best = fam.log_lik(th, x)
        alphas = np.linspace(0, 0.499, 4000)
        betas = np.linspace(1e-4, 1 - 1e-4, 4000)
        grid = [np.stack([np.zeros_like(alphas), alphas, np.ones_like(alphas)], -1)]
        for mu in np.r_[1.0, x[x >= 1]]:
            grid.append(np.stack([np.ones_like(betas), betas, np.full_like(betas, mu)], -1))
        grid = np.concatenate(grid)
        ll = fam.log_lik(grid, np.broadcast_to(x, (len(grid), len(x))))
        assert best >= ll.max() - 1e-6          # no grid point beats the closed-form MLE
        assert best <= ll.max() + 0.05 * abs(ll.max()) + 0.05  # and the grid gets close to it


def test_nonsmooth_collapse_probability_independent_of_n():
    for n in (20, 200):
        tv1, tv2 = nonsmooth_replications(n, 4000, seed=0)
        assert (tv1 <= 4 / n).mean() > 0.95      # generation 1 is excellent (TV ≈ Exp(1)/n)
        assert 0.18 < (tv2 >= 0.5).mean() < 0.27  # generation 2 is far off w.p. ≈ 2/9


def test_nonsmooth_tv_to_truth_matches_numerical_integral():
    """TV(p_θ, U[0, 1]) = ½∫|p_θ − 1_[0,1]| on [0, 2], integrated on a fine grid, for both branches."""
    fam = NonSmoothFamily(n=3, K=2.0)
    x = (np.arange(400_000) + 0.5) / 200_000  # midpoints of a grid on [0, 2]
    for theta in ([0.0, 0.05, 1.0], [0.0, 0.2, 1.0], [1.0, 0.3, 1.2], [1.0, 0.6, 1.0]):
        th = np.array(theta)
        dens = np.exp(fam.log_lik(np.broadcast_to(th, (len(x), 3)), x[:, None]))
        tv = 0.5 * np.abs(dens - (x <= 1)).mean() * 2
        assert abs(fam.tv_to_truth(th) - tv) < 1e-3, (theta, fam.tv_to_truth(th), tv)


def test_nonsmooth_sample_support():
    fam = NonSmoothFamily(n=10)
    rng = np.random.default_rng(0)
    xh = fam.sample(np.array([0.0, 0.2, 1.0]), 5000, rng)
    assert ((xh >= 0) & (xh <= 0.6) | (xh >= 1) & (xh <= 2)).all()
    assert abs((xh >= 1).mean() - 0.2) < 0.03
    xg = fam.sample(np.array([1.0, 0.05, 1.5]), 5000, rng)
    assert ((xg <= 1) | (xg >= 1.5) & (xg <= 1.5 + math.exp(-80 * 0.05))).all()


def test_flow_smoke_training_improves_likelihood():
    torch.manual_seed(0)
    x = torch.randn(256, 2) * torch.tensor([1.0, 0.3]) + 1.0
    fam = FlowFamily(steps=60, batch_size=64, seed=0, hidden=16, n_layers=2)
    flow = fam.fit(x)
    untrained = type(flow)(dim=2, hidden=16, n_layers=2)
    with torch.no_grad():
        assert flow.log_prob(x).mean() > untrained.log_prob(x).mean()
    s = fam.sample(flow, 10, torch.Generator().manual_seed(0))
    assert s.shape == (10, 2) and torch.isfinite(s).all()


def test_flow_inverse_and_log_det():
    torch.manual_seed(0)
    f = CouplingFlow(dim=3, n_layers=3, hidden=8).double()
    for p in f.parameters():  # move away from the near-identity initialisation
        p.data.normal_(0, 0.5)
    z = torch.randn(4, 3, dtype=torch.float64)
    x = f.inverse(z)
    z2, logdet = f(x)
    assert torch.allclose(z2, z, atol=1e-10)
    for i in range(len(x)):
        J = torch.autograd.functional.jacobian(lambda v: f(v[None])[0][0], x[i])
        assert float(logdet[i].detach()) == pytest.approx(float(torch.linalg.slogdet(J.detach())[1]), abs=1e-8)


def test_invalid_inputs_raise():
    fam, real = _gauss_real()
    with pytest.raises(ValueError, match="n must be"):
        iterate_mle(fam, real, 1, 3)
    with pytest.raises(ValueError, match="scheme must be one of"):
        iterate_mle(fam, real, 5, 3, scheme="discard")
    with pytest.raises(ValueError, match="scheme must be one of"):
        gaussian_replications([0.0], [[1.0]], 5, 3, 2, scheme="mix")
    with pytest.raises(ValueError, match="n must be"):
        gaussian_replications([0.0], [[1.0]], 1, 3, 2)
    with pytest.raises(ValueError, match="T must be"):
        iterate_mle(fam, real, 5, 0)
    with pytest.raises(ValueError, match="x must have shape"):
        GaussianFamily().fit(torch.zeros(1, 2))
    with pytest.raises(ValueError, match="x must lie in"):
        NonSmoothFamily(5).fit(np.array([0.5, 2.5]))
    with pytest.raises(ValueError, match="n must be"):
        NonSmoothFamily(1)
    with pytest.raises(ValueError, match="cov_star must be positive semi-definite"):
        gaussian_replications([0.0], [[-1.0]], 5, 3, 2)
    with pytest.raises(ValueError, match="cov_star must be positive semi-definite"):
        gaussian_replications([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]], 5, 3, 2)
    with pytest.raises(ValueError, match="cov_star must be finite"):
        gaussian_replications([0.0], [[float("nan")]], 5, 3, 2)
    gaussian_replications([0.0, 0.0], [[1.0, 1.0], [1.0, 1.0]], 5, 3, 2)  # singular PSD is allowed
    with pytest.raises(ValueError, match="pool must have shape"):
        gaussian_replications([0.0], [[1.0]], 5, 3, 2, pool=torch.zeros(4, 2))


def test_nan_and_non_pd_inputs_are_rejected():
    nan = float("nan")
    with pytest.raises(ValueError, match="x must be finite"):
        GaussianFamily().fit(torch.tensor([[0.0], [nan], [1.0]]))
    with pytest.raises(ValueError, match=r"x must lie in \[0, 2\], no NaN"):
        NonSmoothFamily(5).fit([[0.5, nan]])  # NaN used to be dropped by the range test
    with pytest.raises(ValueError, match="mean_star must be finite"):
        gaussian_replications([nan], [[1.0]], 5, 3, 2)
    th = GaussianParams(torch.zeros(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="cov_star must be a symmetric positive definite"):
        gaussian_kl(th, torch.zeros(2), -torch.eye(2))  # used to give KL = -2
    with pytest.raises(ValueError, match="cov_star must be a symmetric positive definite"):
        gaussian_kl(th, torch.zeros(2), torch.tensor([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="mean_star must be finite"):
        gaussian_kl(th, torch.tensor([0.0, nan]), torch.eye(2))
    assert float(gaussian_kl(th, torch.zeros(2), torch.eye(2))) == pytest.approx(0.0, abs=1e-12)


def test_nonsmooth_generations_first_two_match_two_generation_runner():
    """With the same K, the T-generation runner's first two generations are nonsmooth_replications'."""
    from neurips25.model_collapse import nonsmooth_generations
    tv = nonsmooth_generations(30, 2, 500, seed=3, K=8.0 * 30)
    tv1, tv2 = nonsmooth_replications(30, 500, seed=3)
    assert np.array_equal(tv[0], tv1) and np.array_equal(tv[1], tv2)
    many = nonsmooth_generations(30, 8, 2000, seed=4)
    p_by = (many >= 0.5).any(0).mean()
    assert p_by > (many[1] >= 0.5).mean() + 0.1  # more generations, more collapse


def test_families_on_any_device(any_device):
    """The Gaussian family and the flow compute where their tensors live; a CPU generator gives the
    same draws on every device."""
    fam = GaussianFamily()
    x = torch.randn(3, 50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    theta = fam.fit(x.to(any_device))
    assert theta.mean.device.type == theta.cov.device.type == any_device.type
    s = fam.sample(theta, 7, torch.Generator().manual_seed(1))
    ref = fam.sample(fam.fit(x), 7, torch.Generator().manual_seed(1))
    assert s.device.type == any_device.type and torch.allclose(s.cpu(), ref, atol=1e-10)
    assert fam.sample(theta, 4).device.type == any_device.type   # default generator of the device
    torch.manual_seed(0)
    flow = CouplingFlow(dim=2, n_layers=2, hidden=8).double().to(any_device)
    z = flow.sample(5, torch.Generator().manual_seed(0))
    assert z.device.type == any_device.type
    assert torch.allclose(flow(flow.inverse(z))[0], z, atol=1e-10)
    assert torch.isfinite(flow.log_prob(z)).all()


# --- Appendix G: closed-form families ------------------------------------------------------------

def test_closed_form_mle_on_known_data():
    x = np.array([1.0, 2.0, 3.0, 6.0])
    np.testing.assert_allclose(closed_form_mle("gaussian", x), [3.0, math.sqrt(3.5)])  # (μ, σ), /N
    np.testing.assert_allclose(closed_form_mle("exponential", x), [4 / 12])
    u = np.array([0.5, 0.25, 0.125])  # Σ log x = −6 log 2
    np.testing.assert_allclose(closed_form_mle("beta", u), [3 / (6 * math.log(2))])
    # batched over leading axes: one MLE per row
    xb = np.stack([x, 2 * x])
    np.testing.assert_allclose(closed_form_mle("exponential", xb)[:, 0], [1 / 3, 1 / 6])
    assert closed_form_mle("gaussian", xb).shape == (2, 2)


@pytest.mark.parametrize("family, theta0", [("exponential", [2.0]), ("beta", [0.3])])
def test_closed_form_mle_maximises_the_likelihood(family, theta0):
    rng = np.random.default_rng(0)
    x = _sample_closed_form(family, np.array(theta0), 200, rng)
    th = closed_form_mle(family, x)[0]
    loglik = {"exponential": lambda t: len(x) * np.log(t) - t * x.sum(),
              "beta": lambda t: len(x) * np.log(t) + (t - 1) * np.log(x).sum()}[family]
    grid = th * np.linspace(0.8, 1.2, 401)
    assert abs(grid[np.argmax(loglik(grid))] / th - 1) < 1e-3
    assert abs(th / theta0[0] - 1) < 0.25  # consistent: 200 samples land near θ0


def test_closed_form_iterations_shapes_and_generation_one():
    th = closed_form_iterations("gaussian", [0.0, 1.0], n=10, T=7, R=5, seed=3)
    assert th.shape == (7, 5, 2) and (th[..., 1] > 0).all()
    # θ(1) is the MLE of X(0) ~ N(0, 1): the same stream drawn by hand
    x0 = np.random.default_rng(3).standard_normal((5, 10))
    np.testing.assert_allclose(th[0], closed_form_mle("gaussian", x0))
    assert closed_form_iterations("beta", 0.5, n=4, T=3, R=2).shape == (3, 2, 1)


def test_closed_form_iterations_accumulate_all_generations():
    """Generation 2 fits X(0) ∪ X(1): redo it from the raw samples."""
    rng = np.random.default_rng(1)
    x0 = rng.standard_exponential((6, 8))
    th1 = closed_form_mle("exponential", x0)
    x1 = rng.standard_exponential((6, 8)) / th1
    th = closed_form_iterations("exponential", [1.0], n=8, T=2, R=6, seed=1)
    np.testing.assert_allclose(th[1], closed_form_mle("exponential", np.concatenate([x0, x1], -1)))


def test_beta_iterations_are_scale_equivariant():
    """−log X ~ Exp(θ): θ(t)/θ0 has the same law for every θ0 (identical with the same stream)."""
    a = closed_form_iterations("beta", [1.0], n=20, T=50, R=10, seed=7)
    b = closed_form_iterations("beta", [0.1], n=20, T=50, R=10, seed=7)
    np.testing.assert_allclose(b / 0.1, a, rtol=1e-9)


@pytest.mark.parametrize("family, theta, x", [
    ("gaussian", [0.3, 1.7], np.array([1.0, -2.0, 0.5, 3.0])),
    ("exponential", [0.8], np.array([0.2, 1.5, 3.0])),
    ("beta", [0.4], np.array([0.5, 0.25, 0.9])),
])
def test_neg_log_lik_is_the_summed_density_and_its_gradient(family, theta, x):
    from scipy import stats
    from scipy.optimize import approx_fprime

    dist = {"gaussian": lambda t: stats.norm(t[0], t[1]), "exponential": lambda t: stats.expon(scale=1 / t[0]),
            "beta": lambda t: stats.beta(t[0], 1.0)}[family]
    s = {"gaussian": lambda: [x.sum(), (x * x).sum()], "exponential": lambda: [x.sum()],
         "beta": lambda: [np.log(x).sum()]}[family]()
    f, g = neg_log_lik(family, theta, len(x), s, grad=True)
    assert f == pytest.approx(-dist(theta).logpdf(x).sum(), rel=1e-10)
    np.testing.assert_allclose(g, approx_fprime(np.array(theta), lambda t: neg_log_lik(family, t, len(x), s),
                                                1e-7), rtol=1e-4)
    assert math.isnan(neg_log_lik("beta", [-0.5], 3, [-1.0]))  # outside Θ: what BFGS meets there


def test_optimized_iterations_match_the_exact_mle():
    """Bounded L-BFGS-B lands on the closed form; with or without the gradient; BFGS can leave Θ."""
    exact = closed_form_iterations("beta", [0.1], n=20, T=6, R=4, seed=2)
    opt = optimized_iterations("beta", [0.1], n=20, T=6, R=4, seed=2)
    assert opt.theta.shape == opt.exact.shape == (6, 4, 1) and opt.failed.shape == (6, 4)
    np.testing.assert_allclose(opt.theta, opt.exact, rtol=1e-3)
    np.testing.assert_allclose(opt.theta, exact, rtol=1e-3)  # the same random stream
    fd = optimized_iterations("beta", [0.1], n=20, T=6, R=4, seed=2, gradient=False)
    np.testing.assert_allclose(fd.theta, opt.theta, rtol=1e-4)
    g = optimized_iterations("gaussian", [0.0, 1.0], n=10, T=4, R=3, seed=0)
    np.testing.assert_allclose(g.theta, g.exact, atol=1e-4)
    free = optimized_iterations("beta", [0.1], n=20, T=3, R=20, seed=0, bounded=False)
    out = free.theta[0, :, 0] <= 0
    assert out.any()
    # a run that left the parameter space stays where it left, flagged as failed
    np.testing.assert_array_equal(free.theta[2, out], free.theta[0, out])
    assert free.failed[1:, out].all()


def test_optimized_validation():
    with pytest.raises(ValueError, match="family"):
        optimized_iterations("poisson", [1.0], n=5, T=2, R=2)
    with pytest.raises(TypeError, match="bounded must be a bool"):
        optimized_iterations("beta", [1.0], n=5, T=2, R=2, bounded="yes")
    with pytest.raises(TypeError, match="gradient must be a bool"):
        optimized_iterations("beta", [1.0], n=5, T=2, R=2, gradient=1)
    with pytest.raises(ValueError, match="theta and s must each hold 2"):
        neg_log_lik("gaussian", [1.0], 4, [1.0, 2.0])
    with pytest.raises(ValueError, match="m must be a positive int"):
        neg_log_lik("beta", [1.0], 0, [-1.0])


def test_closed_form_validation():
    with pytest.raises(ValueError, match="family"):
        closed_form_mle("poisson", [1.0, 2.0])
    with pytest.raises(ValueError, match="family"):
        closed_form_iterations("cauchy", [1.0], 10, 5, 2)
    with pytest.raises(ValueError, match="x must have at least 2"):
        closed_form_mle("gaussian", [1.0])
    with pytest.raises(ValueError, match="x must be positive"):
        closed_form_mle("exponential", [1.0, -2.0])
    with pytest.raises(ValueError, match=r"x must lie in \(0, 1\]"):
        closed_form_mle("beta", [0.5, 1.5])
    with pytest.raises(ValueError, match="all ones"):
        closed_form_mle("beta", [1.0, 1.0])
    with pytest.raises(ValueError, match="x must be finite"):
        closed_form_mle("gaussian", [1.0, np.nan])
    with pytest.raises(ValueError, match="theta0"):
        closed_form_iterations("gaussian", [0.0], 10, 5, 2)
    with pytest.raises(ValueError, match="theta0"):
        closed_form_iterations("gaussian", [0.0, -1.0], 10, 5, 2)
    with pytest.raises(ValueError, match="theta0"):
        closed_form_iterations("beta", [0.0], 10, 5, 2)
    with pytest.raises(ValueError, match="theta0"):
        closed_form_iterations("exponential", "one", 10, 5, 2)
    for kw, name in (({"n": 1}, "n"), ({"T": 0}, "T"), ({"R": 2.5}, "R")):
        args = {"n": 10, "T": 5, "R": 2, **kw}
        with pytest.raises(ValueError, match=name):
            closed_form_iterations("exponential", [1.0], **args)


def test_mean_error_is_the_run_mean_of_the_distance():
    theta = np.array([[[3.0, 4.0], [0.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]]])  # (T=2, R=2, d=2)
    np.testing.assert_allclose(mean_error(theta, [0.0, 0.0]), [2.5, 1.0])
    with pytest.raises(ValueError, match=r"theta must be \(T, R, 1\)"):
        mean_error(theta, [1.0])
