"""One benchmark run, in this process: build it with the launcher, log, checkpoint, resume.

:func:`run` trains one :class:`~tdrl.benchmark.plan.RunSpec` through
:func:`tdrl.experiment.build_experiment` (the preset for the task, its budget mapped onto
epochs, no stop threshold, a checkpoint after every epoch) into the run's own directory
``OUT/ALGO/TASK/seedS/``. Whatever the logger, CSV goes there too (:class:`BenchLogger`).
When the directory holds a checkpoint the run continues from it (the launcher drops the
CSV rows logged after that checkpoint first: they are logged again), and the wall time
spent up to it is carried over. A finished run writes ``done.json`` and deletes its
checkpoint (``keep_checkpoint=True`` keeps it).

Command line (what the local worker pool and the Ray tasks start, one process per run)::

    python -m tdrl.benchmark.runner OUT/sac/Hopper-v5/seed0   # reads its run.json
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from tdrl.benchmark.plan import (
    BUSY_EXIT,
    DONE_FILE,
    PROGRESS_FILE,
    SPEC_FILE,
    RunSpec,
    epochs_for_budget,
    plan_budget,
    read_json,
    run_lock,
    write_json,
)
from tdrl.utils.logger.base import BaseLogger

__all__ = ["BenchLogger", "main", "planned_env_steps", "prepare_run", "run"]

CHECKPOINT_FILE = "checkpoint.pt"
WANDB_ID_FILE = "wandb_id.txt"


class BenchLogger(BaseLogger):
    """CSV in the run directory, plus W&B or TensorBoard; wall time per finished epoch.

    Every write goes to each logger in ``loggers``. At the end of each epoch
    (:meth:`save_data`) the run's position and the wall time spent so far (``wall_offset``
    from earlier sessions plus the time since ``start``) go to ``progress.json``.

    :param run_dir: the run's directory.
    :param loggers: the loggers to write to (the CSV one first).
    :param start: ``time.perf_counter()`` when this session of the run started.
    :param wall_offset: seconds the run spent in earlier sessions (up to its checkpoint).
    :param walls: wall time at the end of each earlier epoch (``{"epoch": seconds}``).

    >>> import tempfile
    >>> from tdrl.utils.logger import CSVLogger
    >>> d = Path(tempfile.mkdtemp())
    >>> log = BenchLogger(d, [CSVLogger(d)], start=time.perf_counter(), wall_offset=5.0)
    >>> log.log_test_data({"returns_stat": {"mean": 1.0}}, step=100)
    >>> log.save_data(1, 100, 10)
    >>> sorted(p.name for p in d.iterdir()), read_json(d / PROGRESS_FILE)["env_step"]
    (['progress.json', 'save.csv', 'test.csv'], 100)
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        loggers: list[BaseLogger],
        start: float,
        wall_offset: float = 0.0,
        walls: dict[str, float] | None = None,
    ) -> None:
        super().__init__(train_interval=1000, test_interval=1, update_interval=1000)
        self.run_dir = Path(run_dir)
        self.loggers = loggers
        self.start = start
        self.wall_offset = wall_offset
        self.walls = dict(walls or {})

    def wall(self) -> float:
        """Seconds the run has spent, all sessions together."""
        return self.wall_offset + time.perf_counter() - self.start

    def write(self, scope: str, step: int, data: dict[str, float]) -> None:
        """Write to every logger."""
        for logger in self.loggers:
            logger.write(scope, step, data)

    def save_data(
        self, epoch: int, env_step: int, gradient_step: int, save_checkpoint_fn: Any = None
    ) -> None:
        """Record the epoch's end (see :class:`BaseLogger`) and ``progress.json``."""
        super().save_data(epoch, env_step, gradient_step, save_checkpoint_fn)
        wall = self.wall()
        self.walls[str(epoch)] = wall
        progress = {"epoch": epoch, "env_step": env_step, "gradient_step": gradient_step}
        write_json(self.run_dir / PROGRESS_FILE, {**progress, "wall_s": wall, "walls": self.walls})

    def finalize(self) -> None:
        """Finalize every logger."""
        for logger in self.loggers:
            logger.finalize()


def _make_loggers(spec: RunSpec, run_dir: Path, preset: Any) -> list[BaseLogger]:
    """CSV, plus the spec's W&B (offline unless ``WANDB_MODE=online``) or TensorBoard
    logger."""
    from tdrl.utils.logger import CSVLogger

    loggers: list[BaseLogger] = [CSVLogger(run_dir)]
    if spec.logger == "tensorboard":
        from tdrl.utils.logger import TensorboardLogger

        loggers.append(TensorboardLogger(str(run_dir)))
    elif spec.logger == "wandb":
        from tdrl.utils.logger import WandbLogger

        id_file = run_dir / WANDB_ID_FILE
        if not id_file.is_file():
            id_file.write_text(f"{spec.name}-{secrets.token_hex(4)}".replace("/", "-"))
        # offline unless WANDB_MODE says otherwise, as tdrl train (WandbLogger's rule): a
        # logged-in account does not send a benchmark online by itself
        loggers.append(
            WandbLogger(
                project=spec.wandb_project,
                name=spec.name,
                config={"spec": spec.to_dict(), "preset": dataclasses.asdict(preset)},
                dir=run_dir,
                run_id=id_file.read_text().strip(),
                init_kwargs={"group": spec.group, "job_type": spec.library},
            )
        )
    return loggers


def prepare_run(spec: RunSpec) -> Path:
    """Create the run's directory and its ``run.json`` (kept if present); return the dir."""
    d = spec.dir
    d.mkdir(parents=True, exist_ok=True)
    if read_json(d / SPEC_FILE) is None:
        write_json(d / SPEC_FILE, {"library": spec.library, "spec": spec.to_dict()})
    return d


def _wall_at(run_dir: Path, epoch: int) -> tuple[float, dict[str, float]]:
    """The wall time the run had spent at the end of ``epoch`` (its checkpoint), and the
    per-epoch wall times up to it, from ``progress.json``."""
    progress = read_json(run_dir / PROGRESS_FILE) or {}
    walls = {k: float(v) for k, v in progress.get("walls", {}).items() if int(k) <= epoch}
    return walls.get(str(epoch), float(progress.get("wall_s", 0.0))), walls


def _budget(spec: RunSpec) -> tuple[int, int, int | None, dict[str, Any]]:
    """The run's epochs, steps per epoch, env-step total and preset overrides.

    Online, ``spec.env_steps`` is rounded up to whole collects (:func:`plan_budget`) and
    the trainer ends the run at that total (``max_env_steps``); offline (no env steps),
    the budget counts gradient steps in epochs of about the preset's length. No stop
    threshold: a benchmark never stops early."""
    from tdrl import presets

    base: Any = presets.preset(spec.algo, spec.task, **spec.overrides)
    per_epoch_preset = int(base.step_per_epoch)
    total: int | None
    if presets.entry(spec.algo, spec.task).trainer in ("onpolicy", "offpolicy"):
        collect = getattr(base, "step_per_collect", None)
        if collect is not None:  # a collect rounds up to a step of every env
            envs = max(1, int(getattr(base, "training_num", 1) or 1))
            collect = -(-int(collect) // envs) * envs
        epochs, per_epoch, total = plan_budget(per_epoch_preset, collect, spec.env_steps)
    else:
        epochs, per_epoch = epochs_for_budget(per_epoch_preset, spec.env_steps)
        total = None
    overrides = {
        **spec.overrides,
        "max_epochs": epochs,
        "step_per_epoch": per_epoch,
        "threshold": None,
    }
    return epochs, per_epoch, total, overrides


def planned_env_steps(spec: RunSpec) -> int:
    """The training env steps ``spec``'s run takes: its budget rounded up to whole
    collects (online), or the budget itself (offline: counted in gradient steps)."""
    total = _budget(spec)[2]
    return spec.env_steps if total is None else total


def _build(spec: RunSpec, run_dir: Path, overrides: dict[str, Any], resuming: bool) -> Any:
    """The launcher's experiment for ``spec`` in ``run_dir`` (resumed from its checkpoint
    when ``resuming``: the launcher drops the CSV rows logged after it)."""
    from tdrl.experiment import ExperimentConfig, build_experiment

    cfg = ExperimentConfig(
        algo=spec.algo,
        task=spec.task,
        seed=spec.seed,
        logger="none",  # the bench's own loggers (BenchLogger)
        log_dir=str(run_dir.parent),
        run_dir=str(run_dir),
        checkpoint=spec.checkpoint,
        resume=resuming,
        show_progress=False,
        plot=False,
        overrides=overrides,
    )
    exp = build_experiment(cfg)
    if exp.run_dir.resolve() != run_dir.resolve():
        raise RuntimeError(f"the launcher wrote to {exp.run_dir}, expected {run_dir}")
    return exp


def _done_record(spec: RunSpec, result: Any, wall_s: float, run_dir: Path) -> dict[str, Any]:
    """What ``done.json`` records of a finished run: its budget, steps, epochs, wall time,
    best and final test return."""
    from tdrl.utils.plot import load_curve

    _, returns = load_curve(run_dir)
    return {
        "library": spec.library,
        "algo": spec.algo,
        "task": spec.task,
        "seed": spec.seed,
        "env_steps_budget": spec.env_steps,
        "env_step": int(result.env_step),
        "gradient_step": int(result.gradient_step),
        "epochs": int(result.epoch),
        "wall_s": wall_s,
        "best_reward": float(result.best_reward),
        "final_reward": float(returns[-1]) if len(returns) else float("nan"),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def run(spec: RunSpec, keep_checkpoint: bool = False) -> dict[str, Any]:
    """Train (or finish) one run; return what ``done.json`` records.

    A finished run (``done.json`` present) is not run again: its record is returned.
    """
    d = prepare_run(spec)
    done = read_json(d / DONE_FILE)
    if done is not None:
        return done
    epochs, per_epoch, total, overrides = _budget(spec)
    resuming = (d / CHECKPOINT_FILE).is_file()
    if not resuming:  # a start cut before its first checkpoint: begin afresh
        for stale in [*d.glob("*.csv"), d / PROGRESS_FILE]:
            stale.unlink(missing_ok=True)
    start = time.perf_counter()
    exp = _build(spec, d, overrides, resuming)
    exp.trainer.max_env_steps = total
    record = read_json(d / SPEC_FILE) or {}
    record.update(
        library=spec.library,
        spec=spec.to_dict(),
        max_epochs=epochs,
        step_per_epoch=per_epoch,
        env_steps_total=total,
        preset=dataclasses.asdict(exp.preset),
    )
    write_json(d / SPEC_FILE, record)
    wall_offset, walls = 0.0, dict[str, float]()
    state = getattr(exp.trainer, "resume_state", None)
    if resuming and state is not None:
        epoch = int(state["trainer"]["epoch"])
        wall_offset, walls = _wall_at(d, epoch)
        print(f"resuming {spec.name} at epoch {epoch}", flush=True)
    logger = BenchLogger(d, _make_loggers(spec, d, exp.preset), start, wall_offset, walls)
    exp.trainer.logger = exp.logger = logger
    result = exp.run()
    done = _done_record(spec, result, logger.wall(), d)
    write_json(d / DONE_FILE, done)
    if not keep_checkpoint:
        (d / CHECKPOINT_FILE).unlink(missing_ok=True)
    return done


ALREADY_DONE_EXIT = 76
"""The runner's exit status when its run was already finished (``done.json``), by another
process running the same sweep: the sweep counts it as already done, not as finished by it."""


def main(argv: list[str] | None = None) -> int:
    """``python -m tdrl.benchmark.runner RUN_DIR [--keep-checkpoint]``: run the spec in
    ``RUN_DIR/run.json``; exit status 0 when this process finished it, ``BUSY_EXIT`` when
    another process holds it, ``ALREADY_DONE_EXIT`` when it was already finished."""
    args = sys.argv[1:] if argv is None else argv
    keep = "--keep-checkpoint" in args
    dirs = [a for a in args if not a.startswith("--")]
    if len(dirs) != 1:
        print("usage: python -m tdrl.benchmark.runner RUN_DIR [--keep-checkpoint]", file=sys.stderr)
        return 2
    data = read_json(Path(dirs[0]) / SPEC_FILE)
    if data is None or "spec" not in data:
        print(f"{dirs[0]}: expected a {SPEC_FILE} with the run's spec, found none", file=sys.stderr)
        return 2
    spec = RunSpec.from_dict(data["spec"])
    # the directory given wins over the spec's OUT (a Ray task runs in a copy elsewhere)
    d = Path(dirs[0]).resolve()
    out = d.parents[2] if spec.library == "tdrl" else d.parents[3]
    with run_lock(d) as mine:
        if not mine:
            print(f"{d}: another process is running this run; skipped", flush=True)
            return BUSY_EXIT
        if (d / DONE_FILE).is_file():  # finished by another process since the sweep looked
            print(f"{d}: already finished by another process; skipped", flush=True)
            return ALREADY_DONE_EXIT
        run(dataclasses.replace(spec, out=str(out)), keep_checkpoint=keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
