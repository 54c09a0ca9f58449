"""Tests for neurips25.dqp: gradients vs finite differences, baselines and solvers, validation."""
import numpy as np
import pytest
import scipy.sparse as sp
import torch

from neurips25.dqp import (
    DQPLayer,
    active_set,
    dqp_solve,
    planted_gradient,
    planted_qp,
    project,
    projection_constraints,
    sparsemax,
    sparsemax_jacobian,
)
from neurips25.dqp.baselines import kkt_solve

NAMES = ("P", "q", "A", "b", "C", "d")


def _grads(qp, solver="clarabel", seed=0):
    args = [qp[k].clone().requires_grad_(True) for k in NAMES]
    g = torch.randn(qp["q"].shape[0], generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    z = dqp_solve(*args, solver=solver).z
    return torch.autograd.grad((g * z).sum(), args), args, g


def test_planted_solution_duals_and_active_set():
    qp = planted_qp(8, 6, 2, 3, seed=1)
    r = dqp_solve(*(qp[k] for k in NAMES))
    torch.testing.assert_close(r.z, qp["z"], atol=1e-10, rtol=0)
    torch.testing.assert_close(r.lam, qp["lam"], atol=1e-9, rtol=0)
    torch.testing.assert_close(r.mu, qp["mu"], atol=1e-9, rtol=0)
    assert r.active.tolist() == qp["active"].tolist() and not r.lstsq


@pytest.mark.parametrize("with_eq", [True, False])
def test_gradcheck_finite_differences(with_eq):
    qp = planted_qp(5, 4, 1 if with_eq else 0, 2, seed=3)
    names = NAMES if with_eq else ("P", "q", "C", "d")
    args = [qp[k].clone().requires_grad_(True) for k in names]

    def f(*a):
        kw = dict(zip(names, a))
        return dqp_solve(**kw).z

    assert torch.autograd.gradcheck(f, args, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_matches_full_kkt_and_cvxpylayers():
    qp = planted_qp(8, 6, 2, 3, seed=0)
    gd, args, g = _grads(qp)
    z = kkt_solve(*args)
    gk = torch.autograd.grad((g * z).sum(), args)
    for a, b in zip(gd, gk):
        torch.testing.assert_close(a, b, atol=1e-8, rtol=1e-6)
    from neurips25.dqp.baselines import cvxpy_qp_layer

    layer = cvxpy_qp_layer(qp["P"].numpy(), 6, 2)
    (zc,) = layer(*args[1:], solver_args={"eps": 1e-10})
    gc = torch.autograd.grad((g * zc).sum(), args[1:])
    for a, b in zip(gd[1:], gc):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_solver_independence():
    qp = planted_qp(10, 8, 2, 4, seed=2)
    ref, _, _ = _grads(qp, "clarabel")
    for solver in ("osqp", "scs"):
        other, _, _ = _grads(qp, solver)
        for a, b in zip(ref, other):
            torch.testing.assert_close(a, b, atol=1e-9, rtol=1e-8)


def test_sparsemax_and_its_jacobian():
    x = torch.randn(12, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2
    z = project(x)
    torch.testing.assert_close(z, sparsemax(x), atol=1e-12, rtol=0)
    J = torch.autograd.functional.jacobian(lambda v: project(v), x)
    torch.testing.assert_close(J, sparsemax_jacobian(z), atol=1e-10, rtol=0)


def test_chain_projection_is_isotonic_regression():
    x = torch.tensor([3.0, 1.0, 2.0, 0.0, 5.0], dtype=torch.float64)
    z = project(x, "chain")
    torch.testing.assert_close(z, torch.tensor([1.5, 1.5, 1.5, 1.5, 5.0], dtype=torch.float64),
                               atol=1e-10, rtol=0)


def test_active_set_tolerance_and_refinement():
    # one inactive row with slack 1e-4: a tight eps leaves it out, a loose eps wrongly forces it active
    P = torch.eye(2, dtype=torch.float64)
    q = torch.zeros(2, dtype=torch.float64)
    C = torch.tensor([[1.0, 0.0], [0.0, -1.0]], dtype=torch.float64)
    d = torch.tensor([-1.0, 1e-4], dtype=torch.float64)  # z1 <= -1 active; -z2 <= 1e-4 inactive
    tight = dqp_solve(P, q, C=C, d=d, eps_active=1e-6)
    assert tight.active.tolist() == [True, False]
    forced = dqp_solve(P, q, C=C, d=d, eps_active=1e-3, max_refine=0)
    assert forced.active.tolist() == [True, True] and abs(float(forced.z[1]) + 1e-4) < 1e-12
    refined = dqp_solve(P, q, C=C, d=d, eps_active=1e-3)  # negative multiplier -> row dropped
    assert refined.active.tolist() == [True, False] and refined.refined == 1
    torch.testing.assert_close(refined.z, torch.tensor([-1.0, 0.0], dtype=torch.float64))
    assert active_set(C.numpy(), d.numpy(), np.array([-1.0, 0.0])).tolist() == [True, False]


def test_degenerate_vertex_uses_least_squares_flag():
    P = torch.eye(2, dtype=torch.float64)
    q = torch.ones(2, dtype=torch.float64)
    C = torch.tensor([[-1.0, 0.0], [0.0, -1.0], [1.0, 1.0]], dtype=torch.float64)
    d = torch.zeros(3, dtype=torch.float64)  # three active rows at z = 0 in R²
    r = dqp_solve(P, q, C=C, d=d, max_refine=0)
    assert bool(r.lstsq) and r.active.all()
    torch.testing.assert_close(r.z, torch.zeros(2, dtype=torch.float64), atol=1e-8, rtol=0)
    # refinement drops the row whose least-squares multiplier is negative: a valid, regular active set
    r = dqp_solve(P, q, C=C, d=d)
    assert not r.lstsq and r.active.tolist() == [True, True, False] and bool((r.mu >= 0).all())


def test_batched_and_sparse_agree_with_single_dense():
    qps = [planted_qp(6, 5, 1, 2, seed=s) for s in range(3)]
    batch = {k: torch.stack([qp[k] for qp in qps]) for k in NAMES}
    zb = dqp_solve(*(batch[k] for k in NAMES)).z
    for i, qp in enumerate(qps):
        torch.testing.assert_close(zb[i], dqp_solve(*(qp[k] for k in NAMES)).z)
    # shared (unbatched) P with batched q: the gradient of P sums over the batch
    P = qps[0]["P"].clone().requires_grad_(True)
    q = torch.stack([qp["q"] for qp in qps]).requires_grad_(True)
    dqp_solve(P, q, C=qps[0]["C"], d=qps[0]["d"]).z.sum().backward()
    g_sum = sum(torch.autograd.grad(dqp_solve(P, q[i].detach(), C=qps[0]["C"], d=qps[0]["d"]).z.sum(), P)[0]
                for i in range(3))
    torch.testing.assert_close(P.grad, g_sum)
    # scipy-sparse constants take the sparse path and give the same gradient in q, b, d
    x = torch.randn(30, generator=torch.Generator().manual_seed(1), dtype=torch.float64).requires_grad_(True)
    cons = projection_constraints("simplex", 30)
    dense = {k: (torch.tensor(v.toarray()) if sp.issparse(v) else v) for k, v in cons.items()}
    gs = torch.autograd.grad(dqp_solve(q=-x, **cons).z[:5].sum(), x)[0]
    gd = torch.autograd.grad(dqp_solve(q=-x, **dense).z[:5].sum(), x)[0]
    torch.testing.assert_close(gs, gd, atol=1e-12, rtol=0)


def test_layer_with_constants():
    cons = projection_constraints("chain", 6)
    layer = DQPLayer(**cons)
    x = torch.tensor([2.0, 1.0, 0.0, 3.0, 4.0, 1.0], dtype=torch.float64)
    z = layer(q=-x)
    assert torch.all(z[1:] - z[:-1] >= -1e-10) and layer.last is not None


def test_validation_errors():
    qp = planted_qp(4, 3, 1, 1, seed=0)
    P, q, A, b, C, d = (qp[k] for k in NAMES)
    with pytest.raises(ValueError, match="solver must be one of"):
        dqp_solve(P, q, solver="gurobi-please")
    with pytest.raises(ValueError, match="positive semidefinite"):
        dqp_solve(-P, q)
    with pytest.raises(ValueError, match="P must be"):
        dqp_solve(P[:3, :3], q)
    with pytest.raises(ValueError, match="C must have 4 columns"):
        dqp_solve(P, q, C=C[:, :3], d=d)
    with pytest.raises(ValueError, match="d must have 3 entries"):
        dqp_solve(P, q, C=C, d=d[:2])
    with pytest.raises(ValueError, match="A and b must be given together"):
        dqp_solve(P, q, A=A)
    with pytest.raises(ValueError, match="batch size"):
        dqp_solve(P, torch.stack([q, q]), C=torch.stack([C, C, C]), d=d)
    with pytest.raises(TypeError, match="q must be a torch.Tensor"):
        dqp_solve(P, q.numpy())
    with pytest.raises(ValueError, match="finite"):
        dqp_solve(P, q * float("nan"))
    one = torch.ones(1, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match="infeasible"):  # z <= -1 and -z <= -1
        dqp_solve(one, torch.zeros(1, dtype=torch.float64), C=torch.tensor([[1.0], [-1.0]], dtype=torch.float64),
                  d=torch.tensor([-1.0, -1.0], dtype=torch.float64))
    with pytest.raises(ValueError, match="kind must be"):
        projection_constraints("cube", 5)


def test_polygon_fit_smoke(any_device):
    from torch.utils.data import DataLoader, TensorDataset

    from neurips25.dqp.model import PolygonFit, polygon_normals, project_polygon
    from neurips25.runtime import make_trainer, seed_everything

    # the solve runs on the CPU (Clarabel); the layer's output and gradient follow the input's device
    d_dev = torch.tensor([1.0, 1.2, 0.8, 1.1, 0.9], dtype=torch.float64, device=any_device, requires_grad=True)
    x_dev = torch.tensor([[2.0, 0.5], [-1.0, 2.5]], dtype=torch.float64, device=any_device)
    z_dev, _ = project_polygon(x_dev, polygon_normals(5), d_dev)
    z_dev.sum().backward()
    assert z_dev.device.type == any_device.type and d_dev.grad.device.type == any_device.type

    seed_everything(0)
    rng = np.random.default_rng(0)
    d_true = torch.tensor(rng.uniform(0.6, 1.4, 5))
    ang = rng.uniform(0, 2 * np.pi, 20)
    x = torch.tensor(np.stack([2.5 * np.cos(ang), 2.5 * np.sin(ang)], 1))
    t, _ = project_polygon(x, polygon_normals(5), d_true)
    model = PolygonFit(m=5)
    make_trainer(25, accelerator=any_device.type).fit(model, DataLoader(TensorDataset(x, t.detach()), batch_size=20))
    assert model.history[-1] < 0.2 * model.history[0]


def test_benchmark_smoke():
    from neurips25.dqp.bench import benchmark

    out = benchmark("chain", [20], repeats=1, methods=("dqp", "full_kkt", "cvxpylayers"))
    assert set(out["time"]) == {"dqp", "full_kkt", "cvxpylayers"}
    assert all(v[20] > 0 for v in out["time"].values())
    assert out["grad_diff"]["dqp"][20] == 0 and out["grad_diff"]["full_kkt"][20] < 1e-6
    with pytest.raises(ValueError, match="methods must be among"):
        benchmark("chain", [20], methods=("optnet2",))


@pytest.mark.parametrize("method, tol", [("qpth", 1e-6), ("qplayer", 1e-4)])
def test_paper_baselines_agree_with_dqp(method, tol):
    # OptNet (qpth) and QPLayer (proxsuite) themselves; qpth is optional (it pins numpy<2)
    from neurips25.dqp import baselines

    if method == "qpth":
        pytest.importorskip("qpth")
    else:
        pytest.importorskip("proxsuite.torch.qplayer")
    solve = getattr(baselines, f"{method}_solve")
    for seed in range(3):
        qp = planted_qp(8, 6, 2, 3, seed=seed)
        gd, args, g = _grads(qp, seed=seed)
        z = solve(*args)
        torch.testing.assert_close(z.detach(), qp["z"], atol=1e-7, rtol=0)
        gb = torch.autograd.grad((g * z).sum(), args)
        err = max(float((a - b).abs().max() / (1 + b.abs().max())) for a, b in zip(gb, gd))
        assert err < tol, (method, seed, err)


def test_classic_set_solved_with_small_kkt_residuals():
    from neurips25.dqp.robust import classic_qps, run_dqp

    for name, qp in classic_qps().items():
        r = run_dqp(qp)
        assert r["primal"] < 1e-9 and r["dual"] < 1e-6 and r["compl"] < 1e-9 and r["mu_min"] >= 0, name
        assert r["finite"], name
        if qp["f_star"] is not None:
            assert r["f_err"] < 1e-9, (name, r["f"], qp["f_star"])
        if qp["x_star"] is not None:
            assert np.abs(r["z"] - qp["x_star"].numpy()).max() < 1e-8, name
        if name == "DEGEN":
            assert r["lstsq"]  # 6 active rows for 2 unknowns: least squares
        if name == "ILLCOND":
            assert r["refined"] > 3  # Clarabel's z is 5e-3 off; refinement repairs J


def test_degenerate_and_ill_conditioned_gradients_match_finite_differences():
    from neurips25.dqp.robust import classic_qps

    Q = classic_qps()
    # z is piecewise linear in q, so a large h is exact while J stays; it also keeps the
    # forward solves' round-off (1e-11 on ILLCOND) out of the difference quotient
    for name, h in (("DEGEN", 1e-4), ("ILLCOND", 1e-4), ("HS51", 1e-4)):
        qp = Q[name]
        has_eq, has_in = qp["A"].shape[0] > 0, qp["C"].shape[0] > 0
        q = qp["q"].clone().requires_grad_(True)
        kw = dict(A=qp["A"] if has_eq else None, b=qp["b"] if has_eq else None,
                  C=qp["C"] if has_in else None, d=qp["d"] if has_in else None)
        g = torch.linspace(-1, 1, len(q), dtype=torch.float64)
        z = dqp_solve(qp["P"], q, **kw).z
        (gq,) = torch.autograd.grad((g * z).sum(), q)
        fd = torch.zeros_like(gq)
        for i in range(len(q)):
            e = torch.zeros_like(gq)
            e[i] = h
            fd[i] = (g @ dqp_solve(qp["P"], qp["q"] + e, **kw).z
                     - g @ dqp_solve(qp["P"], qp["q"] - e, **kw).z) / (2 * h)
        assert float((gq - fd).abs().max() / (1 + fd.abs().max())) < 1e-5, name


def test_weakly_active_gradient_is_a_one_sided_derivative():
    from neurips25.dqp.robust import weakly_active_qp

    qp = weakly_active_qp()
    d = qp["d"].clone().requires_grad_(True)
    g = torch.linspace(-1, 1, len(qp["q"]), dtype=torch.float64)
    r = dqp_solve(qp["P"], qp["q"], C=qp["C"], d=d)
    (gd,) = torch.autograd.grad((g * r.z).sum(), d)
    # z is piecewise linear in d: one-sided differences with h = 1e-3 are exact (a much smaller h
    # would sit inside dQP's eps_active band, where violations below 1e-6 are tolerated)
    h, e = 1e-3, torch.zeros_like(qp["d"])
    e[0] = h
    f = lambda dd: float(g @ dqp_solve(qp["P"], qp["q"], C=qp["C"], d=dd).z)
    right, left = (f(qp["d"] + e) - f(qp["d"])) / h, (f(qp["d"]) - f(qp["d"] - e)) / h
    assert abs(right - left) > 1e-3  # a genuine kink
    assert min(abs(float(gd[0]) - right), abs(float(gd[0]) - left)) < 1e-5


@pytest.mark.parametrize("p", [2, 0])
def test_planted_gradient_is_the_exact_derivative(p):
    """The stress test's reference: no solver, no dQP backward; checked against finite differences
    of the planted active set's KKT solution (valid near the data: strict complementarity)."""
    qp = planted_qp(7, 6, p, 3, seed=4, margin=0.1)
    g = torch.randn(7, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    ref = dict(zip(NAMES, planted_gradient(qp, g)))
    J = qp["active"].numpy()

    def f(**kw):  # <g, z> from the KKT system of the planted active set, dense numpy solve
        d = {k: qp[k].numpy().copy() for k in NAMES} | kw
        G, h = np.vstack([d["A"], d["C"][J]]), np.r_[d["b"], d["d"][J]]
        K = np.block([[(d["P"] + d["P"].T) / 2, G.T], [G, np.zeros((len(h), len(h)))]])
        return float(g.numpy() @ np.linalg.solve(K, np.r_[-d["q"], h])[:7])

    rng, h = np.random.default_rng(0), 1e-6
    for k in NAMES:
        X = qp[k].numpy()
        if X.size == 0:
            continue
        for _ in range(4):  # central differences along random directions
            V = rng.standard_normal(X.shape)
            fd = (f(**{k: X + h * V}) - f(**{k: X - h * V})) / (2 * h)
            assert abs(fd - float((ref[k].numpy() * V).sum())) < 1e-7, k
    assert not ref["C"][~qp["active"]].any() and not ref["d"][~qp["active"]].any()
    # ... and dQP (exact forward) agrees with it
    gr, _, _ = _grads(qp, seed=5)
    for k, a in zip(NAMES, gr):
        torch.testing.assert_close(a, ref[k], atol=1e-10, rtol=0)
    with pytest.raises(ValueError, match="g must be a tensor of shape"):
        planted_gradient(qp, torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="qp must be a dict from planted_qp"):
        planted_gradient({"P": qp["P"]}, g)


def test_refinement_repairs_loose_solver_active_sets():
    from neurips25.dqp.robust import loose_solver_stress

    off = loose_solver_stress([1e-2], range(4), solver="osqp", max_refine=0)[1e-2]
    on = loose_solver_stress([1e-2], range(4), solver="osqp")[1e-2]
    assert off["right"] < 1 and off["worst_grad_err"] > 1e-3  # thresholding alone fails
    assert on["right"] == 1 and on["worst_grad_err"] < 1e-8 and on["refined"] > 0


def test_max_refine_validated_and_convergence_flag():
    qp = planted_qp(4, 3, 1, 1, seed=0)
    with pytest.raises(ValueError, match="max_refine must be a non-negative int"):
        dqp_solve(*(qp[k] for k in NAMES), max_refine=-1)
    P = torch.eye(2, dtype=torch.float64)
    C = torch.tensor([[1.0, 0.0], [0.0, -1.0]], dtype=torch.float64)
    d = torch.tensor([-1.0, 1e-4], dtype=torch.float64)
    r = dqp_solve(P, torch.zeros(2, dtype=torch.float64), C=C, d=d, eps_active=1e-3, max_refine=0)
    assert not r.converged  # the forced row has a negative multiplier and no step was allowed
    assert dqp_solve(P, torch.zeros(2, dtype=torch.float64), C=C, d=d, eps_active=1e-3).converged


def test_paper_protocol_scores_hard_set():
    from neurips25.dqp.baselines import have_qplayer
    from neurips25.dqp.robust import hard_qps, protocol_solves

    H = hard_qps(seed=0)
    assert set(H) == {"BIGBND", "RANKEQ", "LP", "SCALED", "BIGLP"}
    for name, qp in H.items():
        assert protocol_solves(qp, "dqp")["solved"], name
    if have_qplayer():  # large data magnitudes: ProxQP stalls (BIGLP) at the paper's settings
        assert not protocol_solves(H["BIGLP"], "qplayer")["solved"]


def test_protocol_inputs_are_checked():
    from neurips25.dqp.robust import classic_qps, hard_qps, protocol_solves, protocol_table

    with pytest.raises(ValueError, match="n must"):
        hard_qps(n=3)
    with pytest.raises(ValueError, match="seeds"):
        protocol_table([])
    with pytest.raises(ValueError, match="no inequalities"):
        protocol_solves(classic_qps()["HS51"], "dqp")
    with pytest.raises(ValueError, match="method"):
        protocol_solves(hard_qps()["LP"], "nope")


def test_highs_prints_no_banner_into_outputs():
    # HiGHS writes its copyright banner to the C-level stdout once per process: a fresh interpreter
    # shows whether dQP's first HiGHS solve keeps it out of a notebook's stored outputs
    import subprocess
    import sys

    code = ("import torch; from neurips25.dqp import dqp_solve; e = torch.eye(2, dtype=torch.float64); "
            "r = dqp_solve(e, torch.ones(2, dtype=torch.float64), C=e, d=torch.zeros(2, dtype=torch.float64), "
            "solver='highs'); print('z', r.z.tolist() if hasattr(r, 'z') else 'ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HiGHS" not in out and out.startswith("z "), out


def test_audit_input_checks():
    C, d = np.eye(2), np.zeros(2)
    with pytest.raises(ValueError, match="z must be finite"):
        active_set(C, d, np.array([np.nan, 0.0]))
    with pytest.raises(ValueError, match="d must be finite"):
        active_set(C, np.array([0.0, np.nan]), np.zeros(2))
    for eps in (float("nan"), float("inf"), True):
        with pytest.raises(ValueError, match="eps"):
            active_set(C, d, np.zeros(2), eps=eps)
    # a negative eps is legal: the refinement asks for the rows violated beyond |eps|
    assert active_set(C, d, np.array([1.0, 1e-9]), eps=-1e-6).tolist() == [True, False]
    for x in (torch.tensor([float("nan"), 1.0]), torch.zeros(0), torch.zeros(2, 0)):
        with pytest.raises(ValueError, match="x must"):
            sparsemax(x)
    with pytest.raises(TypeError, match="x must"):
        sparsemax(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="z must be finite"):
        sparsemax_jacobian(torch.tensor([float("nan"), 1.0]))
    for z in (torch.zeros(0), torch.zeros(3), torch.tensor([-0.5, 0.0])):
        with pytest.raises(ValueError, match="z must be a sparsemax output"):
            sparsemax_jacobian(z)
    with pytest.raises(ValueError, match="q must have at least one entry"):
        dqp_solve(torch.zeros(0, 0, dtype=torch.float64), torch.zeros(0, dtype=torch.float64))
    with pytest.raises(ValueError, match="q must be finite"):
        dqp_solve(torch.eye(2, dtype=torch.float64), torch.tensor([float("nan"), 0.0], dtype=torch.float64))
