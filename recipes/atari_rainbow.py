"""Rainbow on Atari (default Pong) with Tianshou's ``examples/atari/atari_rainbow.py`` settings.

    python recipes/atari_rainbow.py --task PongNoFrameskip-v4 --seed 0
    python recipes/atari_rainbow.py --task BreakoutNoFrameskip-v4 --epochs 10
    python recipes/atari_rainbow.py --help       # every hyperparameter, with its default

C51 with dueling noisy streams, 3-step targets and prioritized replay (beta annealed
to 1). The network, policy and algorithm come from ``tdrl.presets.atari.build_rainbow``
(``rainbow_net``, ``RainbowPolicy``, ``Rainbow``); the rest is ``common_atari.train_atari``
with a prioritized buffer. Defaults: tdrl's ``atari`` preset, as ``tdrl train rainbow
PongNoFrameskip-v4``.
"""

from __future__ import annotations

from common_atari import frame_stacking, train_atari

from tdrl.algorithm.exploration import LinearSchedule
from tdrl.cli import parse_recipe_args
from tdrl.data import PrioritizedVectorReplayBuffer, VectorReplayBuffer
from tdrl.presets.atari import build_rainbow

ALGO, TASK = "rainbow", "PongNoFrameskip-v4"


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__)

    # prioritized replay (each frame stored once, the stacks rebuilt when it samples), its
    # importance-sampling exponent beta annealed to beta_final over beta_anneal_steps
    if p.prioritized_replay:
        buffer = PrioritizedVectorReplayBuffer(
            p.buffer_size, p.training_num, alpha=p.alpha, beta=p.beta,
            weight_norm=p.weight_norm, **frame_stacking(p),
        )  # fmt: skip
    else:
        buffer = VectorReplayBuffer(p.buffer_size, p.training_num, **frame_stacking(p))
    beta = LinearSchedule(p.beta, p.beta_final, p.beta_anneal_steps)

    def anneal_beta(epoch: int, env_step: int) -> None:
        if isinstance(buffer, PrioritizedVectorReplayBuffer):
            buffer.set_beta(beta(env_step))

    train_atari(ALGO, args, p, build_rainbow, buffer=buffer, train_fn=anneal_beta)
