import numpy as np
import pytest

from neurips25.stats import bootstrap_means, loglog_slope, slope_ci, t_interval


def test_loglog_slope_recovers_power_law_per_row():
    x = np.array([10.0, 100.0, 1000.0])
    y = np.stack([3 * x ** -0.5, 0.2 * x ** -1.0])
    np.testing.assert_allclose(loglog_slope(x, y), [-0.5, -1.0])
    assert loglog_slope(x, y[0]) == pytest.approx(-0.5)
    assert np.isclose(loglog_slope(x, x ** 0.25), np.polyfit(np.log(x), 0.25 * np.log(x), 1)[0])


def test_loglog_slope_nonpositive_row_is_nan():
    s = loglog_slope([1, 2, 4], [[1.0, 0.5, 0.25], [1.0, -0.1, 0.2]])
    assert s[0] == pytest.approx(-1.0) and np.isnan(s[1])


def test_bootstrap_means_shapes_and_pairing():
    err = np.arange(12.0).reshape(3, 4)
    b = bootstrap_means(err, 50, seed=1)
    assert b.shape == (50, 3)
    # paired: every row resamples the same trial indices, so row offsets are preserved
    p = bootstrap_means(err, 50, seed=1, paired=True)
    np.testing.assert_allclose(p[:, 1] - p[:, 0], 4.0)
    np.testing.assert_allclose(bootstrap_means(err, 50, seed=1), b)  # seeded


def test_slope_ci_brackets_true_slope():
    rng = np.random.default_rng(0)
    x = np.array([100.0, 400.0, 1600.0, 6400.0])
    err = x[:, None] ** -0.5 * rng.lognormal(0, 0.1, (4, 30))
    lo, hi = slope_ci(x, err, n_boot=500)
    assert lo < -0.5 < hi and hi - lo < 0.1


@pytest.mark.parametrize("kw, match", [
    (dict(x=[1.0], err=np.ones((1, 3))), "x must be"),
    (dict(x=[1.0, -2.0], err=np.ones((2, 3))), "x must be"),
    (dict(x=[1.0, 2.0], err=np.ones((3, 3))), "last axis"),
    (dict(x=[1.0, 2.0], err=np.ones((2, 1))), ">= 2 trials"),
    (dict(x=[1.0, 2.0], err=np.ones((2, 3)), level=1.5), "level"),
    (dict(x=[1.0, 2.0], err=np.ones((2, 3)), n_boot=0), "n_boot"),
])
def test_input_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        slope_ci(**kw)


def test_t_interval_matches_the_textbook_formula_and_validates():
    from scipy import stats

    d = np.array([0.01, -0.02, 0.03, 0.0, 0.02])
    m, lo, hi = t_interval(d, level=0.90)
    half = stats.t.ppf(0.95, 4) * d.std(ddof=1) / np.sqrt(5)
    assert m == pytest.approx(d.mean()) and (lo, hi) == pytest.approx((m - half, m + half))
    assert t_interval(d)[1] < lo  # 95 % is wider than 90 %
    rng = np.random.default_rng(0)  # covers the true mean in about 95 % of repeats
    cover = np.mean([(lambda r: r[1] <= 0.5 <= r[2])(t_interval(rng.normal(0.5, 1, 10)))
                     for _ in range(2000)])
    assert 0.93 < cover < 0.97
    for bad, match in (([1.0], "d must be"), ([[1.0, 2.0]], "d must be"), ([1.0, np.nan], "d must be")):
        with pytest.raises(ValueError, match=match):
            t_interval(bad)
    with pytest.raises(ValueError, match="level"):
        t_interval(d, level=1.0)
