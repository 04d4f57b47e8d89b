"""Tests for ``HERReplayBuffer`` / ``HERVectorReplayBuffer``."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from tdrl.data.buffer.her import HERReplayBuffer, HERVectorReplayBuffer


def reward_fn(ag: np.ndarray, g: np.ndarray) -> np.ndarray:
    return -(np.abs(ag - g).sum(-1) > 1e-6).astype(np.float64)


def _code(ring, ep, t):
    """achieved goal after ``t`` steps of episode ``ep`` in ring ``ring``."""
    return ring * 10_000 + ep * 100 + t


def _decode(code):
    code = np.asarray(code, dtype=np.int64)
    return code // 10_000, (code % 10_000) // 100, code % 100


def _fill(buf, n_rings, lengths_per_ring, ignore_obs_next=False):
    """Episodes with known lengths; ``achieved_goal`` encodes (ring, episode, step)."""
    steps = max(sum(ls) for ls in lengths_per_ring)
    ep = np.zeros(n_rings, int)
    t = np.zeros(n_rings, int)
    remaining = [list(ls) for ls in lengths_per_ring]
    for _ in range(steps):
        rings = np.array([r for r in range(n_rings) if remaining[r]])
        if len(rings) == 0:
            break
        ag = np.array([_code(r, ep[r], t[r]) for r in rings], np.float32)[:, None]
        done = np.array([t[r] + 1 == remaining[r][0] for r in rings])
        g = np.full((len(rings), 1), -1.0, np.float32)
        obs = {"observation": ag.copy(), "achieved_goal": ag, "desired_goal": g}
        batch = {
            "obs": obs,
            "act": np.zeros(len(rings), np.int64),
            "rew": reward_fn(ag + 1, g),
            "terminated": done,
            "truncated": np.zeros(len(rings), bool),
        }
        if not ignore_obs_next:
            batch["obs_next"] = {"observation": ag + 1, "achieved_goal": ag + 1, "desired_goal": g}
        if n_rings == 1:
            batch = {
                k: (v[0] if not isinstance(v, dict) else {a: b[0] for a, b in v.items()})
                for k, v in batch.items()
            }
            buf.add(batch)
        else:
            buf.add(batch, buffer_ids=rings)
        for j, r in enumerate(rings):
            t[r] += 1
            if done[j]:
                remaining[r].pop(0)
                ep[r] += 1
                t[r] = 0


def _snapshot(buf):
    return {k: v.clone() for k, v in buf._storage.columns.items()}


def _assert_same(buf, snap):
    for k, v in buf._storage.columns.items():
        assert torch.equal(v, snap[k]), k


def _check_relabelled(batch, idx, buf, n_rings):
    goal = batch.obs.desired_goal[:, 0].numpy()
    relabelled = goal >= 0
    ring_of_idx = idx // buf._storage.ring_size
    ach = batch.obs.achieved_goal[:, 0].numpy()
    r0, e0, t0 = _decode(ach)
    assert np.array_equal(r0, ring_of_idx)
    r1, e1, t1 = _decode(goal[relabelled])
    # same sub-buffer, same episode, strictly in the future of the sampled step
    assert np.array_equal(r1, r0[relabelled]) and np.array_equal(e1, e0[relabelled])
    assert (t1 >= t0[relabelled] + 1).all()
    # obs_next carries the same goal and the reward is recomputed
    assert torch.equal(batch.obs_next.desired_goal, batch.obs.desired_goal)
    expect = reward_fn(batch.obs_next.achieved_goal.numpy(), batch.obs_next.desired_goal.numpy())
    np.testing.assert_array_equal(batch.rew.numpy(), expect)
    return relabelled


def test_goals_from_same_episode_future_and_rewards_recomputed():
    buf = HERReplayBuffer(64, reward_fn, horizon=10, future_k=4.0, seed=0)
    _fill(buf, 1, [[5, 7, 3, 9, 6]])
    seen = 0
    for _ in range(20):
        batch, idx = buf.sample(16)
        relabelled = _check_relabelled(batch, idx, buf, 1)
        # until the next mutation the buffer itself shows the relabelled episode, so returns
        # computed through it (buffer.rew, buffer[next(idx)].obs_next) agree with the batch
        assert torch.equal(buf.rew[torch.from_numpy(idx)], batch.rew)
        nxt = buf.next(idx)
        assert torch.equal(
            buf[nxt].obs.desired_goal[relabelled & (nxt != idx)],
            batch.obs.desired_goal[relabelled & (nxt != idx)],
        )
        seen += relabelled.sum()
        # number of relabelled episodes is int(E * (1 - 1/k))
        eps = np.unique(_decode(batch.obs.achieved_goal[:, 0].numpy())[1])
        n_her = len(np.unique(_decode(batch.obs.achieved_goal[relabelled, 0].numpy())[1]))
        assert n_her == int(len(eps) * 0.75)
    assert seen > 0


def test_stored_data_restored_after_sample_and_on_every_mutation(tmp_path):
    buf = HERReplayBuffer(40, reward_fn, horizon=8, future_k=float("inf"), seed=1)
    _fill(buf, 1, [[4, 6, 5]])
    snap = _snapshot(buf)
    buf.sample(8)
    assert not all(torch.equal(v, snap[k]) for k, v in buf._storage.columns.items())
    buf._restore_cache()
    _assert_same(buf, snap)
    # each mutation / read-out restores first
    for action in ("add", "sample_indices", "state_dict", "pickle", "update", "reset"):
        buf.sample(8)
        if action == "add":
            _fill(buf, 1, [[1]])
            for k, v in snap.items():
                assert torch.equal(buf._storage.columns[k][:15], v[:15]), k
            snap = _snapshot(buf)
        elif action == "sample_indices":
            buf._restore_cache()
            ref = _snapshot(buf)
            buf.sample_indices(0)  # restores, then relabels everything
            buf._restore_cache()
            _assert_same(buf, ref)
        elif action == "state_dict":
            sd = buf.state_dict()
            _assert_same(buf, snap)
            assert sd is not None
        elif action == "pickle":
            clone = pickle.loads(pickle.dumps(buf))
            _assert_same(clone, snap)
        elif action == "update":
            other = HERReplayBuffer(40, reward_fn, horizon=8, seed=2)
            other.update(buf)
            assert torch.equal(
                other.obs.desired_goal[: len(buf)], buf[:].obs.desired_goal
            )  # buf[:] relabelled nothing
            buf._restore_cache()
            _assert_same(buf, snap)
        else:
            buf.reset()
            _assert_same(buf, snap)


def test_hdf5_roundtrip_keeps_reward_fn(tmp_path):
    pytest.importorskip("h5py")
    buf = HERVectorReplayBuffer(40, 2, reward_fn, horizon=6, future_k=4.0, seed=0)
    _fill(buf, 2, [[3, 4], [5, 2]])
    snap = _snapshot(buf)
    buf.sample(8)
    buf.save_hdf5(tmp_path / "her.h5")
    _assert_same(buf, snap)  # saving restored the originals first
    loaded = HERVectorReplayBuffer.load_hdf5(tmp_path / "her.h5")
    _assert_same(loaded, snap)
    assert (loaded.horizon, loaded.future_k, loaded.buffer_num) == (6, 4.0, 2)
    assert loaded.compute_reward_fn is reward_fn
    batch, idx = loaded.sample(8)
    _check_relabelled(batch, idx, loaded, 2)
    with pytest.raises(TypeError, match="picklable"):
        HERReplayBuffer(8, lambda ag, g: ag[:, 0], horizon=2).save_hdf5(tmp_path / "x.h5")


def test_vector_buffer_keeps_rings_separate():
    buf = HERVectorReplayBuffer(3 * 30, 3, reward_fn, horizon=12, future_k=2.0, seed=3)
    _fill(buf, 3, [[4, 9, 3], [10, 2, 6], [7, 7, 5]])
    snap = _snapshot(buf)
    total = 0
    for _ in range(15):
        batch, idx = buf.sample(32)
        total += _check_relabelled(batch, idx, buf, 3).sum()
    assert total > 0
    buf._restore_cache()
    _assert_same(buf, snap)


def test_ignore_obs_next_uses_next_obs():
    buf = HERReplayBuffer(
        32, reward_fn, horizon=8, future_k=float("inf"), ignore_obs_next=True, seed=4
    )
    _fill(buf, 1, [[4, 5]], ignore_obs_next=True)
    batch, idx = buf.sample(16)
    goal = batch.obs.desired_goal[:, 0].numpy()
    _, e, t = _decode(batch.obs.achieved_goal[:, 0].numpy())
    _, e1, t1 = _decode(goal)
    assert np.array_equal(e1, e) and (t1 >= t).all()
    nxt_ag = buf[buf.next(idx)].obs.achieved_goal.numpy()
    np.testing.assert_array_equal(
        batch.rew.numpy(), reward_fn(nxt_ag, batch.obs.desired_goal.numpy())
    )


def test_same_seed_same_relabelling():
    def run(seed):
        buf = HERVectorReplayBuffer(60, 2, reward_fn, horizon=10, seed=seed)
        _fill(buf, 2, [[5, 6, 4], [3, 8, 2]])
        return buf.sample(24)

    (b1, i1), (b2, i2) = run(7), run(7)
    assert np.array_equal(i1, i2) and torch.equal(b1.obs.desired_goal, b2.obs.desired_goal)


def test_bad_input():
    with pytest.raises(TypeError, match="compute_reward_fn: expected a callable"):
        HERReplayBuffer(10, None, horizon=3)
    with pytest.raises(ValueError, match="horizon: expected an int >= 1, got 0"):
        HERReplayBuffer(10, reward_fn, horizon=0)
    with pytest.raises(ValueError, match="future_k: expected a number >= 1"):
        HERVectorReplayBuffer(10, 2, reward_fn, horizon=3, future_k=0.5)
    with pytest.raises(ValueError, match="stack_num"):
        HERReplayBuffer(10, reward_fn, horizon=3, stack_num=4)
    buf = HERReplayBuffer(10, reward_fn, horizon=3)
    bad = {
        "obs": {"observation": [0.0], "achieved_goal": [0.0]},
        "act": 0,
        "rew": 0.0,
        "terminated": False,
        "truncated": False,
    }
    with pytest.raises(
        ValueError, match=r"obs: expected a dict with keys .*missing \['desired_goal'\]"
    ):
        buf.add(bad)
    with pytest.raises(ValueError, match="obs: expected a dict"):
        buf.add({**bad, "obs": np.zeros(3)})
    good = {"observation": [0.0], "achieved_goal": [0.0], "desired_goal": [1.0]}
    with pytest.raises(ValueError, match=r"obs_next: expected a dict.*missing \['observation'"):
        buf.add({**bad, "obs": good, "obs_next": {"achieved_goal": [0.0]}})
    assert len(buf) == 0
    # a reward function with the wrong output shape: error, storage untouched
    wrong = HERReplayBuffer(
        20, lambda ag, g: np.zeros((len(ag), 2)), horizon=5, future_k=float("inf"), seed=0
    )
    _fill(wrong, 1, [[3, 4]])
    snap = _snapshot(wrong)
    with pytest.raises(ValueError, match=r"compute_reward_fn: expected rewards of shape \(\d+,\)"):
        wrong.sample(4)
    _assert_same(wrong, snap)
