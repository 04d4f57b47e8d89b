"""FQF on Atari (default Pong) with Tianshou's ``examples/atari/atari_fqf.py`` settings.

    python recipes/atari_fqf.py --task BreakoutNoFrameskip-v4 --seed 0
    python recipes/atari_fqf.py --help       # every hyperparameter, with its default

Fully parameterized quantiles: a fraction proposal network (RMSprop) picks the
fractions, IQN's quantile function values them (``tdrl.presets.atari.build_fqf``).
"""

from __future__ import annotations

from common_atari import train_atari

from tdrl.cli import parse_recipe_args
from tdrl.presets.atari import build_fqf

ALGO, TASK = "fqf", "PongNoFrameskip-v4"


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    train_atari(ALGO, args, p, build_fqf)
