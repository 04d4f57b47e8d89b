"""A2C on CartPole: synchronous advantage actor-critic, one gradient step per rollout.

    python recipes/classic_a2c.py --task CartPole-v1 --seed 0
    python recipes/classic_a2c.py --help       # every hyperparameter, with its default

Loss: ``-log pi(a|s) * A + vf_coef * (V(s) - R)^2 - ent_coef * H[pi]`` over the whole
rollout, with GAE advantages. The defaults are tdrl's registry preset (``tdrl train a2c
CartPole-v1``).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from common import make_envs, seed_everything, train_on_policy

from tdrl.algorithm.modelfree.a2c import A2C, ActorPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import MLP, DiscreteActor, GaussianActor, VCritic

ALGO, TASK = "a2c", "CartPole-v1"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # environments: training envs explore, test envs measure the policy
    train_envs, test_envs = make_envs(p)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]
    d = int(np.prod(obs_space.shape))

    # actor and critic (ReLU MLPs; optionally one shared trunk), policy and algorithm
    actor: torch.nn.Module
    critic: torch.nn.Module
    if isinstance(act_space, gym.spaces.Discrete) and p.shared_trunk:
        trunk = MLP(d, 0, p.hidden_sizes, torch.nn.ReLU)
        actor = torch.nn.Sequential(trunk, torch.nn.Linear(trunk.output_dim, int(act_space.n)))
        critic = torch.nn.Sequential(trunk, torch.nn.Linear(trunk.output_dim, 1))
    elif isinstance(act_space, gym.spaces.Discrete):
        actor = DiscreteActor(d, int(act_space.n), p.hidden_sizes, activation=torch.nn.ReLU)
        critic = VCritic(d, p.hidden_sizes, activation=torch.nn.ReLU)
    else:
        a = int(np.prod(act_space.shape))
        actor = GaussianActor(d, a, p.hidden_sizes, state_dependent_std=False)
        critic = VCritic(d, p.hidden_sizes)
    policy = ActorPolicy(
        actor=actor, action_space=act_space, deterministic_eval=p.deterministic_eval
    )
    algorithm = A2C(
        policy=policy,
        critic=critic,
        optim=p.lr,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        vf_coef=p.vf_coef,
        ent_coef=p.ent_coef,
        max_grad_norm=p.max_grad_norm,
        return_scaling=p.return_scaling,
    )

    train_on_policy(ALGO, args, p, algorithm, (train_envs, test_envs))


if __name__ == "__main__":
    main()
