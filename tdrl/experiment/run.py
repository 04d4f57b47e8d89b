"""One assembled run (:class:`Experiment`) and how it trains: interrupts, the final policy,
the learning curve and the summary line.

:func:`tdrl.experiment.build.build_experiment` assembles an :class:`Experiment` from an
:class:`~tdrl.experiment.config.ExperimentConfig`; :meth:`Experiment.run` trains it. SIGINT
and SIGTERM during training save ``checkpoint.pt`` and ``policy.pt`` and raise
:class:`~tdrl.trainer.TrainingInterrupted`.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tdrl.data.collector import Collector
from tdrl.experiment.config import ExperimentConfig, summary_line
from tdrl.experiment.policy import POLICY_FILE, save_policy
from tdrl.presets import registry
from tdrl.trainer import TrainingInterrupted, TrainResult
from tdrl.trainer.base import StepAborted
from tdrl.utils.logger import BaseLogger

__all__ = ["CURVE_KEY", "STOP_WITHIN_S", "Experiment"]

CURVE_KEY = "test/returns_stat/mean"
"""The logged key ``curve.png`` draws."""


STOP_WITHIN_S = 4.0
"""After a first SIGINT/SIGTERM, a training step still running this many seconds later is
aborted (:class:`~tdrl.trainer.base.StepAborted`), so a run stops within 5 seconds."""


@contextlib.contextmanager
def _interrupt_handlers(trainer: Any) -> Iterator[None]:
    """While training: SIGINT/SIGTERM ask the trainer to stop at the next step boundary,
    where it saves a checkpoint; a step still running :data:`STOP_WITHIN_S` seconds later
    is aborted and the trainer saves the last step boundary it kept. A second signal
    interrupts at once. Only in the main thread, where signals arrive."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[signal.Signals, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if trainer._interrupt is not None:  # second signal: stop now
            raise KeyboardInterrupt(name)
        trainer.request_interrupt(name)
        signal.setitimer(signal.ITIMER_REAL, STOP_WITHIN_S)

    def watchdog(signum: int, frame: Any) -> None:
        if getattr(trainer, "in_step", False):  # (at a boundary the trainer is saving)
            raise StepAborted(f"step still running {STOP_WITHIN_S} s after the stop signal")

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, watchdog)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, old in previous.items():
            signal.signal(sig, old)


@dataclass
class Experiment:
    """Everything :func:`build_experiment` assembled for one run; :meth:`run` trains it.

    ``train_collector`` is ``None`` for offline algorithms (their trainer samples
    ``dataset``); ``dataset`` is ``None`` for online ones that need none.
    """

    cfg: ExperimentConfig
    preset: Any
    entry: registry.Entry
    algorithm: Any
    train_envs: Any
    test_envs: Any
    train_collector: Collector | None
    test_collector: Collector
    buffer: Any
    dataset: Any
    trainer: Any
    logger: BaseLogger
    run_dir: Path

    @property
    def offline(self) -> bool:
        """Whether the trainer counts gradient steps on a fixed dataset."""
        return self.entry.trainer == "offline"

    def close(self) -> None:
        """Close the envs (and a Ray collector's workers)."""
        if self.train_envs is not None:
            self.train_envs.close()
        close = getattr(self.train_collector, "close", None)
        if close is not None:
            close()
        self.test_envs.close()

    def save_policy(self) -> Path:
        """Write ``RUN_DIR/policy.pt``: the policy's weights (and the observation
        normalizer's statistics when the run normalizes), for :func:`tdrl.load_policy`."""
        obs_rms = getattr(self.train_envs, "obs_rms", None) or getattr(
            self.test_envs, "obs_rms", None
        )
        return save_policy(
            self.algorithm.policy,
            self.run_dir / POLICY_FILE,
            self.cfg.algo,
            self.preset.task,
            obs_rms=obs_rms,
        )

    def _compile_warmup(self) -> None:
        """``--compile``: compile the update now, on a batch of the buffer (or of random
        transitions from the spaces before the first collect), with every parameter,
        optimizer state, counter and RNG restored afterwards, so the first epoch's time
        is training and the run continues exactly as it would have."""
        from tdrl.algorithm.compile import synthetic_buffer, warmup

        p = self.preset
        data = self.dataset if self.offline else self.buffer
        if data is None or len(data) == 0:
            env = self.test_envs
            data = synthetic_buffer(
                env.observation_space[0],
                env.action_space[0],
                max(1, int(getattr(p, "training_num", 1))),
                max(int(getattr(p, "batch_size", None) or 1), 64),
            )
        batch_size = getattr(p, "batch_size", None)
        seconds = warmup(self.algorithm, data, batch_size)
        print(f"compiled the update in {seconds:.1f} s", flush=True)
        param = next(self.algorithm.parameters(), None)
        if param is not None and param.device.type == "cpu":
            from tdrl.algorithm.compile import compare_with_eager

            fast, slow = compare_with_eager(self.algorithm, data, batch_size)
            if fast >= slow:
                print(
                    f"--compile on the CPU: a compiled update takes {fast * 1e3:.2f} ms, an "
                    f"eager one {slow * 1e3:.2f} ms (measured just now); eager is faster "
                    "here, so this run is slower with --compile: drop the flag",
                    flush=True,
                )

    def run(self, summary: bool = True) -> TrainResult:
        """Train, close the envs, save ``policy.pt``, draw ``curve.png`` and print the
        summary line (unless ``summary=False``, for a caller that removes the run
        directory): ``ALGO on TASK: best test return X ± Y (epoch E; the saved policy is
        epoch L's), N env steps, T s; logs in DIR`` (offline: ``N gradient steps``).

        SIGINT/SIGTERM end training at the next step boundary, within
        :data:`STOP_WITHIN_S` seconds (a longer step is aborted and the last boundary the
        trainer kept is saved): ``checkpoint.pt`` and ``policy.pt`` are saved and
        :class:`~tdrl.trainer.TrainingInterrupted` is raised.
        """
        cfg = self.cfg
        if cfg.compile is not None:
            self._compile_warmup()
        start = time.perf_counter()
        try:
            with _interrupt_handlers(self.trainer):
                result: TrainResult = self.trainer.run()
        except TrainingInterrupted:
            self.save_policy()
            raise
        finally:
            self.close()
        self.save_policy()
        seconds = time.perf_counter() - start
        line = summary_line(
            cfg.algo, self.preset.task, result, seconds, self.run_dir, offline=self.offline
        )
        if cfg.plot:
            from tdrl.utils.plot import plot_runs

            try:
                out = plot_runs(
                    [self.run_dir],
                    key=CURVE_KEY,
                    out=self.run_dir / "curve.png",
                    is_offline=lambda algo, task: self.offline,
                )
                print(f"learning curve: {out}", flush=True)
            except (FileNotFoundError, KeyError, ValueError) as exc:  # e.g. nothing tested
                print(f"no learning curve: {exc}", flush=True)
        if summary:
            print(line, flush=True)  # the last line of every run
        return result
