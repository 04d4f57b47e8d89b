"""What the Atari recipes share around their networks: the DeepMind-wrapped environments,
the Nature CNN's input, the frame-stacking replay buffer and the epsilon decay.

The recipes import it as ``from common_atari import ...``, next to :mod:`common`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

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


def cnn_input(p: Any, envs: Any) -> dict[str, Any]:
    """The Nature CNN's arguments for ``envs``: the stacked frames' shape, the number of
    actions and the pixel scale (raw 0..255 pixels unless ``p.scale_obs``)."""
    obs_space, act_space = envs.observation_space[0], envs.action_space[0]
    scale = 255.0 if p.scale_obs else None
    return {"obs_shape": obs_space.shape, "n_actions": int(act_space.n), "scale": scale}


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
