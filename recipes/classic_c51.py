"""C51 on CartPole: a distributional Q-network (51 atoms of return probability per action).

    python recipes/classic_c51.py --task CartPole-v1 --seed 0
    python recipes/classic_c51.py --help       # every hyperparameter, with its default

The network outputs, for each action, a softmax over ``num_atoms`` returns evenly spaced on
``[v_min, v_max]``; the loss is the cross-entropy to the projected n-step target
distribution. The defaults are tdrl's registry preset (``tdrl train c51 CartPole-v1``).
"""

from __future__ import annotations

import numpy as np
from common import make_envs, seed_everything, train_off_policy

from tdrl.algorithm.modelfree.c51 import C51, C51Policy
from tdrl.cli import parse_recipe_args
from tdrl.data import VectorReplayBuffer
from tdrl.utils.net_distributional import DistributionalQNet

ALGO, TASK = "c51", "CartPole-v1"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # environments: training envs explore, test envs measure the policy
    train_envs, test_envs = make_envs(p)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]
    d = int(np.prod(obs_space.shape))

    # the distributional Q-network (a softmax over atoms per action), policy and algorithm
    net = DistributionalQNet(
        d, int(act_space.n), p.num_atoms, p.hidden_sizes, softmax=True, dueling=p.dueling
    )
    policy = C51Policy(
        model=net,
        action_space=act_space,
        num_atoms=p.num_atoms,
        v_min=p.v_min,
        v_max=p.v_max,
        eps_training=p.eps_train,
        eps_inference=p.eps_test,
    )
    algorithm = C51(
        policy=policy,
        optim=p.lr,
        gamma=p.gamma,
        n_step=p.n_step,
        target_update_freq=p.target_update_freq,
    )

    # replay buffer and collectors; a random warm-up fills the buffer first
    buffer = VectorReplayBuffer(p.buffer_size, p.training_num)

    train_off_policy(ALGO, args, p, algorithm, buffer, (train_envs, test_envs), noise=True)


if __name__ == "__main__":
    main()
