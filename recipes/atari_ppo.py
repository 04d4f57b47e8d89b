"""PPO on Atari (default Pong) with Tianshou's ``examples/atari/atari_ppo.py`` settings.

    python recipes/atari_ppo.py --task PongNoFrameskip-v4 --seed 0
    python recipes/atari_ppo.py --help       # every hyperparameter, with its default

The actor and the critic share the Nature CNN and a 512-unit layer (orthogonal init);
clipped surrogate (0.1) with value clipping, GAE, normalized advantages and a linearly
decaying learning rate. tdrl has no Atari PPO preset (``tdrl train`` does not train this):
the defaults below are those of Tianshou 2.0.1's script.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from common import train_and_evaluate

from tdrl.algorithm import AdamOptimizerFactory
from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy
from tdrl.cli import LOGGERS
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.env.atari import wrap_deepmind
from tdrl.trainer import OnPolicyTrainer
from tdrl.utils.logger import make_logger
from tdrl.utils.net_atari import NatureCNN
from tdrl.utils.schedule import linear_lr_decay

ALGO = "ppo"
DEFAULTS = {  # examples/atari/atari_ppo.py (Tianshou 2.0.1); --stop-reward: Pong's maximum
    **{"task": "PongNoFrameskip-v4", "seed": 0, "stop_reward": 20.0, "frames_stack": 4},
    **{"lr": 2.5e-4, "lr_decay": True, "gamma": 0.99, "gae_lambda": 0.95, "eps_clip": 0.1},
    **{"vf_coef": 0.25, "ent_coef": 0.01, "max_grad_norm": 0.5, "value_clip": True},
    **{"advantage_normalization": True, "recompute_advantage": False, "hidden_size": 512},
    **{"buffer_size": 100_000, "training_num": 10, "test_num": 10, "epochs": 100},
    **{"step_per_epoch": 100_000, "step_per_collect": 1000, "repeat_per_collect": 4},
    **{"batch_size": 256},
}


def get_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    for name, value in DEFAULTS.items():
        kind = (lambda s: s.lower() in ("1", "true", "yes")) if isinstance(value, bool) else None
        parser.add_argument("--" + name.replace("_", "-"), type=kind or type(value), default=value)
    parser.add_argument("--logger", choices=LOGGERS, default="csv")
    parser.add_argument("--logdir", default="runs")
    parser.add_argument("--no-progress", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    p = get_args(argv)
    np.random.seed(p.seed)
    torch.manual_seed(p.seed)
    torch.set_num_threads(1)

    # DeepMind wrappers; the training envs also end an episode per life and clip rewards
    def make_env(training: bool) -> gym.Env:
        return wrap_deepmind(gym.make(p.task), frame_stack=p.frames_stack, training=training)

    train_envs = DummyVectorEnv([lambda: make_env(True)] * p.training_num)
    test_envs = DummyVectorEnv([lambda: make_env(False)] * p.test_num)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]

    # one trunk (pixels / 255 -> Nature CNN -> 512) shared by the actor's and critic's heads
    cnn = NatureCNN(obs_space.shape, scale=255.0)
    trunk = torch.nn.Sequential(
        cnn, torch.nn.Linear(cnn.output_dim, p.hidden_size), torch.nn.ReLU()
    )
    actor = torch.nn.Sequential(trunk, torch.nn.Linear(p.hidden_size, int(act_space.n)))
    critic = torch.nn.Sequential(trunk, torch.nn.Linear(p.hidden_size, 1))
    with torch.no_grad():  # Tianshou's layer_init: orthogonal (gain sqrt 2), zero biases
        for m in [*actor.modules(), *critic.modules()]:
            if isinstance(m, torch.nn.Linear | torch.nn.Conv2d):
                torch.nn.init.orthogonal_(m.weight, gain=float(np.sqrt(2)))
                torch.nn.init.zeros_(m.bias)
    policy = ActorPolicy(actor=actor, action_space=act_space)  # samples, also in tests
    optim = AdamOptimizerFactory(lr=p.lr, eps=1e-5)
    if p.lr_decay:  # linearly to 0 over the run's updates (one per collect)
        updates = math.ceil(p.step_per_epoch / p.step_per_collect) * p.epochs
        optim = optim.with_lr_scheduler(linear_lr_decay(updates))
    algorithm = PPO(
        policy=policy,
        critic=critic,
        optim=optim,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        eps_clip=p.eps_clip,
        value_clip=p.value_clip,
        advantage_normalization=p.advantage_normalization,
        recompute_advantage=p.recompute_advantage,
        vf_coef=p.vf_coef,
        ent_coef=p.ent_coef,
        max_grad_norm=p.max_grad_norm,
    )

    # on-policy: the buffer holds one rollout (frames stored once, stacks rebuilt)
    frames = {"stack_num": p.frames_stack, "save_only_last_obs": True, "ignore_obs_next": True}
    buffer = VectorReplayBuffer(p.buffer_size, p.training_num, **frames)
    train_collector = Collector(policy, train_envs, buffer)
    test_collector = Collector(policy, test_envs, VectorReplayBuffer(2 * p.test_num, p.test_num))
    train_collector.reset(seed=p.seed)
    test_collector.reset(seed=p.seed + 100_000)

    log_dir = Path(p.logdir) / f"{ALGO}-{p.task}-seed{p.seed}-{time.strftime('%H%M%S')}"
    trainer = OnPolicyTrainer(
        algorithm,
        train_collector,
        test_collector=test_collector,
        max_epochs=p.epochs,
        step_per_epoch=p.step_per_epoch,
        step_per_collect=p.step_per_collect,
        repeat_per_collect=p.repeat_per_collect,
        batch_size=p.batch_size,
        episode_per_test=p.test_num,
        stop_fn=lambda best: best >= p.stop_reward,
        logger=make_logger(p.logger, log_dir),
        show_progress=not p.no_progress,
    )
    train_and_evaluate(ALGO, p.task, trainer, log_dir, train_envs, test_envs)


if __name__ == "__main__":
    main()
