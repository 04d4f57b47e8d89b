"""What a training run reports when it ends."""

from __future__ import annotations

import pprint
from dataclasses import asdict, dataclass, field


@dataclass
class TrainingTiming:
    """Wall-clock seconds spent in each phase of training, and the resulting speeds."""

    total_time: float = 0.0
    train_collect_time: float = 0.0
    update_time: float = 0.0
    test_time: float = 0.0

    @property
    def train_time(self) -> float:
        """Seconds spent outside testing."""
        return self.total_time - self.test_time


@dataclass
class TrainResult:
    """Best score, counters and timings of a finished (or stopped) training run.

    >>> r = TrainResult(best_reward=200.0, env_step=1000)
    >>> r.timing.total_time = 2.0
    >>> r.env_step_speed
    500.0
    """

    best_reward: float = float("-inf")
    best_reward_std: float = 0.0
    best_epoch: int = 0
    best_trained_reward: float = float("-inf")
    """The best test mean after the first gradient step (``best_reward``, as Tianshou's,
    also counts the test of the untrained policy before the first epoch): what stop
    thresholds, seed sweeps and reports judge."""
    best_trained_reward_std: float = 0.0
    best_trained_epoch: int = 0
    best_score: float = float("-inf")
    """The best test score: the mean return, or what the trainer's ``compute_score_fn``
    makes of the test's stats (Tianshou's ``best_score``); ``best_reward`` is the mean
    return of that test."""
    best_trained_score: float = float("-inf")
    """:attr:`best_score` after the first gradient step: what ``stop_fn`` is given."""
    epoch: int = 0
    env_step: int = 0
    env_episode: int = 0
    gradient_step: int = 0
    stopped_early: bool = False
    timing: TrainingTiming = field(default_factory=TrainingTiming)

    @property
    def env_step_speed(self) -> float:
        """Training env steps per second of non-test wall time."""
        t = self.timing.train_time
        return self.env_step / t if t > 0 else 0.0

    @property
    def update_speed(self) -> float:
        """Gradient steps per second of update time."""
        t = self.timing.update_time
        return self.gradient_step / t if t > 0 else 0.0

    def pprint_asdict(self) -> None:
        """Print the fields as a dict (Tianshou's ``InfoStats.pprint_asdict``).

        >>> TrainResult(env_step=3).pprint_asdict()  # doctest: +ELLIPSIS
        {'best_epoch': 0,
        ...
        """
        pprint.pprint(asdict(self))
