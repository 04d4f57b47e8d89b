"""Tests for ``CachedReplayBuffer``."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from tdrl.data.buffer.base import ReplayBuffer
from tdrl.data.buffer.cached import CachedReplayBuffer
from tdrl.data.buffer.prio import PrioritizedReplayBuffer
from tdrl.data.buffer.vector import VectorReplayBuffer
from tests.data.random_steps import random_subset_steps


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


def _compare_with_tianshou(ours, theirs):
    idx = theirs.sample_indices(0)
    assert ours.sample_indices(0).tolist() == idx.tolist()
    assert len(ours) == len(theirs)
    assert ours.last_index.tolist() == theirs.last_index.tolist()
    assert ours.subbuffer_edges.tolist() == theirs.subbuffer_edges.tolist()
    np.testing.assert_array_equal(ours.prev(idx), theirs.prev(idx))
    np.testing.assert_array_equal(ours.next(idx), theirs.next(idx))
    assert sorted(ours.unfinished_index()) == sorted(theirs.unfinished_index())
    for stack in (None, 1, 3):
        np.testing.assert_array_equal(
            ours.get(idx, "obs", stack_num=stack).numpy(), theirs.get(idx, "obs", stack_num=stack)
        )
    mine, peer = ours[idx], theirs[idx]
    for key in ("obs", "obs_next", "act", "rew", "terminated", "truncated", "done"):
        np.testing.assert_array_equal(mine[key].numpy(), peer[key], err_msg=key)
    for start, stop in ((31, 33), (35, 34), (33, 32), (3, 1)):
        np.testing.assert_array_equal(
            ours.get_buffer_indices(start, stop), theirs.get_buffer_indices(start, stop)
        )
    for bad in (ours, theirs):
        with pytest.raises(ValueError):
            bad.get_buffer_indices(24, 27)


@pytest.mark.parametrize(
    "opts",
    [
        {},
        {"stack_num": 3},
        {"stack_num": 3, "ignore_obs_next": True},
        {"stack_num": 3, "sample_avail": True},
    ],
)
@pytest.mark.parametrize("seed", range(3))
def test_matches_tianshou_with_options_and_after_round_trips(opts, seed, tmp_path):
    ts = pytest.importorskip("tianshou.data")
    ours = CachedReplayBuffer(ReplayBuffer(25, **opts), 3, 6)
    theirs = ts.CachedReplayBuffer(ts.ReplayBuffer(25, **opts), 3, 6)
    steps = random_subset_steps(
        np.random.default_rng(seed), 3, 80, obs_dim=2, n_act=3, p_truncated=0.05
    )
    for i, (ids, batch) in enumerate(steps):
        if i == 40:  # continue on round-tripped copies of ours
            ours = pickle.loads(pickle.dumps(ours))
        if i == 60:
            ours.save_hdf5(tmp_path / "c.h5")
            ours = CachedReplayBuffer.load_hdf5(tmp_path / "c.h5")
        got = ours.add(batch, buffer_ids=ids)
        want = theirs.add(ts.Batch(**batch), buffer_ids=ids)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w)
        if i % 10 == 9:
            _compare_with_tianshou(ours, theirs)
    with pytest.raises(NotImplementedError):
        theirs.update(ts.ReplayBuffer(3))
    with pytest.raises(NotImplementedError):
        ours.update(ReplayBuffer(3))


# ------------------------------------------------------------------ bad input
def _snapshot(buf: CachedReplayBuffer) -> dict:
    snap: dict = {"rng": buf.generator.get_state().tolist()}
    for name, st in (("main", buf.main_buffer._storage), ("cache", buf.cache._storage)):
        snap[name] = {".".join(k): v.numpy().tolist() for k, v in st.columns.items()}
        snap[name + ".meta"] = {k: np.asarray(v).tolist() for k, v in st.meta_state().items()}
        snap[name + ".stop"] = st.stop.tolist()
    return snap


@pytest.fixture
def filled() -> CachedReplayBuffer:
    buf = CachedReplayBuffer(ReplayBuffer(12), 2, max_episode_length=4, seed=0)
    buf.add(_batch([0, 100], [False, False]))
    buf.add(_batch([1, 101], [True, False]))
    return buf


@pytest.mark.parametrize(
    ("over", "ids", "match"),
    [
        ({"act": None}, None, r"missing reserved key\(s\) \['act'\]"),
        ({"obs": np.zeros(3, np.float32)}, None, r"obs: expected leading dimension 2.*\(3,\)"),
        ({"obs": np.zeros((2, 2), np.float32)}, None, r"obs: expected per-transition shape \(\)"),
        ({"act": np.zeros(2, np.float64)}, None, "act: expected dtype int64, got float64"),
        ({}, [0, 2], r"buffer_ids: expected ids in \[0, 2\), got \[0, 2\]"),
        ({}, [1, 1], r"buffer_ids: expected distinct ids, got \[1, 1\]"),
    ],
)
def test_bad_add_leaves_buffer_unchanged(filled, over, ids, match):
    before = _snapshot(filled)
    batch = _batch([5, 105], [True, True])
    for key, val in over.items():
        if val is None:
            batch.pop(key)
        else:
            batch[key] = val
    with pytest.raises(ValueError, match=match):
        filled.add(batch, buffer_ids=ids)
    assert _snapshot(filled) == before
    # and the buffer still works
    ptr, *_ = filled.add(_batch([5, 105], [True, True]))
    assert ptr.tolist() == [2, 5]


def test_add_the_main_buffer_cannot_take_is_rejected_before_writing():
    main = ReplayBuffer(10)
    main.add({"obs": np.float32(1), "act": 0, "rew": 0.0, "terminated": True, "truncated": False})
    buf = CachedReplayBuffer(main, 2, 4)
    before = _snapshot(buf)
    wide = _batch([0, 1], [True, False])
    wide["obs"] = wide["obs"].astype(np.float64)  # main's obs column is float32
    with pytest.raises(ValueError, match=r"obs: expected dtype float32, got float64 \(the main"):
        buf.add(wide)
    assert _snapshot(buf) == before
    # a column only the main buffer holds: checked against each incoming batch
    main2 = ReplayBuffer(10)
    main2.add({"obs": 1.0, "act": 0, "rew": 0.0, "terminated": True, "truncated": False, "mask": 3})
    buf2 = CachedReplayBuffer(main2, 2, 4)
    bad = dict(_batch([0, 1], [True, False]), mask=np.array([0.5, 0.5]))
    before = _snapshot(buf2)
    with pytest.raises(ValueError, match="mask: expected dtype int64, got float64"):
        buf2.add(bad)
    assert _snapshot(buf2) == before
    ptr, *_ = buf2.add(_batch([0, 1], [True, False]))  # without the key: zero-filled in main
    assert ptr.tolist() == [1, 14] and main2.mask[:2].tolist() == [3, 0]


def test_unsupported_and_bad_calls(filled):
    before = _snapshot(filled)
    with pytest.raises(NotImplementedError, match=r"main_buffer\.update"):
        filled.update(ReplayBuffer(3))
    with pytest.raises(IndexError, match=r"only the full slice"):
        filled[1:3]
    with pytest.raises(KeyError, match="nope: no such column"):
        filled.get([0], "nope")
    assert filled.get([0], "nope", default=7) == 7
    with pytest.raises(ValueError, match=r"batch: expected only reserved keys .* got \['foo'\]"):
        filled.set_batch({"foo": np.zeros(20)})
    with pytest.raises(ValueError, match=r"obs: expected leading dimension 20, got \(12,\)"):
        filled.set_batch({"obs": np.zeros(12)})
    with pytest.raises(ValueError, match="within one sub-buffer"):
        filled.get_buffer_indices(11, 13)
    assert _snapshot(filled) == before


# --------------------------------------------------------------- more of the API
def test_get_stacks_frames_within_each_sub_buffer():
    buf = CachedReplayBuffer(ReplayBuffer(10, stack_num=3), 2, max_episode_length=4)
    buf.add(_batch([0, 100], [False, False]))
    buf.add(_batch([1, 101], [True, False]))
    buf.add(_batch([2, 102], [False, False]))
    idx = np.array([1, 10, 15, 16])
    assert buf.get(idx, "obs").tolist() == [[0, 0, 1], [2, 2, 2], [100, 100, 101], [100, 101, 102]]
    assert buf.get(idx, "obs", stack_num=1).tolist() == [1, 2, 101, 102]
    assert buf.get(15, "obs").tolist() == [100, 100, 101]
    assert buf[idx].obs.tolist() == buf.get(idx, "obs").tolist()
    assert buf.get(idx, "info", default=0) == 0  # no info column stored
    assert buf.get_buffer_indices(10, 12).tolist() == [10, 11]
    assert buf.get_buffer_indices(16, 15).tolist() == [16, 17, 14]


def test_columns_only_one_part_holds_read_as_zeros():
    main = PrioritizedReplayBuffer(6, alpha=1.0, beta=1.0)
    buf = CachedReplayBuffer(main, 2, max_episode_length=3)
    buf.add(dict(_batch([0, 100], [True, False]), info={"k": np.array([7, 8])}))
    buf.add(_batch([1, 101], [False, False]))  # cache rows: info.k zero-filled
    assert buf.sample_indices(0).tolist() == [0, 6, 9, 10]
    out = buf[np.array([9, 0, 6])]
    assert out.info.k.tolist() == [8, 7, 0]
    # the same keys whichever part the rows come from; a prioritized weight is not a column
    assert (
        set(buf[[0]].keys(True, True))
        == set(out.keys(True, True))
        == set(buf[[9]].keys(True, True))
    )
    assert "weight" not in out.keys(True, True)


def test_set_batch_and_nulls():
    buf = CachedReplayBuffer(ReplayBuffer(6), 2, max_episode_length=3)
    buf.add(_batch([0, 100], [True, False]))
    buf.add(_batch([1, 101], [False, False]))
    twin = CachedReplayBuffer(ReplayBuffer(6), 2, max_episode_length=3)
    twin.add(_batch([9, 9], [True, False]))
    twin.add(_batch([9, 9], [False, False]))
    twin.set_batch(
        {
            k: getattr(buf, k)
            for k in ("obs", "act", "rew", "terminated", "truncated", "done", "obs_next")
        }
    )
    assert twin.obs.tolist() == buf.obs.tolist()
    assert twin[:].obs.tolist() == buf[:].obs.tolist() == [0.0, 1.0, 100.0, 101.0]
    assert not buf.hasnull()
    buf.add(_batch([np.nan, 102], [False, False]))
    buf.main_buffer.rew[0] = np.nan
    assert buf.hasnull()
    mask = buf.isnull()
    assert mask.obs.tolist() == [False, False, True, False, False, False]
    assert mask.rew.tolist() == [True, False, True, False, False, False]
    buf.dropnull()
    assert len(buf.main_buffer) == 0 and not buf.main_buffer.hasnull()
    assert not buf.hasnull()
    assert buf[:].obs.tolist() == [1.0, 100.0, 101.0, 102.0]
    assert buf.unfinished_index().tolist() == [6, 11]
