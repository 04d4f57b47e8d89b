"""REDQ on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_redq.py`` settings.

    python recipes/mujoco_redq.py --task Hopper-v5 --seed 0
    python recipes/mujoco_redq.py --help       # every hyperparameter, with its default

SAC with an ensemble of ``ensemble_size`` critics: each target takes the min over a random
subset of ``subset_size`` target critics; 20 critic updates per env step (the
update-to-data ratio), the actor updated every ``actor_delay`` of them. One env, a 1M
replay buffer, a random warm-up (at most half of a short run). The defaults are tdrl's
``mujoco`` preset (``tdrl train redq Hopper-v5``): 50 epochs of 5000 steps.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from common import train_off_policy

from tdrl.algorithm.modelfree.redq import REDQ
from tdrl.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import GaussianActor, QCritic

ALGO, TASK = "redq", "Hopper-v5"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space) -> REDQ:
    """Squashed Gaussian actor, an ensemble of Q critics, entropy temperature, algorithm."""
    d = int(np.prod(obs_space.shape))
    a = int(np.prod(act_space.shape))
    policy = SACPolicy(actor=GaussianActor(d, a, p.hidden_sizes), action_space=act_space)
    alpha: float | AutoAlpha = p.alpha
    if p.auto_alpha:
        alpha = AutoAlpha("auto", log_alpha=float(np.log(p.alpha)), optim=p.alpha_lr)
    return REDQ(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=[QCritic(d, a, p.hidden_sizes) for _ in range(p.ensemble_size)],
        critic_optim=p.critic_lr,
        ensemble_size=p.ensemble_size,
        subset_size=p.subset_size,
        tau=p.tau,
        gamma=p.gamma,
        alpha=alpha,
        n_step=p.n_step,
        actor_delay=p.actor_delay,
        target_mode=p.target_mode,
    )


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # seed, envs, build(...), a replay buffer filled by a random warm-up, the off-policy
    # trainer, a final evaluation and tdrl train's summary line (common.py)
    train_off_policy(ALGO, args, p, build, noise=False)
