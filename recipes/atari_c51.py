"""C51 on Atari (default Pong) with Tianshou's ``examples/atari/atari_c51.py`` settings.

    python recipes/atari_c51.py --task BreakoutNoFrameskip-v4 --seed 0
    python recipes/atari_c51.py --help       # every hyperparameter, with its default

The Nature CNN with a head of 51 atoms of return probability per action on [-10, 10]
(``tdrl.presets.atari.build_c51``: ``c51_net``, ``C51Policy``, ``C51``).
"""

from __future__ import annotations

from common_atari import train_atari

from tdrl.cli import parse_recipe_args
from tdrl.presets.atari import build_c51

ALGO, TASK = "c51", "PongNoFrameskip-v4"


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    train_atari(ALGO, args, p, build_c51)
