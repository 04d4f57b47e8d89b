"""SAC on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_sac.py`` settings.

    python recipes/mujoco_sac.py --task Hopper-v5 --seed 0
    python recipes/mujoco_sac.py --help       # every hyperparameter, with its default

Squashed Gaussian actor, twin Q critics (ReLU MLPs 256-256), a fixed entropy temperature
``alpha`` (``--auto-alpha`` tunes it).

``classic_sac.py`` with tdrl's ``mujoco`` preset (``tdrl train sac Hopper-v5``): 50 epochs
of 5000 steps, one env, a 1M replay buffer.
"""

from __future__ import annotations

from classic_sac import ALGO, build  # the same networks: the preset sets the numbers
from common import train_off_policy

from tdrl.cli import parse_recipe_args

TASK = "Hopper-v5"

if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # seed, envs, build(...), a replay buffer filled by a random warm-up, the off-policy
    # trainer, a final evaluation and tdrl train's summary line (common.py)
    train_off_policy(ALGO, args, p, build, noise=False)
