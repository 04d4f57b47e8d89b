"""TD3 on Pendulum: a deterministic actor, twin critics, target smoothing, delayed actor.

    python recipes/classic_td3.py --task Pendulum-v1 --seed 0
    python recipes/classic_td3.py --help       # every hyperparameter, with its default

Critic target: ``r + gamma * min(Q1', Q2')(s', clip(mu'(s') + clip(eps, -c, c)))``; the
actor maximises ``Q1(s, mu(s))`` every ``update_actor_freq`` critic steps. The defaults
are tdrl's registry preset (``tdrl train td3 Pendulum-v1``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from common import train_off_policy

from tdrl.algorithm.exploration import GaussianNoise, OUNoise
from tdrl.algorithm.modelfree.td3 import TD3, ContinuousDeterministicPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import DeterministicActor, QCritic

ALGO, TASK = "td3", "Pendulum-v1"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space) -> TD3:
    """Deterministic actor with Gaussian exploration noise, twin critics, algorithm."""
    d = int(np.prod(obs_space.shape))
    a = int(np.prod(act_space.shape))
    policy = ContinuousDeterministicPolicy(
        actor=DeterministicActor(d, a, p.hidden_sizes),
        action_space=act_space,
        exploration_noise=(
            GaussianNoise(sigma=p.noise_sigma)
            if p.exploration_noise == "gaussian"
            else OUNoise(sigma=p.noise_sigma)
        ),
    )
    return TD3(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),
        critic_optim=p.critic_lr,
        critic2=QCritic(d, a, p.hidden_sizes),
        tau=p.tau,
        gamma=p.gamma,
        policy_noise=p.policy_noise,  # target policy smoothing
        noise_clip=p.noise_clip,
        update_actor_freq=p.update_actor_freq,  # delayed actor updates
        n_step=p.n_step,
    )


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # seed, envs, build(...), a replay buffer filled by a random warm-up, the off-policy
    # trainer, a final evaluation and tdrl train's summary line (common.py)
    train_off_policy(ALGO, args, p, build, noise=True)
