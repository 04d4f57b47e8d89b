"""Tianshou 2.0's trainer parameter objects and ``algorithm.run_training``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from tdrl.algorithm.optim import GradStep
from tdrl.algorithm.presets import DQN_CARTPOLE, PPO_CARTPOLE
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.trainer import (
    OfflineTrainerParams,
    OffPolicyTrainerParams,
    OnPolicyTrainerParams,
    TrainResult,
)


def _setup(preset: Any) -> tuple[Any, Collector, Collector]:
    train_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    alg = preset.build(train_envs.observation_space[0], train_envs.action_space[0])
    train = Collector(alg, train_envs, VectorReplayBuffer(2000, 2))  # the algorithm, as in 2.0
    test = Collector(alg, test_envs)
    train.reset(seed=0)
    test.reset(seed=1)
    return alg, train, test


def test_off_policy_params_run_the_off_policy_trainer() -> None:
    alg, train, test = _setup(DQN_CARTPOLE)
    train.collect(n_step=64, random=True)
    before = GradStep.taken
    result = alg.run_training(
        OffPolicyTrainerParams(
            training_collector=train,
            test_collector=test,
            max_epochs=1,
            epoch_num_steps=100,
            collection_step_num_env_steps=10,
            update_step_num_gradient_steps_per_sample=0.5,
            test_step_num_episodes=2,
            batch_size=16,
            show_progress=False,
            verbose=False,
        )
    )
    assert isinstance(result, TrainResult)
    assert (result.epoch, result.env_step, result.gradient_step) == (1, 100, 50)
    assert GradStep.taken - before == 50  # one optimizer step per DQN update


def test_on_policy_params_with_episodes_and_score_fn() -> None:
    alg, train, test = _setup(PPO_CARTPOLE)
    scores: list[float] = []

    def score(stats: Any) -> float:
        scores.append(-float(stats.returns_stat.mean))
        return scores[-1]

    result = alg.run_training(
        OnPolicyTrainerParams(
            training_collector=train,
            test_collector=test,
            max_epochs=2,
            epoch_num_steps=40,
            collection_step_num_env_steps=None,
            collection_step_num_episodes=2,
            update_step_num_repetitions=1,
            test_step_num_episodes=2,
            batch_size=32,
            compute_score_fn=score,
            show_progress=False,
            verbose=False,
        )
    )
    assert len(scores) == 3  # the initial test and one per epoch
    assert result.best_score == max(scores)  # judged by the score, not the return
    assert result.best_reward == pytest.approx(-result.best_score)


def test_offline_params_train_from_the_buffer() -> None:
    alg, train, test = _setup(DQN_CARTPOLE)
    train.collect(n_step=200, random=True)
    result = alg.run_training(
        OfflineTrainerParams(
            buffer=train.buffer,
            test_collector=test,
            max_epochs=1,
            epoch_num_steps=5,
            batch_size=8,
            show_progress=False,
            verbose=False,
        )
    )
    assert result.gradient_step == 5


def test_multi_agent_return_reduction_reduces_every_collect() -> None:
    alg, train, test = _setup(DQN_CARTPOLE)
    train.collect(n_step=64, random=True)
    seen: list[np.ndarray] = []

    def reduce(returns: np.ndarray) -> np.ndarray:
        seen.append(np.asarray(returns))
        return np.zeros(len(returns))

    result = alg.run_training(
        OffPolicyTrainerParams(
            training_collector=train,
            test_collector=test,
            max_epochs=1,
            epoch_num_steps=20,
            collection_step_num_env_steps=10,
            test_step_num_episodes=2,
            batch_size=8,
            multi_agent_return_reduction=reduce,
            show_progress=False,
            verbose=False,
        )
    )
    assert seen and result.best_reward == 0.0


def test_params_reject_what_tianshou_rejects() -> None:
    _alg, train, test = _setup(DQN_CARTPOLE)
    with pytest.raises(ValueError, match="stop_fn: needs a test_collector"):
        OffPolicyTrainerParams(training_collector=train, stop_fn=lambda r: True)
    with pytest.raises(ValueError, match="expected exactly one to be set, got 2048 and 4"):
        OffPolicyTrainerParams(training_collector=train, collection_step_num_episodes=4)
    with pytest.raises(ValueError, match="test_in_training: needs a test_collector and a stop"):
        OffPolicyTrainerParams(training_collector=train, test_in_training=True)
    with pytest.raises(ValueError, match="resume_from_log: needs a logger"):
        OffPolicyTrainerParams(training_collector=train, resume_from_log=True)
    with pytest.raises(ValueError, match="test_step_num_episodes: expected >= 1"):
        OffPolicyTrainerParams(
            training_collector=train, test_collector=test, test_step_num_episodes=0
        )


def test_params_of_the_wrong_kind_name_the_right_one() -> None:
    alg, train, _ = _setup(DQN_CARTPOLE)
    with pytest.raises(
        TypeError, match="DQN is an off-policy algorithm; use OffPolicyTrainerParams"
    ):
        alg.run_training(OnPolicyTrainerParams(training_collector=train))
    with pytest.raises(TypeError, match="params: expected OnPolicyTrainerParams"):
        alg.run_training({"max_epochs": 1})


def test_trainer_kwargs_reach_the_trainer() -> None:
    alg, train, _test = _setup(DQN_CARTPOLE)
    train.collect(n_step=64, random=True)
    params = OffPolicyTrainerParams(
        training_collector=train,
        max_epochs=3,
        epoch_num_steps=100,
        collection_step_num_env_steps=10,
        batch_size=8,
        show_progress=False,
        verbose=False,
        trainer_kwargs={"max_env_steps": 30},
    )
    assert alg.run_training(params).env_step == 30
