"""PPO on CartPole: a categorical actor and a value critic, clipped surrogate, GAE.

    python recipes/classic_ppo.py --task CartPole-v1 --seed 0
    python recipes/classic_ppo.py --help       # every hyperparameter, with its default

Each update: collect ``step_per_collect`` steps, compute GAE advantages, then
``repeat_per_collect`` passes of minibatches over the rollout. A ``Box`` action space gets a
Gaussian actor. The defaults are tdrl's registry preset (``tdrl train ppo CartPole-v1``;
``tdrl train ppo Pendulum-v1`` has its own preset and network initialisation).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from common import train_on_policy

from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import DiscreteActor, GaussianActor, VCritic

ALGO, TASK = "ppo", "CartPole-v1"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space) -> PPO:
    """Actor (categorical or Gaussian), critic, policy and algorithm (one Adam for both)."""
    d = int(np.prod(obs_space.shape))
    actor: torch.nn.Module
    if isinstance(act_space, gym.spaces.Discrete):
        actor = DiscreteActor(d, int(act_space.n), p.hidden_sizes)
    else:
        a = int(np.prod(act_space.shape))
        actor = GaussianActor(d, a, p.hidden_sizes, state_dependent_std=False)
    policy = ActorPolicy(
        actor=actor, action_space=act_space, deterministic_eval=p.deterministic_eval
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


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # seed, envs, build(...), collectors over one rollout at a time, the on-policy trainer,
    # a final evaluation and tdrl train's summary line (common.py)
    train_on_policy(ALGO, args, p, build)
