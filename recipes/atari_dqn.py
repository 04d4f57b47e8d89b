"""DQN on Atari (default Pong) with Tianshou's ``examples/atari/atari_dqn.py`` settings.

    python recipes/atari_dqn.py --task PongNoFrameskip-v4 --seed 0
    python recipes/atari_dqn.py --task BreakoutNoFrameskip-v4 --epochs 10
    python recipes/atari_dqn.py --help       # every hyperparameter, with its default

The Nature CNN, 3-step targets, a target net synced every 500 gradient
steps.

The defaults are tdrl's ``atari`` preset (``tdrl train dqn PongNoFrameskip-v4``): 10 envs,
100 epochs of 100k env steps, 0.1 gradient steps per env step. ``build`` below is what
``tdrl.presets.atari.build_dqn`` builds; the other Atari recipes call their builders and
share the rest (``common_atari.train_atari``: envs, frame buffer, epsilon decay, trainer).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from common_atari import train_atari

from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net_atari import dqn_net

ALGO, TASK = "dqn", "PongNoFrameskip-v4"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space) -> DQN:
    """The Nature CNN with a Q head, the epsilon-greedy policy and DQN."""
    scale = 255.0 if p.scale_obs else None  # raw 0..255 pixels by default
    net = dqn_net(
        obs_space.shape,
        int(act_space.n),
        scale=scale,
        hidden_sizes=p.hidden_sizes,
        dueling=p.dueling,
    )
    # the training epsilon starts at the schedule's end; train_atari decays it from eps_train
    policy = DQNPolicy(
        model=net,
        action_space=act_space,
        eps_training=p.eps_train_final,
        eps_inference=p.eps_test,
    )
    return DQN(
        policy=policy,
        optim=p.lr,
        gamma=p.gamma,
        n_step=p.n_step,
        target_update_freq=p.target_update_freq,
    )


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    train_atari(ALGO, args, p, build)
