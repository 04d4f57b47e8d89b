"""PPO on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_ppo.py`` settings.

    python recipes/mujoco_ppo.py --task Hopper-v5 --seed 0
    python recipes/mujoco_ppo.py --task HalfCheetah-v5 --epochs 10
    python recipes/mujoco_ppo.py --help       # every hyperparameter, with its default

Clipped surrogate with value clipping, GAE, advantages recomputed before each pass,
normalized observations and a linearly decaying learning rate. The defaults are tdrl's
``mujoco`` preset (``tdrl train ppo Hopper-v5``): 100 epochs of 30k steps.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from common import make_normalized_envs, train_on_policy

from tdrl.algorithm import AdamOptimizerFactory
from tdrl.algorithm.modelfree.ppo import PPO
from tdrl.cli import parse_recipe_args
from tdrl.presets.mujoco import lr_decay_updates, mujoco_actor_critic
from tdrl.utils.schedule import linear_lr_decay

ALGO, TASK = "ppo", "Hopper-v5"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space) -> PPO:
    """Tianshou's MuJoCo networks from the library's builder (tanh MLPs, orthogonal init,
    the mean's last layer x 0.01, a free log std at -0.5), the optimizer and the algorithm."""
    policy, critic = mujoco_actor_critic(p, obs_space, act_space)
    optim = AdamOptimizerFactory(lr=p.lr)  # one Adam for the actor and the critic
    if p.lr_decay:  # linearly to 0 over the run's updates (one per collect)
        optim = optim.with_lr_scheduler(linear_lr_decay(lr_decay_updates(p)))
    return PPO(
        policy=policy,
        critic=critic,
        optim=optim,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        eps_clip=p.eps_clip,
        dual_clip=p.dual_clip,
        value_clip=p.value_clip,
        advantage_normalization=p.advantage_normalization,
        recompute_advantage=p.recompute_advantage,
        vf_coef=p.vf_coef,
        ent_coef=p.ent_coef,
        max_grad_norm=p.max_grad_norm,
        return_scaling=p.return_scaling,
    )


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # observations normalized by the training envs' running mean/std, shared frozen
    train_on_policy(ALGO, args, p, build, envs=make_normalized_envs)
