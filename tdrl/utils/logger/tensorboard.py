"""A logger that writes TensorBoard event files (``torch.utils.tensorboard``)."""

from __future__ import annotations

import os
from typing import Any

from tdrl.utils.logger.base import (
    SCOPE_STEP,
    BaseLogger,
    read_resume_file,
    write_resume_file,
)

__all__ = ["TensorboardLogger", "read_tensorboard_scalars"]


def read_tensorboard_scalars(log_dir: str | os.PathLike[str]) -> dict[str, list[tuple[int, float]]]:
    """Read every scalar series of the event files in ``log_dir``: ``{tag: [(step, value)]}``."""
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {
        tag: [(e.step, float(e.value)) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]
    }


class TensorboardLogger(BaseLogger):
    """Log scalars with a ``SummaryWriter``: tag ``scope/key``, global step = the scope's step.

    Each write also records the step counter itself (e.g. ``test/env_step``), as Tianshou does.
    ``save_data`` writes ``save/epoch``, ``save/env_step`` and ``save/gradient_step`` plus a
    small JSON sidecar; :meth:`restore_data` reads the sidecar, or the event files when the
    sidecar is missing (e.g. a directory written by Tianshou's logger).

    :param writer: a ``SummaryWriter``, or a directory to create one in.
    :param write_flush: flush after every write (so a crash loses nothing).
    :param kwargs: the intervals of :class:`~tdrl.utils.logger.base.BaseLogger`.
    """

    def __init__(self, writer: Any, write_flush: bool = True, **kwargs: int | None) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        if isinstance(writer, str | os.PathLike):
            from torch.utils.tensorboard import SummaryWriter

            writer = SummaryWriter(str(writer))
        self.writer = writer
        self.log_dir: str = writer.log_dir
        self.write_flush = write_flush

    def write(self, scope: str, step: int, data: dict[str, float]) -> None:
        """Add one scalar per key at ``step``."""
        self.writer.add_scalar(f"{scope}/{SCOPE_STEP.get(scope, 'step')}", step, global_step=step)
        for key, value in data.items():
            self.writer.add_scalar(key, value, global_step=step)
        if scope == "save":
            write_resume_file(
                self.log_dir, step, int(data["save/env_step"]), int(data["save/gradient_step"])
            )
        if self.write_flush:
            self.writer.flush()

    def restore_data(self) -> tuple[int, int, int]:
        """``(epoch, env_step, gradient_step)`` of the last save (sidecar, else event files)."""
        saved = read_resume_file(self.log_dir)
        if saved is None:
            scalars = read_tensorboard_scalars(self.log_dir)

            def last(tag: str) -> int:
                series = scalars.get(tag)
                return int(series[-1][1]) if series else 0

            saved = (last("save/epoch"), last("save/env_step"), last("save/gradient_step"))
        return self._restored(*saved)

    def finalize(self) -> None:
        """Close the writer."""
        self.writer.close()
