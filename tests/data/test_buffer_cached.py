"""Tests for ``CachedReplayBuffer``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tdrl.data.buffer.base import ReplayBuffer
from tdrl.data.buffer.cached import CachedReplayBuffer
from tdrl.data.buffer.prio import PrioritizedReplayBuffer
from tdrl.data.buffer.vector import VectorReplayBuffer


def _batch(obs, terminated, truncated=None):
    obs = np.asarray(obs, dtype=np.float32)
    n = len(obs)
    return {
        "obs": obs,
        "act": np.zeros(n, np.int64),
        "rew": obs.astype(np.float64),
        "terminated": np.asarray(terminated, bool),
        "truncated": np.zeros(n, bool) if truncated is None else np.asarray(truncated, bool),
        "obs_next": obs + 0.5,
    }


def _random_run(seed, steps=40, envs=3):
    """Per-env episode streams with obs = env * 1000 + t and random episode ends."""
    rng = np.random.default_rng(seed)
    t = np.zeros(envs, int)
    out = []
    for _ in range(steps):
        obs = np.arange(envs) * 1000 + t
        term = rng.random(envs) < 0.2
        trunc = (rng.random(envs) < 0.05) & ~term
        out.append(_batch(obs, term, trunc))
        t += 1
    return out


def test_episodes_land_in_main_intact_and_in_order():
    main = ReplayBuffer(200)
    buf = CachedReplayBuffer(main, cached_buffer_num=3, max_episode_length=50)
    expected_main: list[float] = []
    open_eps: list[list[float]] = [[], [], []]
    for step in _random_run(0):
        ptr, ep_rew, ep_len, ep_idx = buf.add(step)
        done = step["terminated"] | step["truncated"]
        for env in range(3):
            open_eps[env].append(float(step["obs"][env]))
            if done[env]:
                ep = open_eps[env]
                start = len(expected_main)
                expected_main.extend(ep)
                assert ep_idx[env] == start and ptr[env] == start + len(ep) - 1
                assert ep_len[env] == len(ep) and ep_rew[env] == pytest.approx(sum(ep))
                open_eps[env] = []
            else:
                assert ptr[env] >= 200 and ep_len[env] == 0 and ep_rew[env] == 0
                assert ep_idx[env] == 200 + 50 * env
    n = len(expected_main)
    assert main.obs[:n].tolist() == expected_main
    assert len(main) == n and len(buf) == n + sum(len(e) for e in open_eps)
    # each moved episode is one chain of next() ending at a done step
    starts = np.flatnonzero(np.r_[True, main.done[: n - 1].numpy()])
    for s in starts:
        i = s
        while not main.done[i]:
            assert buf.next(i) == i + 1
            i += 1
        assert buf.next(i) == i and buf.prev(s) == s
    # caches hold the open episodes, in order, in their own rings
    for env in range(3):
        k = len(open_eps[env])
        rows = 200 + 50 * env + np.arange(k)
        assert buf[rows].obs.tolist() == open_eps[env]
    unfinished = sorted(200 + 50 * e + len(open_eps[e]) - 1 for e in range(3) if open_eps[e])
    assert sorted(buf.unfinished_index().tolist()) == unfinished


def test_long_episode_keeps_last_rows_and_buffer_ids():
    main = ReplayBuffer(20)
    buf = CachedReplayBuffer(main, 2, max_episode_length=3)
    for t in range(5):
        ptr, *_ = buf.add(_batch([t], [t == 4]), buffer_ids=[1])
    assert ptr.tolist() == [2]
    assert main.obs[:3].tolist() == [2.0, 3.0, 4.0]
    assert len(buf.cache) == 0 and buf.last_index.tolist() == [2, 20, 23]


def test_sampling_getitem_and_columns():
    main = ReplayBuffer(10)
    buf = CachedReplayBuffer(main, 2, max_episode_length=4, seed=1)
    buf.add(_batch([0, 100], [False, False]))
    buf.add(_batch([1, 101], [True, False]))
    buf.add(_batch([2, 102], [False, False]))
    assert buf.sample_indices(0).tolist() == [0, 1, 10, 14, 15, 16]
    assert buf.maxsize == 18 and buf.buffer_num == 3
    assert buf.subbuffer_edges.tolist() == [0, 10, 14, 18]
    idx = np.array([15, 0, 10, 1, 16])
    assert buf[idx].obs.tolist() == [101.0, 0.0, 2.0, 1.0, 102.0]
    assert buf[:].obs.tolist() == [0.0, 1.0, 2.0, 100.0, 101.0, 102.0]
    assert buf.obs.shape == (18,) and buf.obs[[0, 14]].tolist() == [0.0, 100.0]
    draws = buf.sample_indices(6000)
    counts = np.bincount(draws, minlength=18)
    valid = [0, 1, 10, 14, 15, 16]
    assert set(np.flatnonzero(counts).tolist()) == set(valid)
    assert counts[valid].min() > 850  # uniform: 1000 each
    batch, ind = buf.sample(5)
    assert torch.equal(batch.obs, buf[ind].obs)
    assert sorted(buf.sample_indices(None).tolist()) == valid
    assert buf.prev(np.array([16, 15, 14, 1])).tolist() == [15, 14, 14, 0]
    assert buf.next(np.array([14, 16, 1, 10])).tolist() == [15, 16, 1, 10]
    buf.reset()
    assert len(buf) == 0


def test_prioritized_main_buffer_gets_max_priority():
    main = PrioritizedReplayBuffer(10, alpha=1.0, beta=0.5)
    buf = CachedReplayBuffer(main, 1, max_episode_length=5)
    buf.add(_batch([0], [False]))
    ptr, *_ = buf.add(_batch([1], [True]))
    assert ptr.tolist() == [1]
    main.update_weight([0], [3.0])
    buf.add(_batch([2], [True]))
    assert main.prio_sampler.tree.leaves[2] == pytest.approx(3.0, rel=1e-6)
    assert main.sample_indices(8).max() <= 2


def test_bad_input():
    with pytest.raises(TypeError, match="one-ring tdrl ReplayBuffer"):
        CachedReplayBuffer(VectorReplayBuffer(10, 2), 2, 5)
    with pytest.raises(ValueError, match="cached_buffer_num: expected an int > 0, got 0"):
        CachedReplayBuffer(ReplayBuffer(10), 0, 5)
    with pytest.raises(ValueError, match="max_episode_length"):
        CachedReplayBuffer(ReplayBuffer(10), 1, 0)
    buf = CachedReplayBuffer(ReplayBuffer(10), 2, 5)
    with pytest.raises(IndexError, match=r"expected indices in \[0, 20\), got \[25\]"):
        buf.prev(np.array([25]))
    with pytest.raises(ValueError, match="empty"):
        buf.sample_indices(3)
    with pytest.raises(ValueError):
        buf.add(_batch([0], [False]), buffer_ids=[2])
    assert len(buf) == 0


def test_matches_tianshou_cached_buffer():
    ts = pytest.importorskip("tianshou.data")
    ours = CachedReplayBuffer(ReplayBuffer(30), 3, 6)
    theirs = ts.CachedReplayBuffer(ts.ReplayBuffer(30), 3, 6)
    for step in _random_run(3, steps=60):
        a = ours.add(step)
        b = theirs.add(ts.Batch(**step, info={}))
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y)
    assert np.array_equal(ours.sample_indices(0), theirs.sample_indices(0))
    np.testing.assert_array_equal(ours.main_buffer.obs.numpy(), theirs.main_buffer.obs)
    probe = ours.sample_indices(0)
    np.testing.assert_array_equal(ours.prev(probe), theirs.prev(probe))
    np.testing.assert_array_equal(ours.next(probe), theirs.next(probe))
    assert sorted(ours.unfinished_index()) == sorted(theirs.unfinished_index())
