"""Pollux's faster paths (issue 31) give exactly, bit for bit, what the direct computation gives:
the interpolation over only the simplices near a point, the looked-up repeat fits and the
goodput from cached candidate batches and rates."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.models.goodput import profile
from dlsched.schedulers import pollux_model
from dlsched.schedulers.pollux_model import JobGoodputModel, fit_perf_params, predict_step_s

Array = npt.NDArray[np.float64]


def _every_simplex(app: str, x: Array) -> Array:
    """The interpolation computed on every simplex (what `_Linear3D` did before)."""
    f = profile(app)._nd
    lam = np.einsum("sij,sj->si", f._rows, x - f._origin)
    bary = np.concatenate([1.0 - lam.sum(axis=1, keepdims=True), lam], axis=1)
    inside = np.flatnonzero(np.all(bary >= -1e-9, axis=1))
    if inside.size == 0:
        return np.full(f._values.shape[2], np.nan)
    return np.asarray(bary[inside[0]] @ f._values[inside[0]])


@pytest.mark.parametrize("app", ["ncf", "bert"])
def test_interpolation_on_the_simulators_grid_is_the_full_scans(app: str) -> None:
    prof = profile(app)
    points = [*prof.nd_points[::4]]  # vertices: on many simplices at once
    for replicas in (1, 2, 3, 5, 8, 12, 16, 24, 33, 64):
        for cfg in prof.candidate_configs(replicas)[::7]:
            points += [np.array([n, replicas, cfg.atomic_bsz], float) for n in (1, 2, 3, 16)]
    for x in points:
        assert prof._nd(x).tobytes() == _every_simplex(app, x).tobytes(), x


@settings(max_examples=100, deadline=None)
@given(
    app=st.sampled_from(["cifar10", "imagenet", "yolov3"]),
    i=st.integers(0, 10**6),
    j=st.integers(0, 10**6),
    w=st.floats(-0.2, 1.2),
    jitter=st.tuples(*[st.floats(-1.0, 1.0)] * 3),
)
def test_interpolation_anywhere_is_the_full_scans(
    app: str, i: int, j: int, w: float, jitter: tuple[float, float, float]
) -> None:
    """On an edge between two profiled points (shared by several simplices), beside it, and
    outside the hull (NaN in both)."""
    pts = profile(app).nd_points
    edge = w * pts[i % len(pts)] + (1 - w) * pts[j % len(pts)]
    for x in (edge, edge + np.array(jitter) * (0.5, 2.0, 8.0)):
        assert profile(app)._nd(x).tobytes() == _every_simplex(app, x).tobytes()


def _measurements() -> tuple[Array, ...]:
    nodes = np.array([1.0, 1.0, 2.0])
    replicas = np.array([1.0, 4.0, 8.0])
    bsz = np.array([32.0, 64.0, 64.0])
    step = np.array([0.05, 0.12, 0.2])
    return nodes, replicas, bsz, step - np.array([0.0, 0.02, 0.06]), step


def test_a_repeated_fit_is_the_fit_and_not_shared() -> None:
    pollux_model._FITS.clear()
    args = _measurements()
    first = fit_perf_params(*args)
    first[:] = -1.0  # a caller's change does not reach the kept fit
    again = fit_perf_params(*args)
    assert again.tobytes() == pollux_model._fit_perf_params(*args, None).tobytes()
    restarted = fit_perf_params(*args, start=again)
    assert restarted.tobytes() == pollux_model._fit_perf_params(*args, again).tobytes()
    assert len(pollux_model._FITS) == 2


def _direct_best_goodput(m: JobGoodputModel, nodes: int, replicas: int) -> tuple[float, int, int]:
    """`JobGoodputModel.best_goodput` as it computed everything per call before."""
    assert m.params is not None
    low = max(m.init_bsz, m.min_local * replicas)
    if low > m.max_bsz:
        return 0.0, 0, 0
    local = np.geomspace(low, m.max_bsz, 50) / replicas
    accum = np.ceil(local / m.max_local - 1e-8) - 1
    if replicas == 1:
        accum = np.where(local > m.init_bsz + 1e-8, np.maximum(accum, 1), accum)
    atomic = np.ceil(local / (accum + 1) - 1e-8)
    ok = (atomic >= m.min_local) & (atomic <= m.max_local)
    true_batch = replicas * atomic * (accum + 1)
    full = np.full_like
    step = predict_step_s(m.params, full(atomic, nodes), full(atomic, replicas), atomic, accum)
    goodput = np.where(ok, true_batch / step * m.efficiency(true_batch), 0.0)
    i = int(np.argmax(goodput))
    return float(goodput[i]), int(atomic[i]), int(accum[i])


@settings(max_examples=30, deadline=None)
@given(
    app=st.sampled_from(["cifar10", "bert", "deepspeech2", "yolov3"]),
    grads=st.lists(st.tuples(st.floats(0.0, 10.0), st.floats(0.0, 100.0)), min_size=1, max_size=3),
)
def test_best_goodput_from_cached_grids_and_rates_is_the_direct_one(
    app: str, grads: list[tuple[float, float]]
) -> None:
    prof = profile(app)
    m = JobGoodputModel(prof.init_bsz, prof.max_bsz, prof.min_local_bsz, prof.max_local_bsz)
    for placement in ((1,), (4,), (4, 4)):
        step, sync = prof.step_sync_s(placement, float(prof.min_local_bsz))
        m.observe(len(placement), sum(placement), prof.min_local_bsz, step, sync)
        for sqr, var in grads:  # new gradient statistics keep the rates, a refit drops them
            m.set_grad(sqr, var)
            sizes = [(1, 1), (1, 2), (1, 4), (2, 8), (4, 16), (16, 64)]
            goodputs = m.best_goodputs(sizes)  # together, then one at a time (from the memo)
            for (nodes, replicas), goodput in zip(sizes, goodputs, strict=True):
                direct = _direct_best_goodput(m, nodes, replicas)
                assert goodput == direct[0]
                assert m.best_goodput(nodes, replicas) == direct
            m._memo.clear()  # one at a time, then together
            for nodes, replicas in sizes:
                assert m.best_goodput(nodes, replicas) == _direct_best_goodput(m, nodes, replicas)


def _direct_objective(
    p: Array, x: tuple[Array, ...], acc_obs: Array, step_obs: Array
) -> tuple[float, Array]:
    """The fitting loss and gradient as `_objective` computed them before `_Loss`."""
    nodes, replicas, bsz = x
    n = len(bsz)
    rounds = np.maximum(replicas - 2, 1e-8)
    inter, intra = nodes > 1, (nodes <= 1) & (replicas > 1)
    accum = p[0] + p[1] * bsz
    net = np.where(inter, p[2] + p[3] * rounds, np.where(intra, p[4] + p[5] * rounds, 1e-8))
    g = p[6]
    ag, ng = accum**g, net**g
    u = ag + ng
    r1 = np.log(accum) - np.log(acc_obs)
    r2 = np.log(u) / g - np.log(step_obs)
    err1, err2 = np.sqrt(np.mean(r1**2)), np.sqrt(np.mean(r2**2))
    reg = 1e-3 * (g - 1) ** 2 + 1e-2 * ((p[3] / p[2]) ** 2 + (p[5] / p[4]) ** 2)
    d1, d2 = r1 / (n * max(err1, 1e-12)), r2 / (n * max(err2, 1e-12))
    d_accum = d1 / accum + d2 * ag / (accum * u)
    d_net = d2 * ng / (net * u)
    d_g = d2 * ((ag * np.log(accum) + ng * np.log(net)) / (g * u) - np.log(u) / g**2)
    parts = [d_accum, d_accum * bsz, d_net * inter, d_net * inter * rounds, d_net * intra]
    grad = np.array([np.sum(a) for a in (*parts, d_net * intra * rounds, d_g)])
    grad[6] += 2e-3 * (g - 1)
    grad[3] += 2e-2 * p[3] / p[2] ** 2
    grad[2] -= 2e-2 * p[3] ** 2 / p[2] ** 3
    grad[5] += 2e-2 * p[5] / p[4] ** 2
    grad[4] -= 2e-2 * p[5] ** 2 / p[4] ** 3
    return float(err1) + float(err2) + float(reg), grad


@settings(max_examples=100, deadline=None)
@given(
    p=st.lists(st.floats(1e-6, 5.0), min_size=6, max_size=6),
    g=st.floats(1.0, 10.0),
    rows=st.integers(1, 12),
)
def test_the_loss_with_constants_computed_once_is_the_direct_one(
    p: list[float], g: float, rows: int
) -> None:
    nodes, replicas, bsz, accum_s, step_s = (np.resize(a, rows) for a in _measurements())
    x = (nodes, replicas, bsz)
    got = pollux_model._objective(np.array([*p, g]), x, accum_s, step_s)
    want = _direct_objective(np.array([*p, g]), x, accum_s, step_s)
    assert got[0] == want[0] or (np.isnan(got[0]) and np.isnan(want[0]))
    assert got[1].tobytes() == want[1].tobytes()
