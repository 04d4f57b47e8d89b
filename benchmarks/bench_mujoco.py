"""End to end on MuJoCo: SAC on Hopper-v5, tdrl against Tianshou 2.0.1, wall time.

A short form of ``benchmarks/walltime_side_by_side.py`` for ``nox -s bench``: one round of
SAC on Hopper-v5 with Tianshou's MuJoCo hyperparameters (one update per env step), 5,000
training env steps per run, tdrl then Tianshou, each in a fresh process, one torch thread.
It prints both wall times and the ratio beside issue 17's goal (tdrl <= 0.5x Tianshou's,
i.e. >= 2x the env steps per second). For the numbers quoted in the README run the script
itself on an idle machine (10k steps, two rounds, SAC, TD3 and PPO)::

    python -m benchmarks mujoco
    OMP_NUM_THREADS=1 python benchmarks/walltime_side_by_side.py --rounds 2
"""

from __future__ import annotations

from benchmarks.walltime_side_by_side import main as side_by_side


def main() -> None:
    """One round of SAC Hopper-v5, 5k env steps per library."""
    side_by_side(["--algos", "sac", "--task", "Hopper-v5", "--env-steps", "5000", "--rounds", "1"])


if __name__ == "__main__":
    main()
