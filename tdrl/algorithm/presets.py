"""Builders for the registry's presets, and :func:`make_algorithm`.

The presets themselves (plain data) live in :mod:`tdrl.registry`, keyed by algorithm and
task family; each entry names its builder here by a dotted path. The ``classic`` presets
start from Tianshou's own test configurations (``test/discrete/test_dqn.py``,
``test_ppo_discrete.py``, ``test/continuous/test_sac_with_il.py``), checked with tdrl's
collector and a minimal Tianshou-style loop (3 seeds, 20 test episodes after each epoch of
``step_per_epoch`` steps; the thresholds were first reached after):

==========  =========  =====================================  ===============================
preset      threshold  env steps (seeds 0, 1, 2)              notes
==========  =========  =====================================  ===============================
DQN         195        9k, 9k, 8k (epochs of 1k steps)        + 640 random warm-up steps
PPO         195        4k, 4k, 4k (epochs of 2k steps)        2000 steps per collect, 10 epochs
SAC         -250       3k, 3k, 3k (epochs of 1k steps)        + 1000 random warm-up steps
==========  =========  =====================================  ===============================

SAC uses one gradient step per env step (Tianshou's test uses 0.1, which needed 38k env
steps and more gradient steps in total on seed 0). The DQN and PPO ``step_per_epoch``
values are Tianshou's; smaller epochs only test more often. The ``mujoco`` presets (SAC's
included) live in :mod:`tdrl.presets.mujoco`.

>>> alg = make_algorithm("dqn", "CartPole-v1")
>>> type(alg).__name__, alg.n_step, DQN_CARTPOLE.trainer_kwargs()["update_per_step"]
('DQN', 3, 0.1)
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tdrl import registry
from tdrl.algorithm.base import Algorithm
from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy
from tdrl.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy
from tdrl.registry import DQNPreset, PPOPreset, Preset, PresetError, SACPreset
from tdrl.utils.net import DiscreteActor, GaussianActor, QCritic, QNet, VCritic

__all__ = [
    "DQN_CARTPOLE",
    "PPO_CARTPOLE",
    "SAC_PENDULUM",
    "DQNPreset",
    "PPOPreset",
    "SACPreset",
    "build_dqn",
    "build_ppo",
    "build_sac",
    "check_action_space",
    "make_algorithm",
]


def _obs_dim(space: gym.Space) -> int:
    return int(np.prod(space.shape))  # type: ignore[arg-type]


def build_dqn(p: DQNPreset, observation_space: gym.Space, action_space: gym.Space) -> DQN:
    """Create the Q-network, policy and algorithm."""
    n = int(action_space.n)  # type: ignore[attr-defined]
    model = QNet(_obs_dim(observation_space), n, p.hidden_sizes, dueling=p.dueling)
    policy = DQNPolicy(
        model=model,
        action_space=action_space,
        eps_training=p.eps_train,
        eps_inference=p.eps_test,
    )
    return DQN(
        policy=policy,
        optim=p.lr,
        gamma=p.gamma,
        n_step=p.n_step,
        target_update_freq=p.target_update_freq,
    )


def build_ppo(p: PPOPreset, observation_space: gym.Space, action_space: gym.Space) -> PPO:
    """Create the actor (categorical for ``Discrete``, Gaussian for ``Box``), critic, policy."""
    d = _obs_dim(observation_space)
    actor: torch.nn.Module
    if isinstance(action_space, gym.spaces.Discrete):
        actor = DiscreteActor(d, int(action_space.n), p.hidden_sizes)
    else:
        a = int(np.prod(action_space.shape))  # type: ignore[arg-type]
        actor = GaussianActor(d, a, p.hidden_sizes, state_dependent_std=False)
    policy = ActorPolicy(
        actor=actor, action_space=action_space, deterministic_eval=p.deterministic_eval
    )
    return PPO(
        policy=policy,
        critic=VCritic(d, p.hidden_sizes),
        optim=p.lr,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        eps_clip=p.eps_clip,
        vf_coef=p.vf_coef,
        ent_coef=p.ent_coef,
        max_grad_norm=p.max_grad_norm,
        advantage_normalization=p.advantage_normalization,
        value_clip=p.value_clip,
        return_scaling=p.return_scaling,
    )


def build_sac(p: SACPreset, observation_space: gym.Space, action_space: gym.Space) -> SAC:
    """Create the actor, twin critics, policy and algorithm."""
    d, a = _obs_dim(observation_space), int(np.prod(action_space.shape))  # type: ignore[arg-type]
    policy = SACPolicy(actor=GaussianActor(d, a, p.hidden_sizes), action_space=action_space)
    alpha: float | AutoAlpha = p.alpha
    if p.auto_alpha:
        alpha = AutoAlpha("auto", log_alpha=float(np.log(p.alpha)), optim=p.alpha_lr)
    return SAC(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),
        critic_optim=p.critic_lr,
        tau=p.tau,
        gamma=p.gamma,
        alpha=alpha,
        n_step=p.n_step,
    )


_SPACES = {
    "discrete": ((gym.spaces.Discrete,), "a Discrete"),
    "continuous": ((gym.spaces.Box,), "a Box"),
    "any": ((gym.spaces.Discrete, gym.spaces.Box), "a Discrete or Box"),
}


def check_action_space(algo: str, task: str, action_space: gym.Space) -> None:
    """Raise a one-line :class:`~tdrl.registry.PresetError` if ``algo`` cannot act in it.

    >>> check_action_space(  # doctest: +ELLIPSIS
    ...     "dqn", "Pendulum-v1", gym.spaces.Box(-2.0, 2.0, (1,)))
    Traceback (most recent call last):
    ...
    tdrl.registry.PresetError: dqn needs a Discrete action space; Pendulum-v1 has Box(...)
    """
    kinds, text = _SPACES[registry.entry(algo, task).action_space]
    if not isinstance(action_space, kinds):
        raise PresetError(f"{algo} needs {text} action space; {task} has {action_space}")


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

    :param preset: the preset to build (default: ``tdrl.registry.preset(algo, task)``).
    :param observation_space: / :param action_space: the spaces to build for (default:
        those of ``gymnasium.make(task)``).
    :param device: build the networks on this device (target networks share storage with
        their source, so they are not moved afterwards).
    :param dataset: a replay buffer of transitions, for the algorithms whose registry entry
        ``needs_dataset`` (offline and imitation: BC, CQL, GAIL, ...); passed to the builder
        as ``dataset=``. Such an algorithm without one is a :class:`PresetError`.

    This is what ``tdrl train ALGO TASK`` trains. An action space the algorithm cannot
    handle is a one-line :class:`~tdrl.registry.PresetError`.
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


DQN_CARTPOLE: DQNPreset = registry.preset("dqn", "CartPole-v1")  # type: ignore[assignment]
"""DQN on CartPole-v1 (``tdrl.registry.preset("dqn", "CartPole-v1")``)."""
PPO_CARTPOLE: PPOPreset = registry.preset("ppo", "CartPole-v1")  # type: ignore[assignment]
"""PPO on CartPole-v1."""
SAC_PENDULUM: SACPreset = registry.preset("sac", "Pendulum-v1")  # type: ignore[assignment]
"""SAC on Pendulum-v1."""
