"""Tianshou 2.0's names work in tdrl: class aliases and constructor argument names."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

import tdrl.algorithm as A


def _policy() -> A.DQNPolicy:
    return A.DiscreteQLearningPolicy(
        model=torch.nn.Linear(4, 2), action_space=gym.spaces.Discrete(2)
    )


def test_class_aliases_are_the_tdrl_classes() -> None:
    assert A.DiscreteQLearningPolicy is A.DQNPolicy
    assert A.RainbowDQN is A.Rainbow
    assert A.DiscreteActorPolicy is A.ActorPolicy
    assert set(A.ALIASES) <= set(A.__all__)


def test_n_step_return_horizon_is_n_step() -> None:
    assert A.DQN(policy=_policy(), n_step_return_horizon=3).n_step == 3


def test_every_algorithm_with_n_step_accepts_the_2_0_name() -> None:
    import inspect

    for name in A.__all__:
        obj = getattr(A, name)
        if inspect.isclass(obj) and issubclass(obj, A.Algorithm):
            params = inspect.signature(obj.__init__).parameters
            if "n_step" in params:
                assert hasattr(obj.__init__, "__wrapped__"), name


def test_both_names_is_an_error_naming_them() -> None:
    with pytest.raises(
        TypeError, match=r"n_step= and its Tianshou 2\.0 name n_step_return_horizon="
    ):
        A.DQN(policy=_policy(), n_step=2, n_step_return_horizon=3)


def test_alias_reaches_subclasses_without_their_own_init() -> None:
    class MyDQN(A.DQN):
        pass

    assert MyDQN(policy=_policy(), n_step_return_horizon=4).n_step == 4
