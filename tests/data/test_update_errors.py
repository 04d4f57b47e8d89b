"""``Algorithm.update`` bad input (issue 16): an empty buffer or a batch size that is not
positive where one is needed raises naming it; a batch size beyond the buffer's size follows
Tianshou (off-policy: that many draws with replacement; on-policy: one minibatch of the
whole buffer) and allocates no more rows than that."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.modelfree.reinforce import ActorPolicy, Reinforce
from tdrl.data.buffer import VectorReplayBuffer


def _buffer(steps: int) -> VectorReplayBuffer:
    buf = VectorReplayBuffer(16, 1, seed=0)
    for t in range(steps):
        buf.add(
            {
                "obs": np.full((1, 3), t, np.float32),
                "act": np.array([t % 2]),
                "rew": np.ones(1),
                "terminated": np.array([t % 4 == 3]),
                "truncated": np.zeros(1, bool),
                "obs_next": np.full((1, 3), t + 1, np.float32),
            }
        )
    return buf


def _dqn() -> DQN:
    torch.manual_seed(0)
    pol = DQNPolicy(model=torch.nn.Linear(3, 2), action_space=gym.spaces.Discrete(2))
    return DQN(policy=pol, optim=1e-2)


def _reinforce() -> Reinforce:
    torch.manual_seed(0)
    pol = ActorPolicy(actor=torch.nn.Linear(3, 2), action_space=gym.spaces.Discrete(2))
    return Reinforce(policy=pol, optim=1e-2, gamma=0.9)


def _params(alg: Any) -> list[torch.Tensor]:
    return [p.detach().clone() for p in alg.parameters()]


@pytest.mark.parametrize("make", [_dqn, _reinforce])
def test_update_on_an_empty_buffer_raises_and_changes_nothing(make: Any) -> None:
    alg = make()
    before = _params(alg)
    with pytest.raises(
        ValueError, match=r"buffer: expected a buffer holding transitions, got an empty one"
    ):
        alg.update(VectorReplayBuffer(8, 1), 4)
    assert all(torch.equal(a, b) for a, b in zip(before, _params(alg)))
    assert alg.n_updates == 0
    assert alg.update(None, 4) == {}  # Tianshou: no buffer, no update


@pytest.mark.parametrize("batch_size", [0, -1, None, 2.0, True])
def test_off_policy_batch_size_must_be_positive(batch_size: Any) -> None:
    alg = _dqn()
    before = _params(alg)
    with pytest.raises(
        ValueError,
        match=rf"batch_size: expected an int > 0 for an off-policy update, got "
        rf"{batch_size!r}".replace(".", r"\."),
    ):
        alg.update(_buffer(5), batch_size)
    assert all(torch.equal(a, b) for a, b in zip(before, _params(alg)))


@pytest.mark.parametrize("batch_size", [-1, -5, 1.5])
def test_on_policy_batch_size_must_not_be_negative(batch_size: Any) -> None:
    alg = _reinforce()
    with pytest.raises(
        ValueError,
        match=r"batch_size: expected a minibatch size > 0, or None or 0 for the whole buffer "
        r"as one batch \(on-policy update\), got",
    ) as info:
        alg.update(_buffer(5), batch_size)
    assert str(info.value).endswith(f"got {batch_size!r}")


@pytest.mark.parametrize("make", [_dqn, _reinforce])
def test_repeat_must_be_positive(make: Any) -> None:
    with pytest.raises(ValueError, match=r"repeat: expected an int >= 1, got 0"):
        make().update(_buffer(5), 4, repeat=0)


@pytest.mark.parametrize("batch_size", [None, 0, 3, 100])
def test_on_policy_batch_sizes_follow_tianshou(batch_size: Any) -> None:
    """None/0 (Tianshou's ``batch_size or -1``) and a size beyond the buffer give one
    minibatch of the whole buffer; a smaller size splits it (last part merged)."""
    alg = _reinforce()
    out = alg.update(_buffer(8), batch_size, repeat=2)
    expected = 2 * (2 if batch_size == 3 else 1)  # 8 rows in 3: [3, 3 + 2] (merge_last)
    assert out["gradient_steps"] == expected


def test_off_policy_batch_beyond_buffer_samples_with_replacement() -> None:
    """Tianshou samples ``batch_size`` indices with replacement whatever ``len(buffer)``;
    the batch has exactly that many rows, not the buffer's capacity."""
    alg = _dqn()
    buf = _buffer(3)
    seen: list[int] = []
    orig = alg.preprocess

    def spy(batch: Any, buffer: Any, indices: np.ndarray) -> Any:
        seen.append(len(indices))
        assert set(indices.tolist()) <= {0, 1, 2}
        return orig(batch, buffer, indices)

    alg.preprocess = spy  # type: ignore[method-assign]
    out = alg.update(buf, 50)
    assert seen == [50] and np.isfinite(out["loss"])
    assert buf.maxsize == 16 and len(buf) == 3
