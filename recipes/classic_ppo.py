"""PPO on CartPole: a categorical actor and a value critic, clipped surrogate, GAE.

    python recipes/classic_ppo.py --task CartPole-v1 --seed 0
    python recipes/classic_ppo.py --help       # every hyperparameter, with its default

Each update: collect ``step_per_collect`` steps, compute GAE advantages, then
``repeat_per_collect`` passes of minibatches over the rollout. A ``Box`` action space gets a
Gaussian actor. The defaults are tdrl's registry preset (``tdrl train ppo CartPole-v1``;
``tdrl train ppo Pendulum-v1`` has its own preset and network initialisation).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from common import make_envs, seed_everything, train_on_policy

from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import DiscreteActor, GaussianActor, VCritic

ALGO, TASK = "ppo", "CartPole-v1"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # environments: training envs explore, test envs measure the policy
    train_envs, test_envs = make_envs(p)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]
    d = int(np.prod(obs_space.shape))

    # actor (categorical or Gaussian), critic, policy and algorithm (one Adam for both)
    actor: torch.nn.Module
    if isinstance(act_space, gym.spaces.Discrete):
        actor = DiscreteActor(d, int(act_space.n), p.hidden_sizes)
    else:
        a = int(np.prod(act_space.shape))
        actor = GaussianActor(d, a, p.hidden_sizes, state_dependent_std=False)
    policy = ActorPolicy(
        actor=actor, action_space=act_space, deterministic_eval=p.deterministic_eval
    )
    algorithm = PPO(
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

    train_on_policy(ALGO, args, p, algorithm, (train_envs, test_envs))


if __name__ == "__main__":
    main()
