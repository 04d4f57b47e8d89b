"""QR-DQN on Atari (default Pong) with Tianshou's ``examples/atari/atari_qrdqn.py`` settings.

    python recipes/atari_qrdqn.py --task BreakoutNoFrameskip-v4 --seed 0
    python recipes/atari_qrdqn.py --help       # every hyperparameter, with its default

The Nature CNN with 200 return quantiles per action, trained by the quantile Huber loss
(``tdrl.presets.atari.build_qrdqn``: ``qrdqn_net``, ``QRDQNPolicy``, ``QRDQN``).
"""

from __future__ import annotations

from common_atari import train_atari

from tdrl.cli import parse_recipe_args
from tdrl.presets.atari import build_qrdqn

ALGO, TASK = "qrdqn", "PongNoFrameskip-v4"


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    train_atari(ALGO, args, p, build_qrdqn)
