"""Build a registered preset's algorithm: :func:`make_algorithm` and :func:`check_action_space`.

The presets themselves (plain data) live in the other modules of :mod:`tdrl.presets`, keyed
by algorithm and task family in :mod:`tdrl.presets.registry`; each entry names its builder
by a dotted path. This module imports torch and gymnasium (the rest of the package does
not until a builder is called).

>>> alg = make_algorithm("dqn", "CartPole-v1")
>>> type(alg).__name__, alg.n_step
('DQN', 3)
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import torch

import tdrl.presets.registry as registry
from tdrl.errors import PresetError
from tdrl.presets.registry import Preset

if TYPE_CHECKING:
    from tdrl.algorithm.algorithm_base import Algorithm

__all__ = ["check_action_space", "make_algorithm"]


def check_action_space(algo: str, task: str, action_space: gym.Space) -> None:
    """Raise a one-line :class:`~tdrl.errors.PresetError` if ``algo`` cannot act in it.

    >>> check_action_space(  # doctest: +ELLIPSIS
    ...     "dqn", "Pendulum-v1", gym.spaces.Box(-2.0, 2.0, (1,)))
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: dqn needs a Discrete action space; Pendulum-v1 has Box(...)
    """
    registry.check_action_space(algo, task, action_space)


def make_algorithm(
    algo: str,
    task: str,
    preset: Preset | None = None,
    *,
    observation_space: gym.Space | None = None,
    action_space: gym.Space | None = None,
    device: str | torch.device | None = None,
    dataset: Any = None,
) -> Algorithm:
    """The registry's preset algorithm for ``algo``, built for gymnasium id ``task``.

    :param preset: the preset to build (default: ``tdrl.presets.preset(algo, task)``).
    :param observation_space: / :param action_space: the spaces to build for (default:
        those of ``gymnasium.make(task)``).
    :param device: build the networks on this device (target networks share storage with
        their source, so they are not moved afterwards).
    :param dataset: a replay buffer of transitions, for the algorithms whose registry entry
        ``needs_dataset`` (offline and imitation: BC, CQL, GAIL, ...); passed to the builder
        as ``dataset=``. Such an algorithm without one is a :class:`PresetError`.

    This is what ``tdrl train ALGO TASK`` trains. An action space the algorithm cannot
    handle is a one-line :class:`~tdrl.errors.PresetError`.
    """
    p = registry.preset(algo, task) if preset is None else preset
    if p.algo != algo:
        raise PresetError(f"preset: expected a {algo} preset, got a {p.algo} preset")
    if observation_space is None or action_space is None:
        env = registry.entry(algo, task).make_env(task, p)
        if observation_space is None:
            observation_space = env.observation_space
        if action_space is None:
            action_space = env.action_space
        env.close()
    check_action_space(algo, task, action_space)
    spec = registry.entry(algo, task)
    build = spec.builder_fn()
    registry.check_dataset(algo, spec, dataset is not None)
    kwargs: dict[str, Any] = {"dataset": dataset} if spec.needs_dataset else {}
    with torch.device(device) if device is not None else nullcontext():
        alg: Algorithm = build(p, observation_space, action_space, **kwargs)
    return alg
