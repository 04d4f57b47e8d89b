"""Tested hyperparameters: DQN and PPO on CartPole-v1, SAC on Pendulum-v1.

Each preset is a frozen dataclass with the algorithm's hyperparameters, the data-collection
and trainer settings, and :meth:`build` to create the algorithm for given spaces. They start
from Tianshou's own test configurations (``test/discrete/test_dqn.py``,
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
values are Tianshou's; smaller epochs only test more often.

>>> import gymnasium as gym
>>> env = gym.make("CartPole-v1")
>>> alg = DQN_CARTPOLE.build(env.observation_space, env.action_space)
>>> type(alg).__name__, alg.n_step, DQN_CARTPOLE.trainer_kwargs()["update_per_step"]
('DQN', 3, 0.1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy
from tdrl.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy
from tdrl.utils.net import DiscreteActor, GaussianActor, QCritic, QNet, VCritic

__all__ = ["DQN_CARTPOLE", "PPO_CARTPOLE", "SAC_PENDULUM", "DQNPreset", "PPOPreset", "SACPreset"]


def _obs_dim(space: gym.Space) -> int:
    return int(np.prod(space.shape))  # type: ignore[arg-type]


def _off_policy_kwargs(p: DQNPreset | SACPreset) -> dict[str, Any]:
    return {
        "max_epochs": p.max_epochs,
        "step_per_epoch": p.step_per_epoch,
        "step_per_collect": p.step_per_collect,
        "update_per_step": p.update_per_step,
        "batch_size": p.batch_size,
        "episode_per_test": p.test_num,
    }


@dataclass(frozen=True)
class DQNPreset:
    """DQN hyperparameters and trainer settings (defaults: CartPole-v1).

    Warm up with ``collect(n_step=warmup_steps, random=True)``; collect with
    ``exploration_noise=True`` for both the training and the test collector (the policy
    uses ``eps_train`` inside training steps and ``eps_test`` outside).
    """

    task: str = "CartPole-v1"
    threshold: float = 195.0
    hidden_sizes: tuple[int, ...] = (128, 128, 128)
    dueling: bool = False
    lr: float = 1e-3
    gamma: float = 0.9
    n_step: int = 3
    target_update_freq: int = 320
    eps_train: float = 0.1
    eps_test: float = 0.05
    buffer_size: int = 20_000
    training_num: int = 10
    test_num: int = 100
    warmup_steps: int = 640
    max_epochs: int = 10
    step_per_epoch: int = 10_000
    step_per_collect: int = 10
    update_per_step: float = 0.1
    batch_size: int = 64

    def build(self, observation_space: gym.Space, action_space: gym.Space) -> DQN:
        """Create the network, policy and algorithm."""
        n = int(action_space.n)  # type: ignore[attr-defined]
        model = QNet(_obs_dim(observation_space), n, self.hidden_sizes, dueling=self.dueling)
        policy = DQNPolicy(
            model=model,
            action_space=action_space,
            eps_training=self.eps_train,
            eps_inference=self.eps_test,
        )
        return DQN(
            policy=policy,
            optim=self.lr,
            gamma=self.gamma,
            n_step=self.n_step,
            target_update_freq=self.target_update_freq,
        )

    def trainer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for an off-policy trainer."""
        return _off_policy_kwargs(self)


@dataclass(frozen=True)
class PPOPreset:
    """PPO hyperparameters and trainer settings (defaults: CartPole-v1)."""

    task: str = "CartPole-v1"
    threshold: float = 195.0
    hidden_sizes: tuple[int, ...] = (64, 64)
    lr: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    eps_clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    advantage_normalization: bool = False
    value_clip: bool = False
    return_scaling: bool = False
    deterministic_eval: bool = True
    buffer_size: int = 20_000
    training_num: int = 20
    test_num: int = 100
    max_epochs: int = 10
    step_per_epoch: int = 50_000
    step_per_collect: int = 2000
    repeat_per_collect: int = 10
    batch_size: int = 64

    def build(self, observation_space: gym.Space, action_space: gym.Space) -> PPO:
        """Create the actor, critic, policy and algorithm."""
        d, n = _obs_dim(observation_space), int(action_space.n)  # type: ignore[attr-defined]
        policy = ActorPolicy(
            actor=DiscreteActor(d, n, self.hidden_sizes),
            action_space=action_space,
            deterministic_eval=self.deterministic_eval,
        )
        return PPO(
            policy=policy,
            critic=VCritic(d, self.hidden_sizes),
            optim=self.lr,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            eps_clip=self.eps_clip,
            vf_coef=self.vf_coef,
            ent_coef=self.ent_coef,
            max_grad_norm=self.max_grad_norm,
            advantage_normalization=self.advantage_normalization,
            value_clip=self.value_clip,
            return_scaling=self.return_scaling,
        )

    def trainer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for an on-policy trainer."""
        return {
            "max_epochs": self.max_epochs,
            "step_per_epoch": self.step_per_epoch,
            "step_per_collect": self.step_per_collect,
            "repeat_per_collect": self.repeat_per_collect,
            "batch_size": self.batch_size,
            "episode_per_test": self.test_num,
        }


@dataclass(frozen=True)
class SACPreset:
    """SAC hyperparameters and trainer settings (defaults: Pendulum-v1).

    Warm up with ``collect(n_step=warmup_steps, random=True)``.
    """

    task: str = "Pendulum-v1"
    threshold: float = -250.0
    hidden_sizes: tuple[int, ...] = (128, 128)
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.005
    auto_alpha: bool = True
    alpha: float = 0.2
    alpha_lr: float = 3e-4
    n_step: int = 1
    buffer_size: int = 20_000
    training_num: int = 10
    test_num: int = 10
    warmup_steps: int = 1000
    max_epochs: int = 20
    step_per_epoch: int = 1000
    step_per_collect: int = 10
    update_per_step: float = 1.0
    batch_size: int = 128

    def build(self, observation_space: gym.Space, action_space: gym.Space) -> SAC:
        """Create the actor, twin critics, policy and algorithm."""
        d, a = _obs_dim(observation_space), int(np.prod(action_space.shape))  # type: ignore[arg-type]
        policy = SACPolicy(actor=GaussianActor(d, a, self.hidden_sizes), action_space=action_space)
        alpha: float | AutoAlpha = self.alpha
        if self.auto_alpha:
            alpha = AutoAlpha("auto", log_alpha=float(np.log(self.alpha)), optim=self.alpha_lr)
        return SAC(
            policy=policy,
            policy_optim=self.actor_lr,
            critic=QCritic(d, a, self.hidden_sizes),
            critic_optim=self.critic_lr,
            tau=self.tau,
            gamma=self.gamma,
            alpha=alpha,
            n_step=self.n_step,
        )

    def trainer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for an off-policy trainer."""
        return _off_policy_kwargs(self)


DQN_CARTPOLE = DQNPreset()
"""DQN on CartPole-v1."""
PPO_CARTPOLE = PPOPreset()
"""PPO on CartPole-v1."""
SAC_PENDULUM = SACPreset()
"""SAC on Pendulum-v1."""
