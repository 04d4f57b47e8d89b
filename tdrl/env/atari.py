"""DeepMind-style Atari preprocessing on the real ALE (``ale-py``, whose wheels ship the ROMs).

:func:`wrap_deepmind` turns a frame-skip-free Atari env (``PongNoFrameskip-v4``, registered by
ale-py when this module is imported) into what the DQN family trains on, the pipeline of
Mnih et al. (Nature 2015) as Tianshou's ``examples/atari`` wrap it::

    reset:  real reset, then 1..noop_max NOOP frames           (noop reset, random start)
            FIRE once where the game waits for it                (fire reset)
    step:   repeat the action frame_skip = 4 frames, sum the rewards, stop at the end;
            pixel-wise max of the last two RGB frames            (frame skip with max-pool)
            -> luminance -> 84 x 84 (area interpolation)         (84x84 grayscale, uint8)
            a lost life ends the episode for the learner; the env  (episodic life, training)
            resets for real only at game over (a NOOP step otherwise)
            rewards clipped to [-1, 1]                            (training only)
    obs:    the last 4 frames, ``[4, 84, 84]`` uint8              (frame stack)

Observations stay ``uint8``: scale them in the network (``tdrl.utils.net_atari``), and keep
the stack compact in the replay buffer with ``VectorReplayBuffer(..., stack_num=4,
save_only_last_obs=True, ignore_obs_next=True)``, which stores one frame per step and
rebuilds the stack when sampling.

Every observation, reward, flag and ``info`` equals that of Tianshou 2.0.1's
``tianshou.env.atari.atari_wrapper.wrap_deepmind`` on the same seed and actions
(``tests/env/test_atari.py``); the one difference is deliberate: a reset given a seed after a
lost life starts a new game (:class:`EpisodicLife`). What gymnasium offers is used where it
has those semantics: ``FrameStackObservation`` (padded with the reset frame) and
``ClipReward`` (Atari rewards are integers, so clipping is their sign).
``gymnasium.wrappers.AtariPreprocessing`` is not: it max-pools *grayscale* frames (not the
RGB ones), returns the previous step's frames when an episode ends inside a frame skip, and
on a lost life resets the game instead of playing on.
:class:`AtariFrames` does noop reset, frame skip, max-pool and the 84x84 grayscale in one
wrapper and drives the emulator directly within a frame skip (``ale.act`` and a screen copy
into a preallocated buffer per frame, no gymnasium ``step`` per frame): about 8% less time
per step than Tianshou's separate wrappers; the emulator and the resize take most of the rest.

>>> env = wrap_deepmind(gymnasium.make("PongNoFrameskip-v4"))
>>> obs, info = env.reset(seed=0)
>>> obs.shape, obs.dtype, env.action_space
((4, 84, 84), dtype('uint8'), Discrete(6))
>>> obs, rew, terminated, truncated, info = env.step(0)
>>> sorted(info)
['episode_frame_number', 'frame_number', 'lives']
>>> env.close()
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium
import numpy as np

__all__ = [
    "AtariFrames",
    "EpisodicLife",
    "FireReset",
    "atari_env_id",
    "register_atari_envs",
    "wrap_deepmind",
]

_PASSIVE_WRAPPERS = ("OrderEnforcing", "PassiveEnvChecker")
"""Wrappers of ``gymnasium.make`` that :class:`AtariFrames` may step around."""


def register_atari_envs() -> bool:
    """Register ale-py's Atari envs with gymnasium (``PongNoFrameskip-v4``, ``ALE/Pong-v5``,
    ...); ``False`` if ale-py is not installed (``pip install tdrl[atari]``).

    Importing this module calls it, so ``gymnasium.make("PongNoFrameskip-v4")`` works after
    ``import tdrl.env.atari``.

    >>> register_atari_envs(), "PongNoFrameskip-v4" in gymnasium.registry
    (True, True)
    """
    try:
        import ale_py
    except ImportError:
        return False
    gymnasium.register_envs(ale_py)
    return True


register_atari_envs()


def atari_env_id(game: str) -> str:
    """The frame-skip-free id the wrappers expect: ``"Pong"`` -> ``"PongNoFrameskip-v4"``.

    >>> atari_env_id("Breakout")
    'BreakoutNoFrameskip-v4'
    """
    return f"{game}NoFrameskip-v4"


def _ale_env(env: gymnasium.Env) -> Any:
    """``env.unwrapped`` if it is an ale-py ``AtariEnv``; a ``ValueError`` otherwise."""
    base = env.unwrapped
    if not hasattr(base, "ale") or not hasattr(base, "get_action_meanings"):
        raise ValueError(
            f"env: expected an ale-py Atari env (e.g. gymnasium.make('PongNoFrameskip-v4')), "
            f"got {type(base).__name__}"
        )
    return base


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name}: expected an int >= 1, got {value!r}")
    return int(value)


class AtariFrames(gymnasium.Wrapper):
    """Noop reset, frame skip with max-pooling, and 84x84 grayscale frames, in one wrapper.

    :param env: an ale-py Atari env without frame skipping (``frameskip=1``: the
        ``...NoFrameskip-v4`` ids, or ``ALE/...-v5`` made with ``frameskip=1``).
    :param noop_max: on reset, play ``1..noop_max`` NOOP frames (uniform, from the env's
        ``np_random``); ``0``: none.
    :param frame_skip: frames per step; the action repeats, the rewards add up, a frame that
        ends the episode ends the step.
    :param screen_size: side of the square grayscale observation.

    The observation of a step is the pixel-wise maximum of its last two RGB frames (the one
    frame if the episode ended on the first), converted to luminance and resized with area
    interpolation; that of a reset is the last NOOP frame. ``terminated``, ``truncated`` and
    ``info`` are those of the last frame. Between observations the emulator is driven
    directly (``ale.act``), unless wrappers other than ``gymnasium.make``'s own sit between
    ``env`` and the Atari env: then every frame is an ``env.step`` (same results, slower).

    >>> env = AtariFrames(gymnasium.make("PongNoFrameskip-v4"))
    >>> obs, _ = env.reset(seed=1)
    >>> obs.shape, env.observation_space
    ((84, 84), Box(0, 255, (84, 84), uint8))
    >>> env.step(0)[1:4]
    (0.0, False, False)
    """

    def __init__(
        self,
        env: gymnasium.Env,
        noop_max: int = 30,
        frame_skip: int = 4,
        screen_size: int = 84,
    ) -> None:
        super().__init__(env)
        base = _ale_env(env)
        if getattr(base, "_frameskip", 1) != 1:
            raise ValueError(
                "env: expected an Atari env without frame skipping (frameskip=1, e.g. "
                f"PongNoFrameskip-v4), got frameskip={base._frameskip!r}"
            )
        if getattr(base, "continuous", False):
            raise ValueError("env: expected discrete actions, got continuous=True")
        if getattr(base, "_obs_type", "rgb") != "rgb":
            raise ValueError(f"env: expected obs_type='rgb', got {base._obs_type!r}")
        if isinstance(noop_max, bool) or not isinstance(noop_max, int) or noop_max < 0:
            raise ValueError(f"noop_max: expected an int >= 0, got {noop_max!r}")
        if noop_max and base.get_action_meanings()[0] != "NOOP":
            raise ValueError(
                f"noop_max: expected action 0 to be NOOP, got {base.get_action_meanings()[0]!r}"
            )
        self.noop_max = noop_max
        self.frame_skip = _positive("frame_skip", frame_skip)
        self.screen_size = _positive("screen_size", screen_size)
        self.observation_space = gymnasium.spaces.Box(
            0, 255, (self.screen_size, self.screen_size), np.uint8
        )
        self._base = base
        self._ale = base.ale
        self._actions = np.asarray(base._action_set)
        h, w = base.ale.getScreenDims()
        self._frames = (np.empty((h, w, 3), np.uint8), np.empty((h, w, 3), np.uint8))
        self._pooled = np.empty((h, w, 3), np.uint8)
        self._direct = self._steps_only_through(env, _PASSIVE_WRAPPERS)

    @staticmethod
    def _steps_only_through(env: gymnasium.Env, allowed: tuple[str, ...]) -> bool:
        """Whether every wrapper between ``env`` and its Atari env is one of ``allowed``."""
        while isinstance(env, gymnasium.Wrapper):
            if type(env).__name__ not in allowed:
                return False
            env = env.env
        return True

    def _warp(self, rgb: np.ndarray) -> np.ndarray:
        import cv2

        gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
        size = (self.screen_size, self.screen_size)
        return cv2.resize(gray, size, interpolation=cv2.INTER_AREA)  # type: ignore[no-any-return]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset the game, then play ``1..noop_max`` NOOP frames (a game that ends during
        them is reset again); return the last frame and its ``info``."""
        frame, info = self.env.reset(seed=seed, options=options)
        if self.noop_max:
            for _ in range(int(self._base.np_random.integers(1, self.noop_max + 1))):
                frame, _, terminated, truncated, info = self.env.step(0)
                if terminated or truncated:
                    frame, info = self.env.reset()
        return self._warp(frame), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Repeat ``action`` for ``frame_skip`` frames (fewer if the episode ends); return the
        max-pooled grayscale frame, the summed reward and the last frame's flags and info."""
        if not self._direct:
            return self._step_through_env(action)
        ale, frames = self._ale, self._frames
        a = self._actions[action]
        total = 0.0
        terminated = truncated = False
        t = 0
        for t in range(self.frame_skip):
            total += float(ale.act(a))
            ale.getScreenRGB(frames[t & 1])
            terminated = bool(ale.game_over(with_truncation=False))
            truncated = bool(ale.game_truncated())
            if terminated or truncated:
                break
        info = {
            "lives": ale.lives(),
            "episode_frame_number": ale.getEpisodeFrameNumber(),
            "frame_number": ale.getFrameNumber(),
        }
        if t == 0:
            return self._warp(frames[0]), total, terminated, truncated, info
        np.maximum(frames[0], frames[1], out=self._pooled)
        return self._warp(self._pooled), total, terminated, truncated, info

    def _step_through_env(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """:meth:`step` with one ``env.step`` per frame (for envs with other wrappers)."""
        last: list[np.ndarray] = []
        total = 0.0
        terminated = truncated = False
        info: dict[str, Any] = {}
        for _ in range(self.frame_skip):
            frame, reward, terminated, truncated, info = self.env.step(action)
            last = [*last[-1:], frame]
            total += float(reward)
            if terminated or truncated:
                break
        pooled = last[0] if len(last) == 1 else np.maximum(last[0], last[1])
        return self._warp(pooled), total, bool(terminated), bool(truncated), info


class EpisodicLife(gymnasium.Wrapper):
    """A lost life ends the episode (``terminated``) for the learner; the game goes on.

    :meth:`reset` resets the game only after a real end (game over or truncation) or when
    given a ``seed``; after a lost life it plays one NOOP step instead and returns that step's
    observation and info. (Tianshou's ``EpisodicLifeEnv`` ignores a seed after a lost life
    and plays on; here a seeded reset always starts the same game.)
    Lives are read from the emulator after every step (``ale.lives()``); a step ends the
    episode when the count drops and is still above zero (games that pass through zero
    lives before game over end at game over).

    >>> env = EpisodicLife(AtariFrames(gymnasium.make("BreakoutNoFrameskip-v4")))
    >>> _ = env.reset(seed=0)
    >>> env.lives
    5
    """

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self._ale = _ale_env(env).ale
        self.lives = 0
        self.real_done = True

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step; ``terminated`` also when a life was lost."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.real_done = bool(terminated or truncated)
        lives = self._ale.lives()
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, float(reward), terminated, truncated, info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """A real reset after game over (or when a ``seed`` is given), a NOOP step after a
        lost life."""
        if self.real_done or seed is not None:
            obs, info = self.env.reset(seed=seed, options=options)
        else:
            obs, _, _, _, info = self.env.step(0)
        self.lives = self._ale.lives()
        return obs, info


class FireReset(gymnasium.Wrapper):
    """Press FIRE after every reset, for games that wait for it (Breakout, Pong, ...).

    :meth:`reset` returns the observation after the FIRE step and an empty ``info`` (as
    Tianshou's wrapper does). The env's action 1 must be FIRE and it must have at least
    three actions.

    >>> FireReset(gymnasium.make("PongNoFrameskip-v4")).reset(seed=0)[1]
    {}
    """

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        meanings = _ale_env(env).get_action_meanings()
        if len(meanings) < 3 or meanings[1] != "FIRE":
            raise ValueError(
                f"env: expected action 1 to be FIRE among at least 3 actions, got {meanings}"
            )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset, then step FIRE."""
        self.env.reset(seed=seed, options=options)
        return self.env.step(1)[0], {}


def wrap_deepmind(
    env: gymnasium.Env,
    preset: Any = None,
    *,
    training: bool = True,
    episode_life: bool | None = None,
    clip_rewards: bool | None = None,
    frame_stack: int | None = None,
    noop_max: int = 30,
    frame_skip: int = 4,
    screen_size: int = 84,
) -> gymnasium.Env:
    """The DeepMind Atari pipeline of Tianshou's ``wrap_deepmind`` (module docstring).

    :param env: an ale-py Atari env without frame skipping (``gymnasium.make(
        "PongNoFrameskip-v4")``).
    :param preset: a registry preset (the registry calls ``wrap_deepmind(env, preset)``);
        its ``frames_stack`` field, if it has one, is the default of ``frame_stack``.
    :param training: the training envs' defaults: episodic life and clipped rewards on
        (``False``, for test envs: both off, as in Tianshou's Atari examples).
    :param episode_life: / :param clip_rewards: override the ``training`` defaults.
    :param frame_stack: frames per observation (default 4; ``0`` or ``1``: no stacking,
        observations ``[84, 84]``).
    :param noop_max: / :param frame_skip: / :param screen_size: see :class:`AtariFrames`.

    FIRE is pressed after resets only in games that have it.

    >>> env = wrap_deepmind(gymnasium.make("BreakoutNoFrameskip-v4"), training=False)
    >>> env.reset(seed=0)[0].shape
    (4, 84, 84)
    """
    if frame_stack is None:
        frame_stack = int(getattr(preset, "frames_stack", 4))
    if isinstance(frame_stack, bool) or not isinstance(frame_stack, int) or frame_stack < 0:
        raise ValueError(f"frame_stack: expected an int >= 0, got {frame_stack!r}")
    episode_life = training if episode_life is None else episode_life
    clip_rewards = training if clip_rewards is None else clip_rewards
    wrapped: gymnasium.Env = AtariFrames(env, noop_max, frame_skip, screen_size)
    if episode_life:
        wrapped = EpisodicLife(wrapped)
    if "FIRE" in _ale_env(env).get_action_meanings():
        wrapped = FireReset(wrapped)
    if clip_rewards:
        wrapped = gymnasium.wrappers.ClipReward(wrapped, -1.0, 1.0)
    if frame_stack > 1:
        wrapped = gymnasium.wrappers.FrameStackObservation(wrapped, frame_stack)
    return wrapped
