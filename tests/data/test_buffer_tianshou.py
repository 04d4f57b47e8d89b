"""Differential tests: tdrl buffers against Tianshou 2.0.1 on random add sequences.

Run in the Tianshou venv: ``/opt/tsenv/bin/python -m pytest tests/data/test_buffer_tianshou.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

ts = pytest.importorskip("tianshou")
from tianshou.data import Batch as TsBatch  # noqa: E402
from tianshou.data import ReplayBuffer as TsReplayBuffer  # noqa: E402
from tianshou.data import VectorReplayBuffer as TsVectorReplayBuffer  # noqa: E402

from tdrl.data.buffer import ReplayBuffer, VectorReplayBuffer  # noqa: E402
from tests.data.random_steps import random_subset_steps  # noqa: E402


def _compare(mine, peer) -> None:  # type: ignore[no-untyped-def]
    idx = peer.sample_indices(0)
    assert np.array_equal(mine.sample_indices(0), idx)
    assert len(mine) == len(peer)
    assert np.array_equal(mine.prev(idx), peer.prev(idx))
    assert np.array_equal(mine.next(idx), peer.next(idx))
    assert np.array_equal(mine.unfinished_index(), peer.unfinished_index())
    a, b = mine[idx], peer[idx]
    for key in ("obs", "act", "rew", "terminated", "truncated", "done", "obs_next"):
        np.testing.assert_array_equal(a[key].numpy(), b[key])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("total", "n_env"), [(20, 4), (37, 3), (9, 1)])
def test_vector_buffer_matches_tianshou(seed: int, total: int, n_env: int) -> None:
    rng = np.random.default_rng(seed)
    mine, peer = VectorReplayBuffer(total, n_env), TsVectorReplayBuffer(total, n_env)
    assert mine.maxsize == peer.maxsize
    for ids, batch in random_subset_steps(rng, n_env, 40):
        got = mine.add(batch, buffer_ids=ids)
        want = peer.add(TsBatch(**batch), buffer_ids=ids)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        _compare(mine, peer)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("stack_num", "ignore_obs_next"), [(1, False), (3, True), (4, False)])
def test_single_buffer_matches_tianshou(seed: int, stack_num: int, ignore_obs_next: bool) -> None:
    rng = np.random.default_rng(seed)
    kw = {"stack_num": stack_num, "ignore_obs_next": ignore_obs_next}
    mine, peer = ReplayBuffer(7, **kw), TsReplayBuffer(7, **kw)
    for t in range(30):
        step = {
            "obs": np.full(2, t),
            "act": t,
            "rew": float(t % 3),
            "terminated": bool(rng.random() < 0.2),
            "truncated": bool(rng.random() < 0.1),
            "obs_next": np.full(2, t + 1),
        }
        got = mine.add(step)
        want = peer.add(TsBatch(**step))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        _compare(mine, peer)
        idx = peer.sample_indices(0)
        np.testing.assert_array_equal(mine.get(idx, "obs").numpy(), peer.get(idx, "obs"))
        np.testing.assert_array_equal(mine[:].obs_next.numpy(), peer[:].obs_next)


@pytest.mark.parametrize("seed", range(3))
def test_update_matches_tianshou(seed: int) -> None:
    rng = np.random.default_rng(seed)
    mine_dst, peer_dst = ReplayBuffer(12), TsReplayBuffer(12)
    mine_src, peer_src = ReplayBuffer(5), TsReplayBuffer(5)
    for t in range(int(rng.integers(0, 9))):
        step = {
            "obs": t,
            "act": t,
            "rew": 1.0,
            "terminated": t % 3 == 0,
            "truncated": False,
            "obs_next": t + 1,
        }
        mine_dst.add(step)
        peer_dst.add(TsBatch(**step))
    for t in range(int(rng.integers(1, 12))):
        step = {
            "obs": 50 + t,
            "act": t,
            "rew": 2.0,
            "terminated": t % 4 == 0,
            "truncated": False,
            "obs_next": 51 + t,
        }
        mine_src.add(step)
        peer_src.add(TsBatch(**step))
    np.testing.assert_array_equal(mine_dst.update(mine_src), peer_dst.update(peer_src))
    _compare(mine_dst, peer_dst)
