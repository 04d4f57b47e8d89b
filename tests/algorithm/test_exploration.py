"""Tests for tdrl.algorithm.exploration: action noise and epsilon schedules.

Oracles: Tianshou 2.0.1's ``tianshou.exploration.GaussianNoise`` / ``OUNoise`` on numpy's global
RNG (same seed -> identical arrays), and the epsilon formulas of Tianshou's DQN examples
(written out here) for the schedules.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tdrl.algorithm.exploration import (
    BaseNoise,
    ExponentialSchedule,
    GaussianNoise,
    LinearSchedule,
    OUNoise,
    PiecewiseLinearSchedule,
    Schedule,
)

# --------------------------------------------------------------------------- action noise


def _run(noise, calls, seed):
    np.random.seed(seed)
    out = []
    for c in calls:
        if c == "reset":
            noise.reset()
        elif isinstance(c, tuple) and len(c) == 2 and isinstance(c[1], float):
            out.append(noise(c[0], c[1]))
        else:
            out.append(noise(c))
    return out


def _assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_gaussian_matches_tianshou() -> None:
    exploration = pytest.importorskip("tianshou.exploration")
    calls = [(3,), (2, 4), (1,), (5, 1, 2)]
    for mu, sigma in [(0.0, 1.0), (0.3, 0.1), (-1.0, 0.0)]:
        theirs = _run(exploration.GaussianNoise(mu, sigma), calls, seed=11)
        ours = _run(GaussianNoise(mu, sigma), calls, seed=11)
        _assert_same(ours, theirs)


@pytest.mark.parametrize(
    "x0", [None, 0.5, np.array([0.1, -0.2, 0.3]), np.array([[1.0, 2.0]])], ids=str
)
def test_ou_matches_tianshou(x0) -> None:
    exploration = pytest.importorskip("tianshou.exploration")
    kw = {"mu": 0.2, "sigma": 0.4, "theta": 0.3, "dt": 0.05, "x0": x0}
    calls = [
        (3,),
        (3,),
        ((3,), -1.0),  # per-call mu
        (3,),
        "reset",
        (3,),
        (1, 2),  # shape change: restart at 0
        (1, 2),
        "reset",
        (1, 2),
    ] + [(3,)] * 20
    theirs = _run(exploration.OUNoise(**kw), calls, seed=5)
    ours = _run(OUNoise(**kw), calls, seed=5)
    _assert_same(ours, theirs)


def test_ou_list_and_int_sizes_keep_the_process() -> None:
    """Tianshou restarts its process on every call given a list or int ``size``; ours treats
    them as the tuple they describe."""
    ours_tuple = _run(OUNoise(x0=1.0), [(2,)] * 5, seed=3)
    ours_list = _run(OUNoise(x0=1.0), [[2]] * 5, seed=3)
    ours_int = _run(OUNoise(x0=1.0), [2] * 5, seed=3)
    _assert_same(ours_list, ours_tuple)
    _assert_same(ours_int, ours_tuple)


def test_ou_output_is_a_copy() -> None:
    ou = OUNoise(rng=np.random.default_rng(0))
    a = ou((4,))
    state = a.copy()
    a[:] = 100.0
    b = ou((4,))
    ref = OUNoise(rng=np.random.default_rng(0))
    np.testing.assert_array_equal(ref((4,)), state)
    np.testing.assert_array_equal(ref((4,)), b)


def test_rng_argument() -> None:
    np.random.seed(0)
    g1 = GaussianNoise(0.0, 2.0, rng=np.random.default_rng(7))((1000,))
    o1 = OUNoise(rng=np.random.default_rng(7))((4,))
    untouched = np.random.random()  # the global RNG was not drawn from
    np.random.seed(0)
    assert untouched == np.random.random()
    np.testing.assert_array_equal(g1, GaussianNoise(0.0, 2.0, rng=np.random.default_rng(7))(1000))
    np.testing.assert_array_equal(o1, OUNoise(rng=np.random.default_rng(7))((4,)))
    assert abs(g1.mean()) < 0.2 and abs(g1.std() - 2.0) < 0.15
    legacy = GaussianNoise(rng=np.random.RandomState(1))((3,))
    np.random.seed(1)
    np.testing.assert_array_equal(legacy, np.random.normal(0.0, 1.0, (3,)))


def test_ou_stationary_variance() -> None:
    """The discretised process is AR(1): x' = (1 - a) x + b e, variance b^2 / (1 - (1 - a)^2)."""
    sigma, theta, dt = 0.3, 0.5, 0.1
    ou = OUNoise(mu=1.0, sigma=sigma, theta=theta, dt=dt, rng=np.random.default_rng(0))
    for _ in range(300):
        x = ou((4000,))
    a, b = theta * dt, sigma * math.sqrt(dt)
    assert abs(x.mean() - 1.0) < 0.02
    assert abs(x.var() / (b * b / (1 - (1 - a) ** 2)) - 1) < 0.06


def test_noise_validation() -> None:
    with pytest.raises(ValueError, match=r"sigma must be >= 0, got -1\.0"):
        GaussianNoise(0.0, -1.0)
    with pytest.raises(ValueError, match=r"sigma must be >= 0, got -0\.3"):
        OUNoise(sigma=-0.3)
    with pytest.raises(ValueError, match=r"theta must be >= 0, got -1"):
        OUNoise(theta=-1)
    with pytest.raises(ValueError, match=r"dt must be > 0, got 0"):
        OUNoise(dt=0)
    with pytest.raises(ValueError, match="mu must be finite"):
        GaussianNoise(float("nan"))
    with pytest.raises(TypeError, match="sigma must be a real number"):
        GaussianNoise(0.0, "1")  # type: ignore[arg-type]
    assert isinstance(GaussianNoise(), BaseNoise) and isinstance(OUNoise(), BaseNoise)
    GaussianNoise().reset()
    assert "sigma=0.3" in repr(OUNoise()) and "sigma=1.0" in repr(GaussianNoise())


# ------------------------------------------------------------------------------ schedules


def _tianshou_atari_eps(env_step: int, eps_train: float = 1.0, eps_final: float = 0.05) -> float:
    """The epsilon of Tianshou's examples/atari DQN-family ``train_fn``, written out."""
    if env_step <= 1e6:
        return eps_train - env_step / 1e6 * (eps_train - eps_final)
    return eps_final


def _tianshou_test_dqn_eps(env_step: int, eps_train: float) -> float:
    """The 'eps annealing' ``train_fn`` of Tianshou's test/discrete DQN tests, written out."""
    if env_step <= 10000:
        return eps_train
    if env_step <= 50000:
        return eps_train - (env_step - 10000) / 40000 * (0.9 * eps_train)
    return 0.1 * eps_train


def test_linear_matches_tianshou_atari_examples() -> None:
    eps = LinearSchedule(1.0, 0.05, 1_000_000)
    steps = [0, 1, 7, 12_345, 499_999, 500_000, 999_999, 1_000_001, 5_000_000]
    steps += list(np.random.default_rng(0).integers(0, 2_000_000, 500))
    for t in steps:
        assert eps(t) == _tianshou_atari_eps(int(t)), t
    # at the ramp's end the written-out formula rounds; the schedule gives ``end`` exactly
    assert eps(1_000_000) == 0.05
    assert abs(_tianshou_atari_eps(1_000_000) - 0.05) < 1e-15


def test_piecewise_matches_tianshou_test_dqn() -> None:
    for e in (0.1, 0.73, 1.0):
        eps = PiecewiseLinearSchedule([(10_000, e), (50_000, 0.1 * e)])
        for t in [0, 9_999, 10_000, 10_001, 30_000, 49_999, 50_000, 50_001, 10**7]:
            assert eps(t) == pytest.approx(_tianshou_test_dqn_eps(t, e), abs=1e-15), (e, t)


def test_schedule_values() -> None:
    lin = LinearSchedule(0.0, 10.0, 4)
    assert [lin(t) for t in range(6)] == [0.0, 2.5, 5.0, 7.5, 10.0, 10.0]
    assert lin(np.int64(2)) == 5.0 and lin(1.5) == 3.75
    exp = ExponentialSchedule(1.0, 0.1, 50.0)
    assert exp(0) == 1.0
    assert exp(50) == pytest.approx(0.1 + 0.9 / math.e)
    assert exp(10**9) == pytest.approx(0.1)
    pw = PiecewiseLinearSchedule([(0, 1.0), (10, 0.5), (30, 0.5), (40, 0.0)])
    assert [pw(t) for t in (0, 5, 10, 20, 30, 35, 40, 100)] == [
        1.0,
        0.75,
        0.5,
        0.5,
        0.5,
        0.25,
        0.0,
        0.0,
    ]
    assert PiecewiseLinearSchedule([(5, 0.3)])(0) == 0.3 == PiecewiseLinearSchedule([(5, 0.3)])(9)
    assert repr(pw).startswith("PiecewiseLinearSchedule([(0, 1)")
    assert "steps=4" in repr(lin) and "decay_steps=50.0" in repr(exp)
    for s in (lin, exp, pw):
        assert isinstance(s, Schedule)


def test_schedule_validation() -> None:
    with pytest.raises(ValueError, match=r"steps must be an int >= 1, got 0"):
        LinearSchedule(1.0, 0.0, 0)
    with pytest.raises(ValueError, match=r"steps must be an int >= 1, got 2\.5"):
        LinearSchedule(1.0, 0.0, 2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="start must be finite"):
        LinearSchedule(float("inf"), 0.0, 10)
    with pytest.raises(ValueError, match=r"step must be >= 0, got -1"):
        LinearSchedule(1.0, 0.0, 10)(-1)
    with pytest.raises(ValueError, match=r"decay_steps must be > 0, got 0"):
        ExponentialSchedule(1.0, 0.0, 0)
    with pytest.raises(ValueError, match="at least one"):
        PiecewiseLinearSchedule([])
    with pytest.raises(ValueError, match="strictly increasing"):
        PiecewiseLinearSchedule([(0, 1.0), (10, 0.5), (10, 0.2)])
    with pytest.raises(ValueError, match=r"points\[1\] step must be >= 0"):
        PiecewiseLinearSchedule([(0, 1.0), (-5, 0.5)])
    with pytest.raises(ValueError, match=r"points\[0\] must be a \(step, value\) pair"):
        PiecewiseLinearSchedule([(0, 1.0, 2.0)])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"points\[0\] value must be finite"):
        PiecewiseLinearSchedule([(0, float("nan"))])
    with pytest.raises(TypeError, match="step must be a real number"):
        ExponentialSchedule(1.0, 0.0, 5)(True)


values = st.floats(-10, 10, allow_nan=False)


@settings(max_examples=100, deadline=None)
@given(
    start=values,
    end=values,
    steps=st.integers(1, 10**7),
    t=st.floats(0, 2e7, allow_nan=False),
    t2=st.floats(0, 2e7, allow_nan=False),
)
def test_schedules_stay_between_their_ends_and_are_monotone(start, end, steps, t, t2) -> None:
    lo, hi = min(start, end), max(start, end)
    tol = 1e-12 * (1 + abs(lo) + abs(hi))
    t_a, t_b = sorted((t, t2))
    sign = 1.0 if end >= start else -1.0  # increasing or decreasing
    for s in (
        LinearSchedule(start, end, steps),
        ExponentialSchedule(start, end, steps),
        PiecewiseLinearSchedule([(0, start), (steps, end)]),
    ):
        assert lo - tol <= s(t) <= hi + tol
        assert sign * (s(t_b) - s(t_a)) >= -tol
    assert LinearSchedule(start, end, steps)(t) == PiecewiseLinearSchedule(
        [(0, start), (steps, end)]
    )(t)
