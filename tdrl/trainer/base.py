"""The training loop shared by the on-policy, off-policy and offline trainers.

An epoch is ``step_per_epoch`` training steps (env steps for online trainers, gradient steps
for the offline one) shown in one progress bar, followed by a test phase of
``episode_per_test`` episodes. The best mean test return is tracked; ``stop_fn`` is evaluated
on it after every test (and on training returns when ``test_in_train``), as in Tianshou,
except that a run never stops before it trained: the initial test of an untrained policy
cannot end it (Tianshou stops there when the random policy already reaches the threshold,
reporting success for 0 steps of training), nor can a training return before the first
gradient step. ``best_reward`` counts that initial test, as Tianshou's does; ``stop_fn``
is given ``best_trained_reward``, the best test after the first gradient step, so a high
score of the untrained policy cannot end a run later either (docs/differences.md).

:meth:`BaseTrainer.request_interrupt` (what the launcher's SIGINT/SIGTERM handler calls)
ends the run at the next training-step boundary: a checkpoint of that point is written and
:class:`TrainingInterrupted` raised; resuming from it continues inside the epoch.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from tdrl.data.stats import CollectStats, SequenceSummaryStats
from tdrl.trainer.checkpoint import (
    checkpoint_bytes,
    load_checkpoint,
    save_checkpoint,
    write_bytes,
)
from tdrl.trainer.result import TrainResult
from tdrl.utils import denormal
from tdrl.utils.logger import BaseLogger, LazyLogger
from tdrl.utils.progress import progress_bar
from tdrl.utils.stats import MovAvg
from tdrl.utils.threads import apply_cpu_threads, decide_cpu_threads


def _flat_stats(stats: CollectStats) -> dict[str, float]:
    out: dict[str, float] = {
        "n_collected_episodes": float(stats.n_collected_episodes),
        "n_collected_steps": float(stats.n_collected_steps),
        "collect_speed": float(stats.collect_speed),
    }
    if stats.returns_stat is not None and stats.lens_stat is not None:
        out.update(
            {
                "returns_stat/mean": stats.returns_stat.mean,
                "returns_stat/std": stats.returns_stat.std,
                "lens_stat/mean": stats.lens_stat.mean,
            }
        )
    return out


TIANSHOU_2_NAMES: dict[str, str] = {
    "epoch_num_steps": "step_per_epoch",
    "training_collector": "train_collector",
    "collection_step_num_env_steps": "step_per_collect",
    "collection_step_num_episodes": "episode_per_collect",
    "test_step_num_episodes": "episode_per_test",
    "update_step_num_gradient_steps_per_sample": "update_per_step",
    "update_step_num_repetitions": "repeat_per_collect",
    "training_fn": "train_fn",
    "test_in_training": "test_in_train",
}
"""Tianshou 2.0's trainer parameter names (its ``*TrainerParams``) -> tdrl's (1.x) names;
every tdrl trainer accepts both."""

_F = TypeVar("_F", bound=Callable[..., None])

_MAX_PENDING = 1000
"""Queued updates' stats are read from the device at least this often."""
_BAR_REFRESH_S = 0.5
"""Seconds between two refreshes of the progress bar's smoothed losses."""


def accepts_tianshou_names(init: _F) -> _F:
    """Let a trainer's ``__init__`` take Tianshou 2.0's parameter names
    (:data:`TIANSHOU_2_NAMES`) beside its own; giving both names of one is a ``TypeError``.

    >>> class T:
    ...     @accepts_tianshou_names
    ...     def __init__(self, step_per_epoch: int) -> None:
    ...         self.step_per_epoch = step_per_epoch
    >>> T(epoch_num_steps=5).step_per_epoch
    5
    """

    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        for new, old in TIANSHOU_2_NAMES.items():
            if new in kwargs:
                if old in kwargs:
                    raise TypeError(f"got both {old} and its Tianshou 2.0 name {new}; give one")
                kwargs[old] = kwargs.pop(new)
        init(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class TrainingInterrupted(Exception):
    """Training ended by :meth:`BaseTrainer.request_interrupt` (Ctrl-C, SIGTERM).

    :param reason: what asked (``"SIGINT"``, ``"SIGTERM"``, ...).
    :param checkpoint: where the state at the interruption was saved (``None``: nowhere).
    :param result: the counters and best score so far.
    """

    def __init__(self, reason: str, checkpoint: Path | None, result: TrainResult) -> None:
        super().__init__(f"training interrupted ({reason})")
        self.reason = reason
        self.checkpoint = checkpoint
        self.result = result


class StepAborted(BaseException):
    """Raised inside a training step (by the launcher's stop watchdog, after SIGINT/SIGTERM)
    when the step would not reach its end in time: :meth:`BaseTrainer.run` then saves the
    state of the last step boundary it kept (see :attr:`BaseTrainer.snapshot_after_s`)."""


class BaseTrainer(ABC):
    """Run epochs of training steps and tests; subclasses define one training step.

    Every trainer also takes Tianshou 2.0's parameter names (``epoch_num_steps``,
    ``collection_step_num_env_steps``, ``test_step_num_episodes``, ``training_fn``, ...:
    :data:`TIANSHOU_2_NAMES`).

    Args:
        algorithm: the ``Algorithm`` (loss module with ``policy`` and ``update``).
        max_epochs: number of epochs to run at most.
        step_per_epoch: training steps per epoch (env steps online, gradient steps offline).
        test_collector: collector for the test phase (``None``: no test, no best score).
        episode_per_test: episodes per test phase.
        batch_size: minibatch size passed to ``algorithm.update``.
        train_fn: ``train_fn(epoch, env_step)`` called before each training step.
        test_fn: ``test_fn(epoch, env_step)`` called before each test.
        stop_fn: ``stop_fn(best_mean_test_return) -> bool`` ends training early.
        save_best_fn: ``save_best_fn(algorithm)`` called when the best test score improves.
        compute_score_fn: ``compute_score_fn(test_stats) -> float``, the score a test is
            judged by (best policy, ``stop_fn``); ``None``: the mean test return.
        multi_agent_return_reduction: ``f(returns) -> returns`` applied to the episode
            returns of every collect (for multi-agent envs whose returns are per agent:
            reduce ``[n_episodes, n_agents]`` to one per episode), as in Tianshou.
        save_checkpoint_fn: ``save_checkpoint_fn(epoch, env_step, gradient_step)`` called at
            the end of every epoch (through the logger's ``save_data``).
        resume_from_log: restore ``(epoch, env_step, gradient_step)`` from the logger.
        checkpoint_path: write a full checkpoint (algorithm, optimizers, buffers, envs, RNGs,
            counters) there at the end of every epoch.
        resume: continue from ``checkpoint_path`` if it exists; the resumed run reproduces
            the uninterrupted one exactly on CPU (in-process envs).
        interrupt_checkpoint_path: where :meth:`request_interrupt` saves the run (default:
            ``checkpoint_path``; with neither, an interrupted run is not saved).
        logger: a ``tdrl.utils.logger`` logger (default: log nothing).
        show_progress: draw a progress bar per epoch.
        verbose: print a one-line summary per epoch.
        cpu_threads: torch intra-op threads while training: ``"auto"`` (default) uses one
            for a small model on the CPU unless the user chose (``OMP_NUM_THREADS``,
            ``torch.set_num_threads``; :mod:`tdrl.utils.threads`), an int sets that many,
            ``None`` leaves torch alone.
        max_env_steps: end the run once this many training env steps are collected (checked
            after each collect; the epoch it ends in still ends with its test). ``None``:
            no such limit (Tianshou has none; ``tdrl bench`` uses it to spend a budget of
            env steps exactly, in whole collects).
        flush_denormal: flush denormal floats to zero on the training thread during
            :meth:`run` and put the mode back after (:mod:`tdrl.utils.denormal`: decayed
            Adam moments of dead units made the update up to 12 % slower); ``False``
            leaves torch's float mode alone.
    """

    @accepts_tianshou_names
    def __init__(
        self,
        algorithm: Any,
        max_epochs: int,
        step_per_epoch: int,
        test_collector: Any = None,
        episode_per_test: int = 1,
        batch_size: int | None = 64,
        train_fn: Callable[[int, int], None] | None = None,
        test_fn: Callable[[int, int], None] | None = None,
        stop_fn: Callable[[float], bool] | None = None,
        save_best_fn: Callable[[Any], None] | None = None,
        compute_score_fn: Callable[[CollectStats], float] | None = None,
        multi_agent_return_reduction: Callable[[Any], Any] | None = None,
        save_checkpoint_fn: Callable[[int, int, int], Any] | None = None,
        resume_from_log: bool = False,
        checkpoint_path: str | Path | None = None,
        resume: bool = False,
        interrupt_checkpoint_path: str | Path | None = None,
        logger: BaseLogger | None = None,
        show_progress: bool = True,
        verbose: bool = True,
        max_env_steps: int | None = None,
        cpu_threads: int | str | None = "auto",
        flush_denormal: bool = True,
    ) -> None:
        if max_epochs < 1 or step_per_epoch < 1:
            raise ValueError(
                f"max_epochs and step_per_epoch must be >= 1, got {max_epochs}, {step_per_epoch}"
            )
        if test_collector is None and (stop_fn or test_fn or save_best_fn):
            raise ValueError("stop_fn, test_fn and save_best_fn need a test_collector")
        self.algorithm = algorithm
        self.max_epochs = max_epochs
        self.step_per_epoch = step_per_epoch
        self.test_collector = test_collector
        self.episode_per_test = episode_per_test
        self.batch_size = batch_size
        self.train_fn = train_fn
        self.test_fn = test_fn
        self.stop_fn = stop_fn
        self.save_best_fn = save_best_fn
        self.compute_score_fn = compute_score_fn
        self.multi_agent_return_reduction = multi_agent_return_reduction
        self.save_checkpoint_fn = save_checkpoint_fn
        self.resume_from_log = resume_from_log
        self.checkpoint_path = Path(checkpoint_path) if checkpoint_path is not None else None
        self.resume = resume
        if resume and self.checkpoint_path is None:
            raise ValueError("resume=True needs a checkpoint_path")
        self.interrupt_checkpoint_path = (
            Path(interrupt_checkpoint_path)
            if interrupt_checkpoint_path is not None
            else self.checkpoint_path
        )
        self.logger = logger if logger is not None else LazyLogger()
        self.show_progress = show_progress
        self.verbose = verbose
        self.max_env_steps = max_env_steps
        decide_cpu_threads([], cpu_threads)  # a bad value fails here, not at run()
        self.cpu_threads = cpu_threads
        self.flush_denormal = flush_denormal
        self.result = TrainResult()
        self.loss_stats: dict[str, MovAvg] = {}
        self._pending_updates: list[Mapping[str, float]] = []  # not yet in loss_stats
        self._bar_losses: dict[str, str] = {}
        self._bar_time = -math.inf
        self.resume_state: dict[str, Any] | None = None
        """The checkpoint's contents, when already read (``checkpoint.read_checkpoint``)."""
        self._stop = False
        self._initialized = False
        self._interrupt: str | None = None
        self._epoch_progress = 0  # training steps done in the current (unfinished) epoch
        self._resume_progress = 0  # ... restored from a mid-epoch checkpoint
        self.in_step = False
        """Whether a training step is running (what a stop watchdog may abort)."""
        self._snapshot: bytes | None = None  # the checkpoint of the last step boundary
        self._step_started: float | None = None
        self._snapshot_cost = 0.0  # seconds the last snapshot took

    snapshot_after_s = 1.0
    """A step boundary after a training step longer than this (seconds), and longer than ten
    times what keeping a snapshot costs, keeps the run's checkpoint in memory, so that a stop
    in the middle of the next step (which is likely long too) saves that boundary
    (:class:`StepAborted`); the snapshots cost at most a tenth of the training time. Shorter
    steps reach their boundary soon enough, where the stop saves as usual."""

    def _mark_boundary(self, done: int) -> None:
        """At a step boundary (``done`` steps of this epoch made): keep the state in memory
        when the last step was slow (:attr:`snapshot_after_s`), else forget the old one."""
        now = time.perf_counter()
        took = now - self._step_started if self._step_started is not None else 0.0
        self._snapshot = None
        slow = took > self.snapshot_after_s and took > 10 * self._snapshot_cost
        if slow and self.interrupt_checkpoint_path is not None:
            cut = 1 if done == 0 else 0  # as a stop at this boundary saves it
            self._epoch_progress = done
            self.result.epoch -= cut
            try:
                self._snapshot = checkpoint_bytes(self)
            finally:
                self.result.epoch += cut
            self._snapshot_cost = time.perf_counter() - now
        self._step_started = time.perf_counter()

    def _aborted(self, start: float) -> TrainingInterrupted:
        """A step cut by :class:`StepAborted`: save the last boundary kept in memory (none
        kept: nothing is saved and the last checkpoint on disk stays)."""
        r = self.result
        r.timing.total_time += time.perf_counter() - start
        path = self.interrupt_checkpoint_path
        saved = None
        if path is not None and self._snapshot is not None:
            saved = write_bytes(self._snapshot, path)
        return TrainingInterrupted(self._interrupt or "interrupt", saved, r)

    @property
    def _budget_spent(self) -> bool:
        """Whether ``max_env_steps`` training env steps have been collected."""
        return self.max_env_steps is not None and self.result.env_step >= self.max_env_steps

    def request_interrupt(self, reason: str = "interrupt") -> None:
        """Ask the run to stop at the next training-step boundary, saving a checkpoint
        (safe to call from a signal handler)."""
        self._interrupt = reason

    @property
    def trained(self) -> bool:
        """Whether at least one gradient step happened (a stop test may end the run)."""
        return self.result.gradient_step > 0

    # ----------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """Counters, best score and smoothed losses (for checkpoints)."""
        self._flush_losses()
        r = self.result
        return {
            "epoch": r.epoch,
            "env_step": r.env_step,
            "env_episode": r.env_episode,
            "gradient_step": r.gradient_step,
            "best_reward": r.best_reward,
            "best_reward_std": r.best_reward_std,
            "best_epoch": r.best_epoch,
            "best_trained": [r.best_trained_reward, r.best_trained_reward_std],
            "best_trained_epoch": r.best_trained_epoch,
            "best_score": [r.best_score, r.best_trained_score],
            "loss_stats": {k: v.state_dict() for k, v in self.loss_stats.items()},
            "epoch_progress": self._epoch_progress,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned; the next epoch continues the run."""
        r = self.result
        for key in ("epoch", "env_step", "env_episode", "gradient_step", "best_epoch"):
            setattr(r, key, int(state[key]))
        r.best_reward = float(state["best_reward"])
        r.best_reward_std = float(state["best_reward_std"])
        # checkpoints from before best_trained existed: the best, when it was trained
        trained_best = state.get("best_trained")
        if trained_best is None and r.best_epoch > 0:
            trained_best = [r.best_reward, r.best_reward_std]
        if trained_best is not None:
            r.best_trained_reward, r.best_trained_reward_std = map(float, trained_best)
            r.best_trained_epoch = int(state.get("best_trained_epoch", r.best_epoch))
        # checkpoints from before scores were kept: the score was the mean return
        scores = state.get("best_score", [r.best_reward, r.best_trained_reward])
        r.best_score, r.best_trained_score = map(float, scores)
        self.loss_stats = {}
        self._pending_updates = []
        for k, v in state.get("loss_stats", {}).items():
            self.loss_stats[k] = MovAvg()
            self.loss_stats[k].load_state_dict(v)
        self._resume_progress = int(state.get("epoch_progress", 0))
        self._initialized = True

    # ----------------------------------------------------------------- phases
    def reset(self) -> None:
        """Restore counters from the log if asked, then run the initial test."""
        self._stop = False
        if self.resume_from_log:
            epoch, env_step, gradient_step = self.logger.restore_data()
            self.result.epoch, self.result.env_step = epoch, env_step
            self.result.gradient_step = gradient_step
        self._reset_collectors()
        if self.test_collector is not None and not self._initialized:
            self._test_step(force_best=True)
        self._initialized = True

    def _reset_collectors(self) -> None:
        if self.test_collector is not None:
            self.test_collector.reset(reset_buffer=False)

    def _test_step(self, force_best: bool = False) -> CollectStats:
        start = time.perf_counter()
        r = self.result
        policy = self.algorithm.policy
        policy.is_within_training_step = False
        self.test_collector.reset_env()
        if self.test_fn:
            self.test_fn(r.epoch, r.env_step)
        was_training = policy.training
        policy.eval()
        stats = self.reduce_returns(self.test_collector.collect(n_episode=self.episode_per_test))
        policy.train(was_training)
        self.test_collector.reset_buffer()
        mean = stats.returns_stat.mean if stats.returns_stat else float("nan")
        std = stats.returns_stat.std if stats.returns_stat else 0.0
        score = self.compute_score_fn(stats) if self.compute_score_fn else mean
        if force_best or score > r.best_score:
            r.best_reward, r.best_reward_std, r.best_epoch = mean, std, r.epoch
            r.best_score = score
            if self.save_best_fn:
                self.save_best_fn(self.algorithm)
        if self.trained and score > r.best_trained_score:
            r.best_trained_reward, r.best_trained_reward_std = mean, std
            r.best_trained_epoch, r.best_trained_score = r.epoch, score
        self.logger.log_test_data(_flat_stats(stats), self._test_log_step())
        r.timing.test_time += time.perf_counter() - start
        return stats

    def reduce_returns(self, stats: CollectStats) -> CollectStats:
        """Apply ``multi_agent_return_reduction`` (if given) to a collect's returns."""
        reduce = self.multi_agent_return_reduction
        if reduce is None or stats.n_collected_episodes == 0:
            return stats
        stats.returns = np.asarray(reduce(stats.returns))
        stats.returns_stat = SequenceSummaryStats.from_sequence(stats.returns)
        return stats

    def _test_log_step(self) -> int:
        """The x of a test's log row: env steps (the offline trainer: gradient steps)."""
        return self.result.env_step

    def _log_update(self, stats: Mapping[str, float]) -> None:
        """Queue an update's stats for the smoothed losses; log them when a row is due.

        The values stay on the device (:class:`~tdrl.algorithm.update_stats.UpdateStats`)
        until the logger writes a row or the progress bar refreshes its losses: then all
        queued updates are read with one transfer, so training never waits for the
        device after each update.
        """
        self._pending_updates.append(stats)
        self.logger.log_update_data(stats, self.result.gradient_step)
        if len(self._pending_updates) >= _MAX_PENDING:
            self._flush_losses()

    def _flush_losses(self) -> dict[str, float]:
        """Move the queued updates' stats into the moving averages; return the averages."""
        from tdrl.algorithm.update_stats import materialize

        pending, self._pending_updates = self._pending_updates, []
        materialize(pending)  # one device read for all of them
        for stats in pending:
            for k, v in stats.items():
                self.loss_stats.setdefault(k, MovAvg()).add(float(v))
        return {k: m.get() for k, m in self.loss_stats.items()}

    def _loss_postfix(self) -> dict[str, str]:
        """The smoothed ``loss*`` values for the progress bar, refreshed at most every
        ``_BAR_REFRESH_S`` seconds (each refresh reads the queued stats from the device)."""
        now = time.monotonic()
        if now - self._bar_time >= _BAR_REFRESH_S:
            self._bar_time = now
            smoothed = self._flush_losses()
            self._bar_losses = {k: f"{v:.3f}" for k, v in smoothed.items() if k.startswith("loss")}
        return self._bar_losses

    @abstractmethod
    def _training_step(self) -> tuple[int, dict[str, Any]]:
        """Run one training step; return (progress made, values for the progress bar)."""

    def _run_epoch(self) -> None:
        r = self.result
        if self._resume_progress:  # continue the epoch a mid-epoch checkpoint cut
            done, self._resume_progress = self._resume_progress, 0
        else:
            r.epoch += 1
            done = 0
        with progress_bar(
            total=self.step_per_epoch, desc=f"Epoch #{r.epoch}", disable=not self.show_progress
        ) as bar:
            bar.update(done)
            while done < self.step_per_epoch and not self._stop and not self._budget_spent:
                if self._interrupt is not None:
                    self._epoch_progress = done
                    if done == 0:  # nothing of this epoch ran: resume starts it afresh
                        r.epoch -= 1
                    return
                self._mark_boundary(done)
                self.in_step = True
                if self.train_fn:
                    self.train_fn(r.epoch, r.env_step)
                progress, postfix = self._training_step()
                self.in_step = False
                done += progress
                bar.update(progress)
                bar.set_postfix(postfix)
        self._epoch_progress = 0
        if not self._stop and self.test_collector is not None:
            stats = self._test_step()
            if self.stop_fn and self.trained and self.stop_fn(r.best_trained_reward):
                self._stop = True
            if self.verbose:
                mean = stats.returns_stat.mean if stats.returns_stat else float("nan")
                std = stats.returns_stat.std if stats.returns_stat else 0.0
                print(
                    f"Epoch #{r.epoch}: test_reward: {mean:.6f} ± {std:.6f}, best_reward: "
                    f"{r.best_reward:.6f} ± {r.best_reward_std:.6f} in #{r.best_epoch}",
                    flush=True,
                )
        self.logger.save_data(r.epoch, r.env_step, r.gradient_step, self.save_checkpoint_fn)
        if self.checkpoint_path is not None:
            save_checkpoint(self, self.checkpoint_path)

    def run(self) -> TrainResult:
        """Train until ``max_epochs`` or until ``stop_fn`` holds; return the result.

        Raises :class:`TrainingInterrupted` (after saving a checkpoint) when
        :meth:`request_interrupt` was called.
        """
        with denormal.flush_denormal() if self.flush_denormal else contextlib.nullcontext():
            return self._run()

    def _run(self) -> TrainResult:
        apply_cpu_threads([self.algorithm], self.cpu_threads, report=self.verbose)
        start = time.perf_counter()
        if not self._initialized:
            path = self.checkpoint_path
            if self.resume and path is not None and (self.resume_state or path.exists()):
                load_checkpoint(self, path, self.resume_state)
                self.resume_state = None
            else:
                self.reset()
        r = self.result
        if (
            self.stop_fn
            and self.test_collector is not None
            and self.trained  # a resumed run that already reached it
            and not self._resume_progress
            and self.stop_fn(r.best_trained_score)
        ):
            self._stop = True
        try:
            try:
                while (r.epoch < self.max_epochs or self._resume_progress) and not self._stop:
                    if self._interrupt is not None or self._budget_spent:
                        break
                    self._run_epoch()
            except StepAborted:
                self.in_step = False
                raise self._aborted(start) from None
            if self._interrupt is not None:
                r.timing.total_time += time.perf_counter() - start
                path = self.interrupt_checkpoint_path
                if path is not None:
                    save_checkpoint(self, path)
                raise TrainingInterrupted(self._interrupt, path, r)
        finally:
            self.logger.finalize()
        r.stopped_early = self._stop
        r.timing.total_time += time.perf_counter() - start
        return r
