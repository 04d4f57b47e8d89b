"""Tianshou 2.0's trainer parameter objects, and what ``algorithm.run_training`` does.

``algorithm.run_training(OffPolicyTrainerParams(training_collector=..., ...))`` builds the
matching tdrl trainer from the parameters (:meth:`TrainerParams.create_trainer`) and runs
it. The fields, their defaults and their checks are Tianshou 2.0's; each maps onto a tdrl
trainer argument (:data:`tdrl.trainer.base.TIANSHOU_2_NAMES`), and ``trainer_kwargs``
passes tdrl's own extras (``checkpoint_path``, ``max_env_steps``, ``cpu_threads``, ...).

>>> from dataclasses import fields
>>> [f.name for f in fields(OffPolicyTrainerParams)][-3:]
['test_in_training', 'batch_size', 'update_step_num_gradient_steps_per_sample']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from tdrl.trainer.base import BaseTrainer
from tdrl.trainer.offline import OfflineTrainer
from tdrl.trainer.online import OffPolicyTrainer, OnPolicyTrainer
from tdrl.trainer.result import TrainResult
from tdrl.utils.logger import BaseLogger


@dataclass(kw_only=True)
class TrainerParams:
    """What every trainer takes (Tianshou 2.0's ``TrainerParams``).

    :param max_epochs: epochs to run at most.
    :param epoch_num_steps: training steps per epoch (env steps online, gradient steps
        offline).
    :param test_collector: the collector of the test phase (``None``: no tests).
    :param test_step_num_episodes: episodes per test.
    :param training_fn: ``f(epoch, env_step)`` before each training step.
    :param test_fn: ``f(epoch, env_step)`` before each test.
    :param stop_fn: ``f(score) -> bool``: stop once the best score satisfies it.
    :param compute_score_fn: ``f(test_stats) -> score`` (default: the mean test return).
    :param save_best_fn: ``f(algorithm)`` whenever the best score improves.
    :param save_checkpoint_fn: ``f(epoch, env_step, gradient_step)`` after each epoch.
    :param resume_from_log: restore the counters from the logger.
    :param multi_agent_return_reduction: reduce per-agent returns to one per episode.
    :param logger: the logger (default: log nothing).
    :param verbose: print a line per epoch.
    :param show_progress: show a progress bar per epoch.
    :param trainer_kwargs: tdrl's own trainer arguments (not in Tianshou), passed through.
    """

    trainer_class: ClassVar[type[BaseTrainer]]
    max_epochs: int = 100
    epoch_num_steps: int = 30000
    test_collector: Any = None
    test_step_num_episodes: int = 1
    training_fn: Callable[[int, int], None] | None = None
    test_fn: Callable[[int, int | None], None] | None = None
    stop_fn: Callable[[float], bool] | None = None
    compute_score_fn: Callable[[Any], float] | None = None
    save_best_fn: Callable[[Any], None] | None = None
    save_checkpoint_fn: Callable[[int, int, int], Any] | None = None
    resume_from_log: bool = False
    multi_agent_return_reduction: Callable[[Any], Any] | None = None
    logger: BaseLogger | None = None
    verbose: bool = True
    show_progress: bool = True
    trainer_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.resume_from_log and self.logger is None:
            raise ValueError("resume_from_log: needs a logger, got logger=None")
        if self.test_collector is None:
            for name in ("stop_fn", "test_fn", "save_best_fn"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name}: needs a test_collector, got test_collector=None")
        elif self.test_step_num_episodes < 1:
            raise ValueError(
                f"test_step_num_episodes: expected >= 1 with a test_collector, "
                f"got {self.test_step_num_episodes}"
            )

    def _kwargs(self) -> dict[str, Any]:
        """The trainer's keyword arguments (Tianshou 2.0 names, which trainers accept)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "trainer_kwargs"}
        return {**out, **self.trainer_kwargs}

    def create_trainer(self, algorithm: Any) -> BaseTrainer:
        """The tdrl trainer these parameters describe, for ``algorithm``.

        Raises ``TypeError`` when the algorithm cannot be trained this way (an on-policy
        algorithm with off-policy parameters, or the reverse).
        """
        on_policy = bool(getattr(algorithm, "on_policy", False))
        if isinstance(self, OnPolicyTrainerParams) != on_policy and not isinstance(
            self, OfflineTrainerParams
        ):
            kind = "an on-policy" if on_policy else "an off-policy"
            raise TypeError(
                f"{type(self).__name__}: {type(algorithm).__name__} is {kind} algorithm; "
                f"use {'OnPolicyTrainerParams' if on_policy else 'OffPolicyTrainerParams'}"
            )
        return self.trainer_class(algorithm, **self._kwargs())


@dataclass(kw_only=True)
class OnlineTrainerParams(TrainerParams):
    """Parameters of training with env interaction (Tianshou 2.0's ``OnlineTrainerParams``).

    :param training_collector: the collector of training data.
    :param collection_step_num_env_steps: env steps per collect (exclusive with episodes).
    :param collection_step_num_episodes: episodes per collect.
    :param test_in_training: test as soon as a collect's returns satisfy ``stop_fn``.
    """

    training_collector: Any
    collection_step_num_env_steps: int | None = 2048
    collection_step_num_episodes: int | None = None
    test_in_training: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        given = [
            n
            for n in ("collection_step_num_env_steps", "collection_step_num_episodes")
            if getattr(self, n) is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "collection_step_num_env_steps, collection_step_num_episodes: expected exactly "
                f"one to be set, got {self.collection_step_num_env_steps} and "
                f"{self.collection_step_num_episodes}"
            )
        if self.test_in_training and (self.test_collector is None or self.stop_fn is None):
            raise ValueError("test_in_training: needs a test_collector and a stop_fn")


@dataclass(kw_only=True)
class OnPolicyTrainerParams(OnlineTrainerParams):
    """On-policy training (:class:`~tdrl.trainer.OnPolicyTrainer`).

    :param batch_size: minibatch size (``None``: the whole collect at once).
    :param update_step_num_repetitions: passes over each collect.
    """

    trainer_class: ClassVar[type[BaseTrainer]] = OnPolicyTrainer
    batch_size: int | None = 64
    update_step_num_repetitions: int = 1


@dataclass(kw_only=True)
class OffPolicyTrainerParams(OnlineTrainerParams):
    """Off-policy training (:class:`~tdrl.trainer.OffPolicyTrainer`).

    :param batch_size: minibatch size of each gradient step.
    :param update_step_num_gradient_steps_per_sample: gradient steps per env step collected.
    """

    trainer_class: ClassVar[type[BaseTrainer]] = OffPolicyTrainer
    batch_size: int = 64
    update_step_num_gradient_steps_per_sample: float = 1.0


@dataclass(kw_only=True)
class OfflineTrainerParams(TrainerParams):
    """Training from a fixed buffer (:class:`~tdrl.trainer.OfflineTrainer`).

    :param buffer: the dataset.
    :param batch_size: minibatch size of each gradient step.
    """

    trainer_class: ClassVar[type[BaseTrainer]] = OfflineTrainer
    buffer: Any
    batch_size: int = 64


def run_training(algorithm: Any, params: TrainerParams) -> TrainResult:
    """Build the trainer ``params`` describe for ``algorithm`` and run it."""
    if not isinstance(params, TrainerParams):
        raise TypeError(
            f"params: expected OnPolicyTrainerParams, OffPolicyTrainerParams or "
            f"OfflineTrainerParams, got {type(params).__name__}"
        )
    return params.create_trainer(algorithm).run()
