"""Trainer loops: counters, callbacks, validation, offline training."""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import pytest

from tdrl.algorithm.presets import DQN_CARTPOLE, PPO_CARTPOLE
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.trainer import OfflineTrainer, OffPolicyTrainer, OnPolicyTrainer


def _setup(preset: Any, n_train: int = 2, n_test: int = 2) -> tuple[Any, Collector, Collector]:
    train_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")] * n_train)
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")] * n_test)
    alg = preset.build(train_envs.observation_space[0], train_envs.action_space[0])
    train = Collector(alg.policy, train_envs, VectorReplayBuffer(2000, n_train))
    test = Collector(alg.policy, test_envs)
    train.reset(seed=0)
    test.reset(seed=1)
    return alg, train, test


def test_off_policy_counts_and_callbacks() -> None:
    alg, train, test = _setup(DQN_CARTPOLE)
    train.collect(n_step=64, random=True)
    calls: dict[str, list[Any]] = {"train": [], "test": [], "best": []}
    result = OffPolicyTrainer(
        alg,
        train,
        test_collector=test,
        max_epochs=2,
        step_per_epoch=100,
        step_per_collect=10,
        update_per_step=0.5,
        batch_size=16,
        episode_per_test=2,
        train_fn=lambda epoch, step: calls["train"].append((epoch, step)),
        test_fn=lambda epoch, step: calls["test"].append((epoch, step)),
        save_best_fn=lambda a: calls["best"].append(a),
        show_progress=False,
        verbose=False,
    ).run()
    assert result.epoch == 2
    assert result.env_step == 200  # 10 collects of 10 steps per epoch
    assert result.gradient_step == 100  # round(0.5 * 10) per collect
    assert calls["train"][0] == (1, 0) and len(calls["train"]) == 20
    assert [e for e, _ in calls["test"]] == [0, 1, 2]  # initial test, then one per epoch
    assert calls["best"] and calls["best"][0] is alg
    assert result.timing.total_time > 0 and result.best_reward > 0


def test_max_env_steps_ends_the_run_mid_epoch_after_a_whole_collect_and_a_test() -> None:
    alg, train, test = _setup(DQN_CARTPOLE)
    train.collect(n_step=64, random=True)
    tests: list[tuple[int, int]] = []
    result = OffPolicyTrainer(
        alg,
        train,
        test_collector=test,
        max_epochs=5,
        step_per_epoch=100,
        step_per_collect=10,
        update_per_step=0.5,
        batch_size=16,
        test_fn=lambda epoch, step: tests.append((epoch, step)),
        show_progress=False,
        verbose=False,
        max_env_steps=125,
    ).run()
    assert result.env_step == 130  # 13 whole collects: the first to reach 125
    assert result.epoch == 2 and tests == [(0, 0), (1, 100), (2, 130)]


def test_on_policy_clears_buffer_and_keeps_episode_statistics() -> None:
    alg, train, test = _setup(PPO_CARTPOLE)
    result = OnPolicyTrainer(
        alg,
        train,
        test_collector=test,
        max_epochs=1,
        step_per_epoch=200,
        episode_per_collect=2,
        repeat_per_collect=2,
        batch_size=32,
        show_progress=False,
        verbose=False,
    ).run()
    assert result.gradient_step >= 1
    assert len(train.buffer) == 0  # reset after every update
    assert result.env_episode >= 2


def test_stop_fn_ends_training_early_but_never_before_training() -> None:
    """A threshold the untrained policy already reaches ends the run after its first
    epoch of training, not at the initial test (Tianshou: 0 steps, "success")."""
    alg, train, test = _setup(DQN_CARTPOLE)
    train.collect(n_step=16, random=True)
    result = OffPolicyTrainer(
        alg,
        train,
        test_collector=test,
        max_epochs=5,
        step_per_epoch=20,
        step_per_collect=10,
        batch_size=4,
        stop_fn=lambda best: True,
        show_progress=False,
        verbose=False,
    ).run()
    assert result.stopped_early and result.epoch == 1
    assert result.env_step == 20 and result.gradient_step > 0


def test_an_untrained_score_is_never_credited(monkeypatch: pytest.MonkeyPatch) -> None:
    """The initial test scores 500 (scripted), every later one 10: best_reward keeps the
    500 (Tianshou's), but stop_fn sees the trained best, so a threshold of 195 is never
    reached and the run trains all its epochs."""
    alg, train, test = _setup(DQN_CARTPOLE)
    train.collect(n_step=16, random=True)
    real = test.collect
    scores = iter([500.0] + [10.0] * 10)

    def scripted(**kwargs: Any) -> Any:
        stats = real(**kwargs)
        stats.returns_stat = dataclasses.replace(stats.returns_stat, mean=next(scores))
        return stats

    monkeypatch.setattr(test, "collect", scripted)
    seen: list[float] = []
    result = OffPolicyTrainer(
        alg, train, test_collector=test, max_epochs=3, step_per_epoch=20, step_per_collect=10,
        batch_size=4, stop_fn=lambda best: seen.append(best) or best >= 195,
        show_progress=False, verbose=False,
    ).run()  # fmt: skip
    assert not result.stopped_early and result.epoch == 3
    assert result.best_reward == 500.0 and result.best_epoch == 0
    assert result.best_trained_reward == 10.0 and result.best_trained_epoch == 1
    assert seen == [10.0, 10.0, 10.0]


def test_offline_trainer_counts_gradient_steps() -> None:
    alg, train, test = _setup(DQN_CARTPOLE)
    train.collect(n_step=200, random=True)
    result = OfflineTrainer(
        alg,
        train.buffer,
        max_epochs=2,
        step_per_epoch=15,
        test_collector=test,
        batch_size=16,
        show_progress=False,
        verbose=False,
    ).run()
    assert result.gradient_step == 30 and result.epoch == 2 and result.env_step == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"step_per_collect": 10, "episode_per_collect": 1}, "exactly one"),
        ({}, "exactly one"),
        ({"step_per_collect": 10, "test_in_train": True}, "test_in_train"),
        ({"step_per_collect": 10, "max_epochs": 0}, "max_epochs"),
    ],
)
def test_bad_trainer_arguments(kwargs: dict[str, Any], match: str) -> None:
    alg, train, test = _setup(DQN_CARTPOLE)
    args: dict[str, Any] = {"max_epochs": 1, "step_per_epoch": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        OffPolicyTrainer(alg, train, test_collector=test, **args)


def test_stop_fn_needs_a_test_collector() -> None:
    alg, train, _ = _setup(DQN_CARTPOLE)
    with pytest.raises(ValueError, match="test_collector"):
        OffPolicyTrainer(alg, train, 1, 10, step_per_collect=10, stop_fn=lambda r: True)


def test_offline_trainer_rejects_an_empty_buffer() -> None:
    alg, _, _ = _setup(DQN_CARTPOLE)
    with pytest.raises(ValueError, match="empty"):
        OfflineTrainer(alg, VectorReplayBuffer(10, 1), max_epochs=1, step_per_epoch=1)


def test_trainers_accept_tianshou_2_parameter_names() -> None:
    """The same run with Tianshou 2.0's names (``OffPolicyTrainerParams``) and tdrl's."""
    import torch

    torch.manual_seed(0)
    alg, train, test = _setup(DQN_CARTPOLE)
    r2 = OffPolicyTrainer(
        alg,
        training_collector=train,
        test_collector=test,
        max_epochs=1,
        epoch_num_steps=40,
        collection_step_num_env_steps=10,
        update_step_num_gradient_steps_per_sample=0.5,
        test_step_num_episodes=2,
        batch_size=16,
        show_progress=False,
        verbose=False,
    ).run()
    torch.manual_seed(0)
    alg, train, test = _setup(DQN_CARTPOLE)
    r1 = OffPolicyTrainer(
        alg,
        train,
        test_collector=test,
        max_epochs=1,
        step_per_epoch=40,
        step_per_collect=10,
        update_per_step=0.5,
        episode_per_test=2,
        batch_size=16,
        show_progress=False,
        verbose=False,
    ).run()
    assert (
        (r1.env_step, r1.gradient_step, r1.best_reward)
        == (r2.env_step, r2.gradient_step, r2.best_reward)
        == (40, 20, r1.best_reward)
    )
    alg, train, test = _setup(PPO_CARTPOLE)
    r3 = OnPolicyTrainer(
        alg,
        training_collector=train,
        max_epochs=1,
        epoch_num_steps=20,
        collection_step_num_env_steps=20,
        update_step_num_repetitions=2,
        batch_size=8,
        show_progress=False,
        verbose=False,
    ).run()
    assert r3.env_step == 20 and r3.gradient_step == 1
    with pytest.raises(TypeError, match=r"both step_per_epoch and its Tianshou 2\.0 name"):
        OffPolicyTrainer(alg, train, max_epochs=1, step_per_epoch=1, epoch_num_steps=1)
