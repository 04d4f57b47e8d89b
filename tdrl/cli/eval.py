"""``tdrl eval RUN_DIR [--episodes N] [--seed S] [--render] [--video OUT_DIR]``: play a
trained run's policy.

The policy is rebuilt from the run's ``config.yaml`` and ``policy.pt``
(:func:`tdrl.experiment.policy.rebuild`, what :func:`tdrl.load_policy` returns) and plays
``N`` test episodes in one test env (Atari: the test wrappers, real game scores) with
deterministic actions and no exploration noise; the last line printed is
``mean return X ± Y over N episodes``. ``--video OUT_DIR`` records every episode as an MP4
with gymnasium's ``RecordVideo`` (needs ``moviepy``: ``pip install 'tdrl[video]'``);
``--render`` opens a window (``render_mode="human"``) where there is a display. Help and
argument errors load no torch; a missing run, a corrupt file or ``--render`` without a
display exit with status 2 and one line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from tdrl.cli.args import ArgumentParser, is_user_error, positive_int, seed_type
from tdrl.errors import UsageError

__all__ = ["evaluate", "main"]


def _has_display() -> bool:
    """Whether a window can open: always on macOS and Windows; on Linux, with X or Wayland."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _check_display() -> None:
    if not _has_display():
        raise UsageError(
            "--render: expected a display to open a window on (DISPLAY/WAYLAND_DISPLAY "
            "unset), got none; record MP4s with --video OUT_DIR instead"
        )


def _make_env(
    entry: Any,
    task: str,
    preset: Any,
    render_mode: str | None,
    video: Path | None,
    episodes: int,
) -> Any:
    kwargs = {"render_mode": render_mode} if render_mode is not None else {}
    env = entry.make_env(task, preset, training=False, **kwargs)
    if video is not None:
        import warnings

        import gymnasium as gym

        with warnings.catch_warnings():  # "overwriting existing videos": the user chose OUT_DIR
            warnings.simplefilter("ignore")
            env = gym.wrappers.RecordVideo(
                env,
                str(video),
                episode_trigger=lambda ep: ep < episodes,
                name_prefix="eval",
                disable_logger=True,
            )
    return env


def evaluate(
    run_dir: str | Path,
    episodes: int = 10,
    seed: int = 0,
    render: bool = False,
    video: str | Path | None = None,
) -> Any:
    """Play ``episodes`` deterministic episodes of a run's policy; their returns (NumPy).

    The env is reset with ``seed`` before the first episode (then continues its RNG).
    """
    import numpy as np

    from tdrl.data import Collector, VectorReplayBuffer
    from tdrl.env import DummyVectorEnv
    from tdrl.experiment.policy import rebuild

    policy, cfg, preset, entry = rebuild(run_dir)
    task = cfg["task"]
    render_mode = None
    if render:
        _check_display()
        modes = _render_modes(entry, task, preset)
        if "human" not in modes:
            raise UsageError(
                f"--render: expected a task with a window (render mode 'human'), {task} has "
                f"render modes {', '.join(modes) or 'none'}"
            )
        render_mode = "human"
    out = None
    if video is not None:
        try:
            import moviepy  # noqa: F401  (RecordVideo writes MP4s with it)
        except ImportError as exc:
            raise UsageError(
                "--video: expected moviepy to write MP4s (pip install 'tdrl[video]'), got none"
            ) from exc
        out = Path(video)
        out.mkdir(parents=True, exist_ok=True)
        render_mode = "rgb_array"
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # off-screen frames, no window
    policy.deterministic_eval = True  # no sampling, and the collector adds no noise
    env = DummyVectorEnv([lambda: _make_env(entry, task, preset, render_mode, out, episodes)])
    try:
        collector = Collector(policy, env, VectorReplayBuffer(2, 1), exploration_noise=False)
        collector.reset(seed=seed)
        stats = collector.collect(n_episode=episodes)
    finally:
        env.close()
    return np.asarray(stats.returns, dtype=np.float64)


def _render_modes(entry: Any, task: str, preset: Any) -> list[str]:
    env = entry.make_env(task, preset, training=False)
    try:
        return list(env.metadata.get("render_modes", []))
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    """The ``tdrl eval`` subcommand; the exit status (0 ok, 2 a user error)."""
    parser = ArgumentParser(
        prog="tdrl eval",
        description="Play a trained run's policy (deterministic actions, no exploration "
        "noise) and print its mean return.",
    )
    parser.add_argument("run_dir", help="a run directory of tdrl train (config.yaml, policy.pt)")
    parser.add_argument("--episodes", type=positive_int, default=10, help="episodes (default 10)")
    parser.add_argument("--seed", type=seed_type, default=0, help="env seed (default 0)")
    parser.add_argument("--render", action="store_true", help="show the episodes in a window")
    parser.add_argument("--video", default=None, metavar="OUT_DIR", help="write MP4s there")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not Path(args.run_dir).is_dir():
        print(f"tdrl eval: error: run directory {args.run_dir} does not exist", file=sys.stderr)
        return 2
    try:
        if args.render:
            _check_display()  # before loading torch
        returns = evaluate(args.run_dir, args.episodes, args.seed, args.render, args.video)
    except Exception as exc:
        if args.debug or not is_user_error(exc):
            raise
        print(str(exc).splitlines()[0], file=sys.stderr)
        return 2
    if args.video is not None:
        print(f"videos: {args.video}")
    print(f"mean return {returns.mean():.1f} ± {returns.std():.1f} over {len(returns)} episodes")
    return 0
