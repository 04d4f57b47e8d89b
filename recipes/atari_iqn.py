"""IQN on Atari (default Pong) with Tianshou's ``examples/atari/atari_iqn.py`` settings.

    python recipes/atari_iqn.py --task BreakoutNoFrameskip-v4 --seed 0
    python recipes/atari_iqn.py --help       # every hyperparameter, with its default

Implicit quantiles: the CNN features times a cosine embedding of sampled fractions tau,
then an MLP to one quantile per action (``tdrl.presets.atari.build_iqn``).
"""

from __future__ import annotations

from common_atari import train_atari

from tdrl.cli import parse_recipe_args
from tdrl.presets.atari import build_iqn

ALGO, TASK = "iqn", "PongNoFrameskip-v4"


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    train_atari(ALGO, args, p, build_iqn)
