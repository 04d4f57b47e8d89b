"""DQN on CartPole: a Q-network, epsilon-greedy exploration, n-step targets, a target net.

    python recipes/classic_dqn.py --task CartPole-v1 --seed 0
    python recipes/classic_dqn.py --help       # every hyperparameter, with its default

The defaults are tdrl's registry preset for the task (``tdrl train dqn CartPole-v1`` trains
the same thing); any flag changes one (``--lr 3e-4 --hidden-sizes 64 64``).
"""

from __future__ import annotations

import numpy as np
from common import make_envs, seed_everything, train_off_policy

from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.cli import parse_recipe_args
from tdrl.data import VectorReplayBuffer
from tdrl.utils.net import QNet

ALGO, TASK = "dqn", "CartPole-v1"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # environments: training envs explore, test envs measure the policy
    train_envs, test_envs = make_envs(p)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]
    d = int(np.prod(obs_space.shape))

    # the Q-network, the epsilon-greedy policy and the algorithm (Adam, n-step, target net)
    net = QNet(d, int(act_space.n), p.hidden_sizes, dueling=p.dueling)
    policy = DQNPolicy(
        model=net, action_space=act_space, eps_training=p.eps_train, eps_inference=p.eps_test
    )
    algorithm = DQN(
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
