"""Run a sweep: K runs at a time, each in its own process, with one progress display.

:func:`run_sweep` skips the finished runs (``done.json``), resumes the interrupted ones
from their checkpoints and starts the others, ``workers`` at a time:

* ``backend="local"``: each run is a child process ``python -m tdrl.benchmark.runner
  RUN_DIR`` (its output in ``RUN_DIR/stdout.log``);
* ``backend="ray"``: each run is a Ray task (:mod:`tdrl.benchmark.ray_backend`).

The progress bar counts training env steps over the whole sweep (read from each run's
``progress.json`` after every epoch), with the numbers of runs done, running and failed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tdrl.benchmark.plan import BUSY_EXIT, RunSpec
from tdrl.benchmark.runner import planned_env_steps

__all__ = ["SweepResult", "default_workers", "run_sweep"]

LOG_FILE = "stdout.log"


def default_workers() -> int:
    """One worker per CPU core this process may use.

    >>> default_workers() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class SweepResult:
    """What a sweep did: runs skipped (already finished), finished now, failed, and busy
    (held by another process running the same sweep: :func:`~tdrl.benchmark.plan.run_lock`)."""

    skipped: list[RunSpec] = field(default_factory=list)
    finished: list[RunSpec] = field(default_factory=list)
    failed: list[tuple[RunSpec, str]] = field(default_factory=list)
    busy: list[RunSpec] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether no run failed."""
        return not self.failed


class _Progress:
    """The sweep's progress bar: env steps of all runs, runs done / running / failed."""

    def __init__(self, specs: list[RunSpec], show: bool) -> None:
        from tdrl.utils.progress import progress_bar

        self.specs = specs
        # the env steps each run really trains (its budget rounded up to whole collects)
        self.totals = [planned_env_steps(s) for s in specs]
        # steps done before this sweep (finished or resumed runs) are its start, not
        # progress made at some rate
        self.bar = progress_bar(
            total=sum(self.totals),
            desc="sweep",
            disable=not show,
            unit="step",
            initial=self._steps(),
        )
        self.state: tuple[int, ...] = ()

    def _steps(self) -> int:
        return sum(min(s.progress(), t) for s, t in zip(self.specs, self.totals))

    def update(self, running: list[RunSpec], done: int, failed: int) -> None:
        steps = self._steps()
        state = (steps, done, len(running), failed)
        if state == self.state:
            return
        self.state = state
        if self.bar.disable:  # --no-progress: one line per change (an epoch, a run's end)
            if not self.specs:
                return
            print(
                f"sweep: {steps:,}/{sum(self.totals):,} env steps; runs {done}/"
                f"{len(self.specs)} done, {len(running)} running, {failed} failed",
                flush=True,
            )
            return
        self.bar.update(max(0, steps - self.bar.n))
        self.bar.set_postfix(
            runs=f"{done}/{len(self.specs)}", running=len(running), failed=failed, refresh=False
        )
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def _child_env() -> dict[str, str]:
    """The environment of a run's process: one intra-op thread unless asked otherwise."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    return env


def _run_local(
    todo: list[RunSpec],
    workers: int,
    result: SweepResult,
    progress: _Progress,
    keep_checkpoints: bool,
    poll: float,
) -> None:
    from tdrl.benchmark.runner import (  # (not at import: ``-m`` runs it)
        ALREADY_DONE_EXIT,
        prepare_run,
    )

    pending = list(todo)
    running: dict[str, tuple[RunSpec, subprocess.Popen[bytes], Any]] = {}
    try:
        while pending or running:
            while pending and len(running) < workers:
                spec = pending.pop(0)
                d = prepare_run(spec)
                log = open(d / LOG_FILE, "ab")  # noqa: SIM115 (closed when the run ends)
                cmd = [sys.executable, "-m", "tdrl.benchmark.runner", str(d)]
                if keep_checkpoints:
                    cmd.append("--keep-checkpoint")
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=_child_env())
                running[spec.name] = (spec, proc, log)
            time.sleep(poll)
            for name, (spec, proc, log) in list(running.items()):
                code = proc.poll()
                if code is None:
                    continue
                log.close()
                del running[name]
                if code == 0 and spec.finished():
                    result.finished.append(spec)
                elif code == ALREADY_DONE_EXIT:  # finished by another process meanwhile
                    result.skipped.append(spec)
                elif code == BUSY_EXIT:
                    result.busy.append(spec)
                else:
                    result.failed.append((spec, f"exit status {code}, see {spec.dir / LOG_FILE}"))
            progress.update(
                [r[0] for r in running.values()],
                len(result.skipped) + len(result.finished),
                len(result.failed),
            )
    finally:
        for _, proc, _ in running.values():  # interrupted: stop our children
            proc.terminate()
        for _, proc, log in running.values():
            try:
                proc.wait(timeout=300)  # a checkpoint of a big buffer takes a while
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


def run_sweep(
    specs: list[RunSpec],
    workers: int | None = None,
    backend: str = "local",
    show_progress: bool = True,
    keep_checkpoints: bool = False,
    poll: float = 1.0,
) -> SweepResult:
    """Run every spec not finished yet, ``workers`` at a time (default: one per core).

    >>> run_sweep([], backend="local", show_progress=False).ok
    True
    """
    if backend not in ("local", "ray"):
        raise ValueError(f"backend: expected 'local' or 'ray', got {backend!r}")
    workers = default_workers() if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers: expected an int >= 1, got {workers}")
    result = SweepResult()
    todo: list[RunSpec] = []
    for spec in specs:
        (result.skipped if spec.finished() else todo).append(spec)
    progress = _Progress(specs, show_progress)
    previous = _stop_on_sigterm()
    try:
        progress.update([], len(result.skipped), 0)
        if todo and backend == "local":
            _run_local(todo, workers, result, progress, keep_checkpoints, poll)
        elif todo:
            from tdrl.benchmark.ray_backend import run_ray

            run_ray(todo, workers, result, progress, keep_checkpoints, poll)
    finally:
        progress.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return result


def _stop_on_sigterm() -> Any:
    """Make SIGTERM stop the sweep like Ctrl-C (the running runs are stopped, and save a
    checkpoint); return the previous handler (``None`` outside the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    return signal.signal(signal.SIGTERM, stop)
