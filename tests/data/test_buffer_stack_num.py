"""Changing ``stack_num`` after the first read takes effect on every read path (issue 24)."""

from __future__ import annotations

import pytest

from tdrl.data import Batch, CachedReplayBuffer, ReplayBuffer, VectorReplayBuffer


def _fill(buf: ReplayBuffer, n: int = 6) -> None:
    for i in range(n):
        buf.add(
            Batch(obs=[i], act=[0], rew=[0.0], terminated=[False], truncated=[False],
                  obs_next=[i + 1]),
            buffer_ids=[0],
        )  # fmt: skip


@pytest.mark.parametrize("make", [lambda: ReplayBuffer(10), lambda: VectorReplayBuffer(20, 2)])
def test_stack_num_changed_after_a_read(make: object) -> None:
    buf = make()  # type: ignore[operator]
    _fill(buf)
    assert buf[:].obs.shape == (6,)
    buf.sample(2)
    buf.stack_num = 3
    assert buf[:].obs.shape == (6, 3)
    assert buf[:].obs_next.shape == (6, 3)
    assert buf.sample(2)[0].obs.shape == (2, 3)
    assert buf[[4]].obs.tolist() == [[2, 3, 4]]
    assert buf.get([4], "obs").tolist() == [[2, 3, 4]]
    buf.stack_num = 1
    assert buf[:].obs.shape == (6,)
    assert buf.options["stack_num"] == 1


def test_stack_num_is_validated() -> None:
    buf = ReplayBuffer(4)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="stack_num"):
            buf.stack_num = bad  # type: ignore[assignment]


def test_cached_buffer_stack_num_reaches_main_and_caches() -> None:
    buf = CachedReplayBuffer(ReplayBuffer(10), cached_buffer_num=2, max_episode_length=5)
    for i in range(3):
        buf.add(
            Batch(obs=[i, 10 + i], act=[0, 0], rew=[0.0, 0.0], terminated=[i == 2, False],
                  truncated=[False, False], obs_next=[i + 1, 11 + i])
        )  # fmt: skip
    buf.sample(2)
    buf.stack_num = 2
    assert buf.stack_num == buf.main_buffer.stack_num == buf.cache.stack_num == 2
    out = buf[:]
    assert out.obs.shape == (len(buf), 2)
    assert out.obs[:3].tolist() == [[0, 0], [0, 1], [1, 2]]  # the main buffer's episode


def test_issue_example_scalar_adds() -> None:
    """The issue's reproduction: unbatched adds, a sample, then a new ``stack_num``."""
    buf = ReplayBuffer(10)
    for i in range(6):
        buf.add(Batch(obs=i, act=0, rew=0.0, terminated=False, truncated=False, obs_next=i + 1))
    buf.sample(2)
    buf.stack_num = 3
    assert buf[:].obs.shape == (6, 3)
    assert buf.sample(4)[0].obs.shape == (4, 3)
