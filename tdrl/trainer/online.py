"""Online trainers: collect with the training collector, then update the algorithm."""

from __future__ import annotations

import time
from abc import abstractmethod
from typing import Any

from tdrl.data.stats import CollectStats
from tdrl.trainer.base import BaseTrainer, _flat_stats, accepts_tianshou_names


class OnlineTrainer(BaseTrainer):
    """Shared collect step of the on- and off-policy trainers.

    Args (beyond :class:`BaseTrainer`'s):
        train_collector: the collector that gathers training data.
        step_per_collect: env steps per collect (XOR ``episode_per_collect``).
        episode_per_collect: episodes per collect.
        test_in_train: when ``stop_fn`` holds on the training returns, run a test and stop
            if it holds there too.
    """

    @accepts_tianshou_names
    def __init__(
        self,
        algorithm: Any,
        train_collector: Any,
        max_epochs: int,
        step_per_epoch: int,
        step_per_collect: int | None = None,
        episode_per_collect: int | None = None,
        test_in_train: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(algorithm, max_epochs, step_per_epoch, **kwargs)
        if (step_per_collect is None) == (episode_per_collect is None):
            raise ValueError(
                "exactly one of step_per_collect and episode_per_collect must be given, got "
                f"{step_per_collect} and {episode_per_collect}"
            )
        if test_in_train and (self.stop_fn is None or self.test_collector is None):
            raise ValueError("test_in_train needs stop_fn and a test_collector")
        self.train_collector = train_collector
        self.step_per_collect = step_per_collect
        self.episode_per_collect = episode_per_collect
        self.test_in_train = test_in_train
        self._last_train: dict[str, float] = {}

    def _reset_collectors(self) -> None:
        self.train_collector.reset(reset_buffer=False)
        super()._reset_collectors()

    def _collect(self) -> CollectStats:
        r = self.result
        start = time.perf_counter()
        self.algorithm.policy.is_within_training_step = True
        stats = self.reduce_returns(
            self.train_collector.collect(
                n_step=self.step_per_collect, n_episode=self.episode_per_collect
            )
        )
        r.env_step += stats.n_collected_steps
        r.env_episode += stats.n_collected_episodes
        r.timing.train_collect_time += time.perf_counter() - start
        flat = _flat_stats(stats)
        self.logger.log_train_data(flat, r.env_step)
        if stats.returns_stat is not None:
            self._last_train = {"rew": stats.returns_stat.mean, "len": flat["lens_stat/mean"]}
        if (
            self.test_in_train
            and stats.returns_stat is not None
            and self.stop_fn is not None
            and self.trained
            and self.stop_fn(
                self.compute_score_fn(stats) if self.compute_score_fn else stats.returns_stat.mean
            )
        ):
            self._test_step()
            if self.stop_fn(r.best_trained_score):
                self._stop = True
        return stats

    @abstractmethod
    def _update(self, stats: CollectStats) -> None:
        """Run the algorithm's update(s) after a collect."""

    def _training_step(self) -> tuple[int, dict[str, Any]]:
        stats = self._collect()
        if not self._stop:
            start = time.perf_counter()
            self.algorithm.policy.is_within_training_step = True
            self._update(stats)
            self.algorithm.policy.is_within_training_step = False
            self.result.timing.update_time += time.perf_counter() - start
        r = self.result
        # as strings: tqdm would print 20000 as 2e+4; "updates" counts update calls (an
        # on-policy one runs many minibatch gradient steps), Tianshou's gradient_step
        postfix: dict[str, Any] = {"env_step": str(r.env_step), "updates": str(r.gradient_step)}
        postfix.update({k: f"{v:.3f}" for k, v in self._last_train.items()})
        postfix.update(self._loss_postfix())
        return stats.n_collected_steps, postfix


class OnPolicyTrainer(OnlineTrainer):
    """Collect, update on the whole buffer ``repeat_per_collect`` times, clear the buffer.

    >>> OnPolicyTrainer.__mro__[1].__name__
    'OnlineTrainer'
    """

    @accepts_tianshou_names
    def __init__(self, *args: Any, repeat_per_collect: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if repeat_per_collect < 1:
            raise ValueError(f"repeat_per_collect must be >= 1, got {repeat_per_collect}")
        self.repeat_per_collect = repeat_per_collect

    def _update(self, stats: CollectStats) -> None:
        out = self.algorithm.update(
            self.train_collector.buffer, self.batch_size, repeat=self.repeat_per_collect
        )
        self.result.gradient_step += 1
        self.train_collector.reset_buffer(keep_statistics=True)
        self._log_update(out)


class OffPolicyTrainer(OnlineTrainer):
    """Collect, then ``round(update_per_step * steps collected)`` gradient steps.

    >>> OffPolicyTrainer.__mro__[1].__name__
    'OnlineTrainer'
    """

    @accepts_tianshou_names
    def __init__(self, *args: Any, update_per_step: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if update_per_step <= 0:
            raise ValueError(f"update_per_step must be > 0, got {update_per_step}")
        self.update_per_step = update_per_step

    def _update(self, stats: CollectStats) -> None:
        n = round(self.update_per_step * stats.n_collected_steps)
        if n < 1:
            raise ValueError(
                f"update_per_step={self.update_per_step} x {stats.n_collected_steps} collected "
                "steps rounds to zero gradient steps"
            )
        for _ in range(n):
            out = self.algorithm.update(self.train_collector.buffer, self.batch_size)
            self.result.gradient_step += 1
            self._log_update(out)
