"""Behavior cloning from a dataset of transitions, tested in the real env.

    tdrl gather sac Pendulum-v1 --out sac-pendulum.hdf5     # an expert's transitions
    python recipes/offline_bc.py --dataset sac-pendulum.hdf5 --seed 0
    python recipes/offline_bc.py --help       # every hyperparameter, with its default

Supervised learning of the dataset's actions: mean squared error for a Box (a
deterministic actor), cross-entropy for a Discrete action space (``--task CartPole-v1``
with ``tdrl gather dqn CartPole-v1`` data).

Defaults: tdrl's preset, as ``tdrl train bc Pendulum-v1 --dataset FILE``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from common import train_offline
from torch import nn

from tdrl.algorithm.imitation.bc import BC, ImitationPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import MLP, DeterministicActor

ALGO, TASK = "bc", "Pendulum-v1"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space, dataset: Any) -> BC:
    """The actor (logits for Discrete, a tanh-bounded action for Box), policy,
    algorithm."""
    d = int(np.prod(obs_space.shape))

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
    return BC(policy=policy, optim=p.lr)


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__, dataset=True)
    # seed, test envs, the --dataset, build(...), the offline trainer, a final evaluation
    # and tdrl train's summary line (common.py)
    train_offline(ALGO, args, p, build)
