"""Tests for tdrl.utils.stats: MovAvg and RunningMeanStd."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tdrl.utils.stats import MovAvg, RunningMeanStd


def test_movavg_window_and_nonfinite() -> None:
    stat = MovAvg(size=3)
    assert stat.get() == 0.0 and stat.std() == 0.0
    assert stat.add(torch.tensor(1.0)) == 1.0
    assert stat.add([float("nan"), float("inf"), -np.inf]) == 1.0
    stat.add(np.array([2.0, 3.0, 4.0]))
    assert list(stat.cache) == [2.0, 3.0, 4.0]
    assert stat.mean() == pytest.approx(3.0)
    assert stat.std() == pytest.approx(np.std([2, 3, 4]))
    assert len(stat) == 3


def test_movavg_unbounded_and_state_dict() -> None:
    stat = MovAvg(size=0)
    stat.add(list(range(500)))
    assert len(stat) == 500
    other = MovAvg(size=7)
    other.load_state_dict(stat.state_dict())
    assert other.size == 0 and other.get() == pytest.approx(249.5)
    assert pickle.loads(pickle.dumps(stat)).get() == stat.get()


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=20),
        min_size=1,
        max_size=6,
    )
)
def test_running_mean_std_matches_full_data(batches: list[list[float]]) -> None:
    rms = RunningMeanStd()
    for b in batches:
        rms.update(np.array(b))
    data = np.concatenate([np.array(b) for b in batches])
    # the prior (mean 0, var 1) has count 0, so it does not weigh in
    assert rms.count == len(data)
    np.testing.assert_allclose(rms.mean, data.mean(), rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(rms.var, data.var(), rtol=1e-6, atol=1e-6)


def test_running_mean_std_vector_norm_clip_and_types() -> None:
    rng = np.random.default_rng(0)
    rms = RunningMeanStd(clip_max=2.0)
    x = rng.normal(5.0, 3.0, size=(1000, 3))
    rms.update(torch.as_tensor(x[:400]))
    rms.update(x[400:])
    np.testing.assert_allclose(rms.mean, x.mean(0))
    np.testing.assert_allclose(rms.var, x.var(0))
    out = rms.norm(x)
    assert isinstance(out, np.ndarray) and out.max() <= 2.0 and out.min() >= -2.0
    t = torch.as_tensor(x, dtype=torch.float32)
    out_t = rms.norm(t)
    assert isinstance(out_t, torch.Tensor) and out_t.dtype == torch.float32
    np.testing.assert_allclose(out_t.numpy(), out, rtol=1e-5, atol=1e-5)


def test_running_mean_std_state_dict_round_trip() -> None:
    rms = RunningMeanStd(mean=1.0, std=2.0, clip_max=None)
    assert rms.var == 4.0  # tdrl: var = std ** 2
    rms.update(np.arange(10.0))
    fresh = RunningMeanStd()
    fresh.load_state_dict(rms.state_dict())
    assert fresh.count == 10 and fresh.clip_max is None
    np.testing.assert_allclose(fresh.mean, rms.mean)
    np.testing.assert_allclose(fresh.norm(np.array([3.0])), rms.norm(np.array([3.0])))
    torch_state = {
        k: torch.as_tensor(v) if k in ("mean", "var") else v for k, v in rms.state_dict().items()
    }
    fresh.load_state_dict(torch_state)
    np.testing.assert_allclose(fresh.var, rms.var)


def test_running_mean_std_bad_input() -> None:
    rms = RunningMeanStd()
    with pytest.raises(ValueError, match="data_array: expected at least 1 dimension"):
        rms.update(np.float64(3.0))
    with pytest.raises(KeyError, match="missing key 'count'"):
        rms.load_state_dict({"mean": 0.0, "var": 1.0})
    rms.update(np.zeros((0, 2)))  # an empty batch changes nothing
    assert rms.count == 0


def test_running_mean_std_against_tianshou() -> None:
    stats = pytest.importorskip("tianshou.utils.statistics")
    ours, theirs = RunningMeanStd(), stats.RunningMeanStd()
    rng = np.random.default_rng(1)
    for _ in range(5):
        batch = rng.normal(size=(17, 2))
        ours.update(batch)
        theirs.update(batch)
    np.testing.assert_allclose(ours.mean, theirs.mean)
    np.testing.assert_allclose(ours.var, theirs.var)
    x = rng.normal(size=(4, 2)) * 30
    np.testing.assert_allclose(ours.norm(x), theirs.norm(x))
    mine, peer = MovAvg(5), stats.MovAvg(5)
    for v in ([1, 2], 3.0, [4, 5, 6, 7]):
        assert mine.add(v) == pytest.approx(peer.add(v))
    assert mine.std() == pytest.approx(peer.std())
