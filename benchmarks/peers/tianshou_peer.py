"""Tianshou 2.0.1's side: the algorithms of :mod:`benchmarks.tianshou_builders`.

The same builders ``bench_train`` and ``bench_train_zoo`` use (each matches tdrl's preset:
networks, optimizers, learning rates, schedules), here with the row's preset (SAC on
Hopper-v5 takes the MuJoCo preset's 256x256 networks and fixed alpha), Tianshou's
``Collector`` over ``DummyVectorEnv``, its trainer with epochs of ``eval_every`` steps, no
stop function and no test-in-train.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from benchmarks.peers.core import EvalLog, Row, preset
from benchmarks.tianshou_builders import (
    _BUILDERS as BUILDERS,  # builder(algo, preset, obs_dim, action_space)
)
from benchmarks.tianshou_builders import (
    EXPLORATION_NOISE,
    ON_POLICY,
    TEST_SEED_OFFSET,
    seed_everything,
)


def run(row: Row, seed: int, log: EvalLog) -> int:
    """Train ``row`` with Tianshou; return the env steps collected."""
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams

    p = preset(row)
    seed_everything(seed)

    def make_env() -> gym.Env:
        return gym.make(row.task)

    train_envs = DummyVectorEnv([make_env] * p.training_num)
    test_envs = DummyVectorEnv([make_env] * row.eval_episodes)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]
    obs_dim = int(np.prod(obs_space.shape))  # type: ignore[arg-type]
    algorithm = BUILDERS[row.algo](row.algo, p, obs_dim, act_space)
    noisy = row.algo in EXPLORATION_NOISE
    buffer = VectorReplayBuffer(p.buffer_size, p.training_num)
    train_envs.seed(seed)
    test_envs.seed(seed + TEST_SEED_OFFSET)
    train: Any = Collector(algorithm, train_envs, buffer, exploration_noise=noisy)
    test: Any = Collector(algorithm, test_envs, exploration_noise=noisy)
    train.reset()
    test.reset()
    inner = test.collect

    def collect(*args: Any, **kwargs: Any) -> Any:
        out: list[Any] = []

        def once() -> float:
            out.append(inner(*args, **kwargs))
            return float(np.mean(out[0].returns))

        # the trainer zeroes the collector's counters when it starts: warm-up added
        log.evaluate(row.warmup + train.collect_step, once)
        return out[0]

    test.collect = collect  # type: ignore[method-assign]
    common: dict[str, Any] = dict(
        training_collector=train,
        test_collector=test,
        max_epochs=row.train_steps // row.eval_every,
        epoch_num_steps=row.eval_every,
        collection_step_num_env_steps=p.step_per_collect,
        batch_size=p.batch_size,
        test_step_num_episodes=row.eval_episodes,
        stop_fn=None,
        test_in_training=False,
        logger=None,
        verbose=False,
        show_progress=False,
    )
    params: Any
    if row.algo in ON_POLICY:
        params = OnPolicyTrainerParams(update_step_num_repetitions=p.repeat_per_collect, **common)
    else:
        params = OffPolicyTrainerParams(
            update_step_num_gradient_steps_per_sample=p.update_per_step, **common
        )
    try:
        log.start()
        if row.warmup:
            train.collect(n_step=row.warmup, random=True)
        algorithm.create_trainer(params).run()
        log.stop()
    finally:
        train_envs.close()
        test_envs.close()
    return row.warmup + int(train.collect_step)
