"""Collector semantics: exact buffer contents on a deterministic env, counts, stats, errors."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from tdrl.data.batch import Batch
from tdrl.data.buffer import ReplayBuffer, VectorReplayBuffer
from tdrl.data.collector import Collector
from tdrl.env import DummyVectorEnv
from tdrl.env.testing import MoveToRightEnv


class RightPolicy:
    """Always move right; optionally carries a hidden state that counts steps per env."""

    def __init__(self, recurrent: bool = False, store: bool = False) -> None:
        self.recurrent = recurrent
        self.store = store
        self.seen_states: list[torch.Tensor] = []

    def __call__(self, batch: Batch, state: Any = None) -> Batch:
        n = batch.batch_size[0]
        out = Batch({"act": torch.ones(n, dtype=torch.int64)}, batch_size=[n])
        if self.recurrent:
            state = torch.zeros(n, 1) if state is None else state
            self.seen_states.append(state.clone())
            out["state"] = state + 1
        if self.store:
            out["policy"] = Batch({"hidden": batch["obs"].float() * 10}, batch_size=[n])
        return out

    def map_action_inverse(self, act: np.ndarray) -> np.ndarray:
        return act


def make_envs(sizes: list[int], **kw: Any) -> DummyVectorEnv:
    return DummyVectorEnv(
        [lambda s=s, i=i: MoveToRightEnv(size=s, ident=i, **kw) for i, s in enumerate(sizes)]
    )


def test_n_step_single_env_exact_contents_and_carry_over() -> None:
    buf = ReplayBuffer(20)
    c = Collector(RightPolicy(), make_envs([3]), buf)
    c.reset()
    stats = c.collect(n_step=5)
    assert stats.n_collected_steps == 5
    assert stats.n_collected_episodes == 1
    assert stats.returns.tolist() == [1.0] and stats.lens.tolist() == [3]
    assert buf.obs[:5].tolist() == [0, 1, 2, 0, 1]
    assert buf.obs_next[:5].tolist() == [1, 2, 3, 1, 2]
    assert buf.terminated[:5].tolist() == [False, False, True, False, False]
    assert buf.rew[:5].tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]
    assert buf.unfinished_index().tolist() == [4]
    # the open episode continues in the next call
    stats = c.collect(n_step=1)
    assert buf.obs[5].item() == 2 and buf.terminated[5].item()
    assert stats.lens.tolist() == [3] and stats.returns.tolist() == [1.0]
    assert c.collect_step == 6 and c.collect_episode == 2


def test_n_step_vector_env_layout_and_rounding() -> None:
    buf = VectorReplayBuffer(40, 4)
    c = Collector(RightPolicy(), make_envs([2, 3, 4, 5]), buf)
    c.reset()
    with pytest.warns(UserWarning, match="multiple"):
        stats = c.collect(n_step=7)
    assert stats.n_collected_steps == 8  # ceil(7 / 4) * 4
    assert len(buf) == 8
    for i in range(4):
        assert buf.obs[i * 10 : i * 10 + 2].tolist() == [0, 1]
    assert buf.terminated[0:2].tolist() == [False, True]  # env 0 (size 2) finished
    assert sorted(buf.unfinished_index().tolist()) == [11, 21, 31]
    assert stats.lens.tolist() == [2]


def test_n_episode_spreads_the_last_episodes_evenly() -> None:
    buf = VectorReplayBuffer(40, 4)
    c = Collector(RightPolicy(), make_envs([2, 3, 4, 5]), buf)
    c.reset()
    stats = c.collect(n_episode=4)
    # every env delivers exactly one episode: 4 + 4 + 3 + 2 + 1 steps
    assert stats.n_collected_episodes == 4
    assert sorted(stats.lens.tolist()) == [2, 3, 4, 5]
    assert stats.n_collected_steps == 14
    for i, size in enumerate([2, 3, 4, 5]):
        assert buf.obs[i * 10 : i * 10 + size].tolist() == list(range(size))
        assert buf.terminated[i * 10 + size - 1].item()
    assert buf.unfinished_index().tolist() == []


def test_n_episode_fewer_than_envs_uses_the_first_envs_only() -> None:
    buf = VectorReplayBuffer(40, 4)
    c = Collector(RightPolicy(), make_envs([2, 3, 4, 5]), buf)
    c.reset()
    stats = c.collect(n_episode=2)
    assert sorted(stats.lens.tolist()) == [2, 3]
    assert stats.n_collected_steps == 5
    assert len(buf) == 5
    # envs are reset after an n_episode collect: the next collect starts fresh episodes
    c.collect(n_episode=1)
    assert buf.obs[0:4].tolist() == [0, 1, 0, 1]


def test_random_collect_stores_inverse_mapped_action_and_is_seeded() -> None:
    class Mapped(RightPolicy):
        def map_action_inverse(self, act: np.ndarray) -> np.ndarray:
            return act + 10

    def run() -> list[int]:
        buf = VectorReplayBuffer(40, 2)
        c = Collector(Mapped(), make_envs([50, 50]), buf)
        c.reset(seed=3)
        c.collect(n_step=20, random=True)
        return buf.act[:10].tolist() + buf.act[20:30].tolist()

    first = run()
    assert set(first) <= {10, 11} and len(set(first)) == 2
    assert run() == first


def test_map_action_goes_to_env_raw_action_to_buffer() -> None:
    class Flip(RightPolicy):
        def __call__(self, batch: Batch, state: Any = None) -> Batch:
            n = batch.batch_size[0]
            return Batch({"act": torch.zeros(n, dtype=torch.int64)}, batch_size=[n])

        def map_action(self, act: np.ndarray) -> np.ndarray:
            return 1 - act  # raw 0 means "right" in the env

    buf = ReplayBuffer(10)
    c = Collector(Flip(), make_envs([2]), buf)
    c.reset()
    c.collect(n_step=2)
    assert buf.act[:2].tolist() == [0, 0]
    assert buf.obs_next[:2].tolist() == [1, 2]


def test_exploration_noise_is_applied_only_when_asked() -> None:
    class Noisy(RightPolicy):
        def exploration_noise(self, act: torch.Tensor, batch: Batch) -> torch.Tensor:
            return torch.zeros_like(act)

    for flag, expected in ((False, 1), (True, 0)):
        buf = ReplayBuffer(10)
        c = Collector(Noisy(), make_envs([5]), buf, exploration_noise=flag)
        c.reset()
        c.collect(n_step=3)
        assert buf.act[:3].tolist() == [expected] * 3


def test_hidden_state_is_carried_and_reset_for_finished_envs() -> None:
    policy = RightPolicy(recurrent=True)
    c = Collector(policy, make_envs([2, 4]), VectorReplayBuffer(20, 2))
    c.reset()
    c.collect(n_step=6)
    seen = [s[:, 0].tolist() for s in policy.seen_states]
    # env 0 finishes every 2 steps, so its state goes 0, 1, 0, 1...; env 1 counts up to 3
    assert seen == [[0.0, 0.0], [1.0, 1.0], [0.0, 2.0]]


def test_policy_data_is_stored() -> None:
    buf = ReplayBuffer(10)
    c = Collector(RightPolicy(store=True), make_envs([5]), buf)
    c.reset()
    c.collect(n_step=3)
    assert buf.policy.hidden[:3].tolist() == [0.0, 10.0, 20.0]


def test_dict_observations_are_stored_nested() -> None:
    buf = VectorReplayBuffer(20, 2)
    c = Collector(RightPolicy(), make_envs([2, 3], dict_state=True), buf)
    c.reset()
    c.collect(n_step=4)
    assert buf.obs.index[0:2, 0].tolist() == [0, 1]
    assert buf.obs_next.index[10:12, 0].tolist() == [1, 2]
    assert buf.obs.step.dtype == torch.float32


def test_info_is_stored() -> None:
    buf = VectorReplayBuffer(20, 2)
    c = Collector(RightPolicy(), make_envs([3, 3]), buf)
    c.reset()
    c.collect(n_step=4)
    assert buf.info.ident[10:12].tolist() == [1, 1]
    assert buf.info.env_id[0:2].tolist() == [0, 0]


def test_single_gym_env_is_wrapped_with_a_warning() -> None:
    with pytest.warns(UserWarning, match="DummyVectorEnv"):
        c = Collector(RightPolicy(), MoveToRightEnv(3), ReplayBuffer(10))
    c.reset()
    assert c.collect(n_step=3).n_collected_episodes == 1


def test_default_buffer_is_a_vector_buffer_per_env() -> None:
    c = Collector(RightPolicy(), make_envs([3, 3]))
    assert c.buffer.maxsize == 20_000


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"n_step": 2, "n_episode": 1}, {"n_step": 0}, {"n_episode": -1}],
)
def test_collect_needs_exactly_one_positive_target(kwargs: dict[str, int]) -> None:
    c = Collector(RightPolicy(), make_envs([3]), ReplayBuffer(10))
    c.reset()
    with pytest.raises(ValueError, match="n_step"):
        c.collect(**kwargs)


def test_buffer_must_have_a_sub_buffer_per_env() -> None:
    with pytest.raises(ValueError, match="sub-buffer"):
        Collector(RightPolicy(), make_envs([3, 3]), ReplayBuffer(10))
    with pytest.raises(ValueError, match="sub-buffer"):
        Collector(RightPolicy(), make_envs([3, 3, 3]), VectorReplayBuffer(10, 2))


def test_collect_before_reset_is_an_error() -> None:
    c = Collector(RightPolicy(), make_envs([3]), ReplayBuffer(10))
    with pytest.raises(RuntimeError, match="reset"):
        c.collect(n_step=1)
    assert c.collect(n_step=1, reset_before_collect=True).n_collected_steps == 1


def test_random_collect_without_policy_and_policy_collect_needs_one() -> None:
    with pytest.warns(UserWarning):
        c = Collector(None, gym.make("CartPole-v1"), ReplayBuffer(100))
    c.reset(seed=1)
    assert c.collect(n_step=10, random=True).n_collected_steps == 10
    with pytest.raises(ValueError, match="policy"):
        c.collect(n_step=1)


def test_state_dict_round_trip_continues_identically() -> None:
    def make() -> Collector:
        c = Collector(
            None, DummyVectorEnv([lambda: gym.make("CartPole-v1")] * 2), VectorReplayBuffer(200, 2)
        )
        c.reset(seed=5)
        return c

    a = make()
    a.collect(n_step=30, random=True)
    snap = a.state_dict()
    a.collect(n_step=30, random=True)
    b = make()
    b.load_state_dict(snap)
    b.collect(n_step=30, random=True)
    assert torch.equal(a.buffer.obs, b.buffer.obs)
    assert torch.equal(a.buffer.act, b.buffer.act)


def test_tensordict_hidden_state_stays_a_tensordict_when_rows_reset() -> None:
    from tensordict import TensorDict

    from tdrl.data.collector import _zero_rows

    state = TensorDict({"h": torch.ones(3, 2), "c": torch.ones(3, 2)}, [3])
    out = _zero_rows(state, np.array([1]))
    assert isinstance(out, TensorDict)
    assert out["h"][1].sum() == 0 and out["h"][0].sum() == 2 and state["h"][1].sum() == 2
