"""What the Atari recipes share around their networks: the DeepMind-wrapped environments,
the frame-stacking replay buffer, the epsilon decay, and
:func:`train_atari`, the training script of the DQN family with the network left out.

The recipes import it as ``from common_atari import ...``, next to :mod:`common`.
``atari_dqn.py`` writes its network, policy and algorithm out; its siblings call tdrl's
Atari preset builders (:mod:`tdrl.presets.atari`), which build the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
from common import train_off_policy

from tdrl.algorithm.exploration import LinearSchedule
from tdrl.data import VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.env.atari import wrap_deepmind


def make_atari_envs(p: Any) -> tuple[DummyVectorEnv, DummyVectorEnv]:
    """``p.training_num`` and ``p.test_num`` envs of ``p.task`` in the DeepMind wrappers
    (noop reset, frame skip 4, 84x84 grayscale, ``p.frames_stack`` stacked frames); the
    training envs also end an episode per life and clip rewards, the test envs play games."""

    def make_env(training: bool) -> gym.Env:
        return wrap_deepmind(gym.make(p.task), frame_stack=p.frames_stack, training=training)

    train_envs = DummyVectorEnv([lambda: make_env(True)] * p.training_num)
    test_envs = DummyVectorEnv([lambda: make_env(False)] * p.test_num)
    return train_envs, test_envs


def frame_stacking(p: Any) -> dict[str, Any]:
    """Replay-buffer arguments that store each frame once and rebuild the stacks of
    ``p.frames_stack`` when the buffer samples."""
    return {"stack_num": p.frames_stack, "save_only_last_obs": True, "ignore_obs_next": True}


def frame_buffer(p: Any) -> VectorReplayBuffer:
    """A replay buffer of ``p.buffer_size`` steps over ``p.training_num`` envs that stores
    each frame once (:func:`frame_stacking`)."""
    return VectorReplayBuffer(p.buffer_size, p.training_num, **frame_stacking(p))


def epsilon_decay(policy: Any, p: Any) -> Callable[[int, int], None]:
    """A trainer ``train_fn`` that decays the policy's training epsilon linearly from
    ``p.eps_train`` to ``p.eps_train_final`` over ``p.eps_decay_steps`` env steps."""
    eps = LinearSchedule(p.eps_train, p.eps_train_final, p.eps_decay_steps)

    def train_fn(epoch: int, env_step: int) -> None:
        policy.set_eps_training(eps(env_step))

    return train_fn


def train_atari(
    algo: str,
    args: Any,
    p: Any,
    build: Callable[[Any, gym.Space, gym.Space], Any],
    buffer: Any = None,
    train_fn: Callable[[int, int], None] | None = None,
) -> Any:
    """Train ``build(p, observation_space, action_space)``'s algorithm on Atari as ``tdrl
    train`` does: DeepMind-wrapped envs, off-policy training into ``buffer`` (default
    :func:`frame_buffer`) with exploration noise and the epsilon decay (and
    ``train_fn(epoch, env_step)`` after it), the final evaluation and summary line."""

    def train_fn_of(algorithm: Any) -> Callable[[int, int], None]:
        decay_eps = epsilon_decay(algorithm.policy, p)

        def on_collect(epoch: int, env_step: int) -> None:
            decay_eps(epoch, env_step)
            if train_fn is not None:
                train_fn(epoch, env_step)

        return on_collect

    buffer = frame_buffer(p) if buffer is None else buffer
    return train_off_policy(
        algo, args, p, build, buffer, noise=True, envs=make_atari_envs, train_fn_of=train_fn_of
    )
