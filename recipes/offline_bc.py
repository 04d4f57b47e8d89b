"""Behavior cloning from a dataset of transitions, tested in the real env.

    tdrl gather sac Pendulum-v1 --out sac-pendulum.hdf5     # an expert's transitions
    python recipes/offline_bc.py --dataset sac-pendulum.hdf5 --seed 0
    python recipes/offline_bc.py --help       # every hyperparameter, with its default

Supervised learning of the dataset's actions: mean squared error for a Box (a
deterministic actor), cross-entropy for a Discrete action space (``--task CartPole-v1``
with ``tdrl gather dqn CartPole-v1`` data).

``--dataset`` is an HDF5 replay buffer (``tdrl gather``, Tianshou's or a D4RL-style flat
file) or ``minari:NAME``. The defaults are tdrl's registry preset for the task (``tdrl
train bc Pendulum-v1 --dataset FILE`` trains the same thing).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from common import load_offline, seed_everything, train_offline
from torch import nn

from tdrl.algorithm.imitation.bc import BC, ImitationPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import MLP, DeterministicActor

ALGO, TASK = "bc", "Pendulum-v1"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__, dataset=True)
    seed_everything(args.seed)

    # the dataset to learn from (a ReplayBuffer of transitions), test envs to measure the
    # policy in, and their spaces (a one-line error if the dataset does not fit them)
    dataset, test_envs, obs_space, act_space = load_offline(args, p)
    d = int(np.prod(obs_space.shape))

    # the actor (logits for Discrete, a tanh-bounded action for Box), policy, algorithm
    actor: nn.Module
    if isinstance(act_space, gym.spaces.Discrete):
        actor = MLP(d, int(act_space.n), p.hidden_sizes, output_activation=None)
        if p.output == "probs":
            actor = nn.Sequential(actor, nn.Softmax(dim=-1))
    else:
        actor = DeterministicActor(d, int(np.prod(act_space.shape)), p.hidden_sizes)
    policy = ImitationPolicy(
        actor=actor,
        action_space=act_space,
        observation_space=obs_space,
        output=p.output,
        action_scaling=isinstance(act_space, gym.spaces.Box),
    )
    algorithm = BC(policy=policy, optim=p.lr)

    train_offline(ALGO, args, p, algorithm, dataset, test_envs)


if __name__ == "__main__":
    main()
