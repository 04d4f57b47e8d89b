"""TD3 on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_td3.py`` settings.

    python recipes/mujoco_td3.py --task Hopper-v5 --seed 0
    python recipes/mujoco_td3.py --help       # every hyperparameter, with its default

Deterministic actor with Gaussian exploration noise, twin critics, target policy
smoothing and a delayed actor (ReLU MLPs 256-256).

The same script as ``classic_td3.py``: the ``mujoco`` preset (``tdrl train td3
Hopper-v5``) sets the numbers (one env, one env step per collect and one gradient step
per env step, a 1M replay buffer, 50 epochs of 5000 steps).
"""

from __future__ import annotations

from classic_td3 import ALGO, build  # the same networks: the preset sets the numbers
from common import train_off_policy

from tdrl.cli import parse_recipe_args

TASK = "Hopper-v5"

if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)
    # seed, envs, build(...), a replay buffer filled by a random warm-up, the off-policy
    # trainer, a final evaluation and tdrl train's summary line (common.py)
    train_off_policy(ALGO, args, p, build, noise=True)
