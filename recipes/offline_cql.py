"""CQL (conservative Q-learning) from a dataset of transitions, tested in the real env.

    tdrl gather sac Pendulum-v1 --out sac-pendulum.hdf5     # an expert's transitions
    python recipes/offline_cql.py --dataset sac-pendulum.hdf5 --seed 0
    python recipes/offline_cql.py --help       # every hyperparameter, with its default

SAC whose critics are pushed down on sampled actions (a logsumexp over random and
policy actions) and up on the dataset's, with a Lagrange-tuned weight.

Defaults: tdrl's preset, as ``tdrl train cql Pendulum-v1 --dataset FILE``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from common import train_offline

from tdrl.algorithm.imitation.cql import CQL, AutoAlpha, SACPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import GaussianActor, QCritic

ALGO, TASK = "cql", "Pendulum-v1"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space, dataset: Any) -> CQL:
    """Squashed Gaussian actor, twin critics (inside CQL), entropy temperature,
    algorithm."""
    d = int(np.prod(obs_space.shape))

    a = int(np.prod(act_space.shape))
    policy = SACPolicy(
        actor=GaussianActor(d, a, p.hidden_sizes),
        action_space=act_space,
        observation_space=obs_space,
    )
    alpha: float | AutoAlpha = p.alpha
    if p.auto_alpha:
        alpha = AutoAlpha("auto", log_alpha=0.0, optim=p.alpha_lr)
    return CQL(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),
        critic_optim=p.critic_lr,
        cql_alpha_lr=p.cql_alpha_lr,
        cql_weight=p.cql_weight,
        tau=p.tau,
        gamma=p.gamma,
        alpha=alpha,
        temperature=p.temperature,
        with_lagrange=p.with_lagrange,
        lagrange_threshold=p.lagrange_threshold,
        num_repeat_actions=p.num_repeat_actions,
        alpha_min=p.alpha_min,
        alpha_max=p.alpha_max,
        max_grad_norm=p.max_grad_norm,
        calibrated=p.calibrated,
    )


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__, dataset=True)
    # seed, test envs, the --dataset, build(...), the offline trainer, a final evaluation
    # and tdrl train's summary line (common.py)
    train_offline(ALGO, args, p, build)
