"""Sweep planning: which runs a benchmark makes, their budgets and where they live.

A *sweep* is every algorithm x task x seed; each *run* lives in its own directory
``OUT/ALGO/TASK/seedS/`` (a peer library's runs, e.g. Tianshou's, under
``OUT/LIBRARY/ALGO/TASK/seedS/``) holding:

==================  ===============================================================
``run.json``        the run's spec (:class:`RunSpec`) and its full preset
``test.csv`` ...    the CSV logs (:class:`~tdrl.utils.logger.CSVLogger` layout), whatever
                    the logger
``progress.json``   env steps and wall time at the last finished epoch
``checkpoint.pt``   the full training state after the last finished epoch (resume)
``done.json``       the marker of a finished run: env steps, wall time, best return
``wandb/``          the W&B run (``--logger wandb``), ``events.*`` (TensorBoard)
``stdout.log``      what the run printed
==================  ===============================================================

The env-step budget ``N`` of a run becomes epochs of the preset
(:func:`epochs_for_budget`): the preset's ``step_per_epoch`` when ``N`` holds at least
:data:`MIN_EVALS` of them, otherwise ``MIN_EVALS`` equal epochs, so a learning curve always
has at least that many test points. The runs never stop early (no threshold); the random
warm-up of off-policy presets comes on top of ``N`` and is capped by the launcher to half
of it (:func:`tdrl.experiment.warmup_steps`), as Tianshou's trainers also leave it out of
their step count.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "BUSY_EXIT",
    "DONE_FILE",
    "LOCK_FILE",
    "MIN_EVALS",
    "PROGRESS_FILE",
    "SPEC_FILE",
    "RunSpec",
    "epochs_for_budget",
    "plan_budget",
    "plan_sweep",
    "read_json",
    "run_dir",
    "run_lock",
    "write_json",
]

MIN_EVALS = 10
"""The fewest test points (epochs) a run of any budget gets."""

SPEC_FILE = "run.json"
DONE_FILE = "done.json"
LOCK_FILE = "run.lock"
"""Held (``flock``) by the process running the run: a second sweep skips the run."""
BUSY_EXIT = 75
"""The exit status of a run process that found its run held by another process."""
PROGRESS_FILE = "progress.json"


def epochs_for_budget(step_per_epoch: int, env_steps: int) -> tuple[int, int]:
    """``(max_epochs, step_per_epoch)`` spending ``env_steps`` training env steps collected
    one at a time (:func:`plan_budget` with collects of one step).

    >>> epochs_for_budget(5000, 100_000)  # SAC/TD3 MuJoCo presets at 100k
    (20, 5000)
    >>> epochs_for_budget(30_000, 300_000)  # PPO MuJoCo preset at 300k
    (10, 30000)
    >>> epochs_for_budget(5000, 200)  # a tiny test budget
    (10, 20)
    >>> epochs_for_budget(5000, 0)
    Traceback (most recent call last):
    ...
    ValueError: env_steps: expected an int > 0, got 0
    """
    epochs, per_epoch, _ = plan_budget(step_per_epoch, 1, env_steps)
    return epochs, per_epoch


def plan_budget(
    step_per_epoch: int, step_per_collect: int | None, env_steps: int
) -> tuple[int, int, int]:
    """``(max_epochs, step_per_epoch, total)`` for a budget of ``env_steps`` training env
    steps, collected ``step_per_collect`` at a time.

    The budget is rounded up to whole collects, never to whole epochs: ``total`` (the
    run's ``max_env_steps``) is ``ceil(env_steps / step_per_collect)`` collects. An epoch
    is a whole number of collects: the preset's epoch length when the budget holds
    :data:`MIN_EVALS` such epochs, else the budget cut into ``MIN_EVALS`` epochs (fewer for
    a budget of fewer collects); the last epoch may end early, at ``total``.
    ``step_per_collect=None`` (episode-based collection) counts collects of one step: the
    run then ends at the first collect that reaches ``total``.

    >>> plan_budget(50_000, 2000, 2000)  # PPO CartPole: one collect, not ten epochs of it
    (1, 2000, 2000)
    >>> plan_budget(30_000, 2048, 1_000_000)  # PPO MuJoCo at 1M: 489 collects of 2048
    (33, 30720, 1001472)
    >>> plan_budget(5000, 1, 1_000_000)  # SAC MuJoCo at 1M
    (200, 5000, 1000000)
    >>> plan_budget(5000, 10, 0)
    Traceback (most recent call last):
    ...
    ValueError: env_steps: expected an int > 0, got 0
    """
    if env_steps < 1:
        raise ValueError(f"env_steps: expected an int > 0, got {env_steps}")
    if step_per_epoch < 1:
        raise ValueError(f"step_per_epoch: expected an int > 0, got {step_per_epoch}")
    collect = max(1, int(step_per_collect or 1))
    collects = -(-env_steps // collect)
    per_epoch = max(1, round(step_per_epoch / collect))  # collects in a preset epoch
    if collects // per_epoch < MIN_EVALS:
        per_epoch = -(-collects // min(MIN_EVALS, collects))
    epochs = -(-collects // per_epoch)
    return epochs, per_epoch * collect, collects * collect


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: what to train, for how long, where, and how to log it.

    :param algo: registry algorithm name (``"sac"``).
    :param task: gymnasium id (``"Hopper-v5"``).
    :param seed: the run's seed.
    :param env_steps: the budget in training env steps.
    :param out: the sweep's directory (``OUT``).
    :param logger: ``"wandb"``, ``"tensorboard"`` or ``"csv"`` (CSV is always written).
    :param overrides: preset fields set for this run (beside its budget).
    :param wandb_project: the W&B project.
    :param library: ``"tdrl"``, or a peer's name (its runs go under ``OUT/LIBRARY/``).
    :param checkpoint: save a checkpoint after every epoch (what makes the run resumable;
        off only for timing runs).

    >>> spec = RunSpec("sac", "Hopper-v5", 2, 100_000, "bench")
    >>> spec.dir.as_posix(), spec.name
    ('bench/sac/Hopper-v5/seed2', 'sac-Hopper-v5-2')
    >>> RunSpec.from_dict(spec.to_dict()) == spec
    True
    """

    algo: str
    task: str
    seed: int
    env_steps: int
    out: str
    logger: str = "csv"
    overrides: dict[str, Any] = field(default_factory=dict)
    wandb_project: str = "tdrl-bench"
    library: str = "tdrl"
    checkpoint: bool = True

    @property
    def dir(self) -> Path:
        """The run's directory."""
        return run_dir(self.out, self.algo, self.task, self.seed, self.library)

    @property
    def name(self) -> str:
        """The run's name (``ALGO-TASK-SEED``: the W&B run name)."""
        return f"{self.algo}-{self.task}-{self.seed}"

    @property
    def group(self) -> str:
        """The run's group (``ALGO/TASK``: the W&B group)."""
        return f"{self.algo}/{self.task}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (:meth:`from_dict` reverses it)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        """The spec :meth:`to_dict` wrote (unknown keys are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def finished(self) -> bool:
        """Whether the run's ``done.json`` marker exists."""
        return (self.dir / DONE_FILE).is_file()

    def progress(self) -> int:
        """Training env steps done (at the last finished epoch; the budget once done)."""
        done = read_json(self.dir / DONE_FILE)
        if done is not None:
            return int(done.get("env_step", self.env_steps))
        data = read_json(self.dir / PROGRESS_FILE)
        return int(data.get("env_step", 0)) if data else 0


def run_dir(
    out: str | os.PathLike[str], algo: str, task: str, seed: int, library: str = "tdrl"
) -> Path:
    """``OUT/ALGO/TASK/seedS`` (a peer library's: ``OUT/LIBRARY/ALGO/TASK/seedS``).

    >>> run_dir("b", "ppo", "Hopper-v5", 0, "tianshou").as_posix()
    'b/tianshou/ppo/Hopper-v5/seed0'
    """
    base = Path(out) if library == "tdrl" else Path(out) / library
    return base / algo / task / f"seed{seed}"


def plan_sweep(
    algos: list[str],
    tasks: list[str],
    seeds: int,
    env_steps: int,
    out: str | os.PathLike[str],
    **kwargs: Any,
) -> list[RunSpec]:
    """Every ``algo x task x seed`` run (seeds ``0 .. seeds-1``), task-major per algorithm.

    ``kwargs`` are the other :class:`RunSpec` fields, shared by all runs.

    >>> [s.name for s in plan_sweep(["sac", "td3"], ["Hopper-v5"], 2, 1000, "b")]
    ['sac-Hopper-v5-0', 'sac-Hopper-v5-1', 'td3-Hopper-v5-0', 'td3-Hopper-v5-1']
    """
    if seeds < 1:
        raise ValueError(f"seeds: expected a count >= 1, got {seeds}")
    return [
        RunSpec(algo, task, seed, env_steps, str(out), **kwargs)
        for algo in algos
        for task in tasks
        for seed in range(seeds)
    ]


def read_json(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON object in ``path``, or ``None`` if it is missing or unreadable."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: str | os.PathLike[str], data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` atomically (a temporary file, then a rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
    os.replace(tmp, path)


@contextlib.contextmanager
def run_lock(run_dir: str | os.PathLike[str]) -> Iterator[bool]:
    """Hold the run's lock while the block runs; ``False`` if another process holds it.

    The lock is an exclusive ``flock`` on ``RUN_DIR/run.lock``: the kernel releases it when
    its process exits however it ends, so a killed sweep leaves no stale lock, and two
    sweeps over one directory (two invocations of the same command, or a second process
    started to use another core) never run the same run twice. Where ``flock`` is missing
    (Windows) every run counts as free.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with run_lock(d) as mine, run_lock(d) as again:
    ...     mine, again
    (True, False)
    """
    path = Path(run_dir) / LOCK_FILE
    try:
        import fcntl
    except ImportError:  # pragma: no cover (Windows)
        yield True
        return
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
