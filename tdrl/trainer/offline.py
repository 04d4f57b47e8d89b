"""Offline trainer: gradient steps on a fixed buffer, tests between epochs."""

from __future__ import annotations

import time
from typing import Any

from tdrl.trainer.base import BaseTrainer, accepts_tianshou_names


class OfflineTrainer(BaseTrainer):
    """One training step is one ``algorithm.update(buffer, batch_size)`` on a fixed buffer.

    ``step_per_epoch`` counts gradient steps, and test results are logged at the gradient
    step they were taken at (the ``env_step`` column of ``test.csv`` holds gradient steps;
    ``tdrl plot`` labels such runs' x axis so). If the algorithm defines
    ``process_buffer(buffer)``, it runs once before training (e.g. to precompute returns).

    >>> OfflineTrainer.__mro__[1].__name__
    'BaseTrainer'
    """

    @accepts_tianshou_names
    def __init__(
        self, algorithm: Any, buffer: Any, max_epochs: int, step_per_epoch: int, **kwargs: Any
    ) -> None:
        super().__init__(algorithm, max_epochs, step_per_epoch, **kwargs)
        if len(buffer) == 0:
            raise ValueError("OfflineTrainer got an empty buffer")
        process = getattr(algorithm, "process_buffer", None)
        self.buffer = process(buffer) if process is not None else buffer
        self.buffer = self.buffer if self.buffer is not None else buffer

    def _test_log_step(self) -> int:
        """Tests are logged at gradient steps (no env steps happen offline)."""
        return self.result.gradient_step

    def _training_step(self) -> tuple[int, dict[str, Any]]:
        start = time.perf_counter()
        self.algorithm.policy.is_within_training_step = True
        out = self.algorithm.update(self.buffer, self.batch_size)
        self.algorithm.policy.is_within_training_step = False
        r = self.result
        r.gradient_step += 1
        r.timing.update_time += time.perf_counter() - start
        self._log_update(out)
        postfix: dict[str, Any] = {"updates": str(r.gradient_step)}
        postfix.update(self._loss_postfix())
        return 1, postfix
