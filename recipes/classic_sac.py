"""SAC on Pendulum: a squashed Gaussian actor, twin Q critics, an auto-tuned entropy bonus.

    python recipes/classic_sac.py --task Pendulum-v1 --seed 0
    python recipes/classic_sac.py --help       # every hyperparameter, with its default

Critic target: ``r + gamma * (min(Q1', Q2')(s', a') - alpha * log pi(a'|s'))``, ``a' ~ pi``;
actor loss: ``alpha * log pi(a|s) - min(Q1, Q2)(s, a)``; soft target updates (``tau``).
The defaults are tdrl's registry preset (``tdrl train sac Pendulum-v1``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from common import train_off_policy

from tdrl.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import GaussianActor, QCritic

ALGO, TASK = "sac", "Pendulum-v1"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space) -> SAC:
    """Squashed Gaussian actor, twin Q critics (inside SAC), entropy temperature, algorithm."""
    d = int(np.prod(obs_space.shape))
    a = int(np.prod(act_space.shape))
    policy = SACPolicy(actor=GaussianActor(d, a, p.hidden_sizes), action_space=act_space)
    alpha: float | AutoAlpha = p.alpha  # fixed, or tuned towards the target entropy
    if p.auto_alpha:
        alpha = AutoAlpha("auto", log_alpha=float(np.log(p.alpha)), optim=p.alpha_lr)
    return SAC(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),  # SAC makes the second critic a copy
        critic_optim=p.critic_lr,
        tau=p.tau,
        gamma=p.gamma,
        alpha=alpha,
        n_step=p.n_step,
    )


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # seed, envs, build(...), a replay buffer filled by a random warm-up, the off-policy
    # trainer, a final evaluation and tdrl train's summary line (common.py)
    train_off_policy(ALGO, args, p, build, noise=False)
