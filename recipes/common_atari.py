"""What the Atari recipes share around their networks: the DeepMind-wrapped environments,
the Nature CNN's input, the frame-stacking replay buffer, the epsilon decay, and
:func:`train_atari`, the training script of the DQN family with the network left out.

The recipes import it as ``from common_atari import ...``, next to :mod:`common`.
``atari_dqn.py`` writes its network, policy and algorithm out; its siblings call tdrl's
Atari preset builders (:mod:`tdrl.presets.atari`), which build the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
from common import seed_everything, train_off_policy

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


def train_atari(
    algo: str,
    args: Any,
    p: Any,
    build: Callable[[Any, gym.Space, gym.Space], Any],
    buffer: Any = None,
    train_fn: Callable[[int, int], None] | None = None,
) -> Any:
    """Train ``build(p, observation_space, action_space)``'s algorithm on Atari as ``tdrl
    train`` does: seed, DeepMind-wrapped envs, the algorithm, then off-policy training
    into ``buffer`` (default :func:`frame_buffer`) with the epsilon decay (and
    ``train_fn(epoch, env_step)`` after it), the final evaluation and summary line."""
    seed_everything(args.seed)
    train_envs, test_envs = make_atari_envs(p)
    algorithm = build(p, train_envs.observation_space[0], train_envs.action_space[0])
    decay_eps = epsilon_decay(algorithm.policy, p)

    def on_collect(epoch: int, env_step: int) -> None:
        decay_eps(epoch, env_step)
        if train_fn is not None:
            train_fn(epoch, env_step)

    buffer = frame_buffer(p) if buffer is None else buffer
    envs = (train_envs, test_envs)
    return train_off_policy(algo, args, p, algorithm, buffer, envs, True, on_collect)
