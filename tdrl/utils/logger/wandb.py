"""A Weights & Biases logger that works offline by default."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tdrl.utils.logger.base import (
    SCOPE_STEP,
    BaseLogger,
    read_resume_file,
    write_resume_file,
)
from tdrl.utils.logger.tensorboard import TensorboardLogger

__all__ = ["WandbLogger", "resolve_wandb_mode"]


def resolve_wandb_mode(mode: str | None = None) -> str:
    """The mode to run wandb in: ``mode`` if given, else ``$WANDB_MODE``, else ``"offline"``.

    >>> resolve_wandb_mode("online")
    'online'
    """
    resolved = mode or os.environ.get("WANDB_MODE") or "offline"
    if resolved not in ("online", "offline", "disabled", "shared", "run", "dryrun"):
        raise ValueError(
            f"mode: expected one of 'online', 'offline', 'disabled' (or $WANDB_MODE), "
            f"got {resolved!r}"
        )
    return resolved


class WandbLogger(BaseLogger):
    """Log to Weights & Biases; offline unless asked otherwise, so it never needs an account.

    Each scope gets its own x axis (``wandb.define_metric("test/*", step_metric=
    "test/env_step")``), so train, test and update curves do not fight over wandb's step.
    Offline runs land in ``<dir>/wandb/offline-run-*`` and can be uploaded later with
    ``wandb sync``.

    :param project: wandb project (default ``"tdrl"``).
    :param name: run name.
    :param entity: wandb entity (team or user).
    :param config: run configuration (hyper-parameters) to record.
    :param mode: ``"offline"`` (default unless ``$WANDB_MODE`` says otherwise), ``"online"``
        or ``"disabled"``.
    :param dir: the run directory; it also holds the resume sidecar (default: the current
        directory, as wandb does).
    :param run_id: resume this run id (``resume="allow"``).
    :param tensorboard_dir: if given, also write the same scalars as TensorBoard event files
        there.
    :param init_kwargs: more keyword arguments for ``wandb.init``.
    :param kwargs: the intervals of :class:`~tdrl.utils.logger.base.BaseLogger`.
    """

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        entity: str | None = None,
        config: dict[str, Any] | None = None,
        mode: str | None = None,
        dir: str | os.PathLike[str] | None = None,
        run_id: str | None = None,
        tensorboard_dir: str | os.PathLike[str] | None = None,
        init_kwargs: dict[str, Any] | None = None,
        **kwargs: int | None,
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        try:
            import wandb
        except ImportError as exc:  # pragma: no cover - wandb is an optional dependency
            raise ImportError("WandbLogger needs wandb: pip install 'tdrl[logging]'") from exc
        self.mode = resolve_wandb_mode(mode)
        self.log_dir = Path(dir) if dir is not None else Path.cwd()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        extra = dict(init_kwargs or {})
        extra.setdefault("settings", wandb.Settings(silent=True))
        if run_id is not None:
            # only when given: with wandb 0.31, an explicit id=None / resume=None leaves the
            # offline run file empty
            extra.setdefault("id", run_id)
            extra.setdefault("resume", "allow")
        self.run = wandb.init(
            project=project or "tdrl",
            name=name,
            entity=entity,
            config=config,
            mode=self.mode,  # type: ignore[arg-type]
            dir=str(self.log_dir),
            **extra,
        )
        self._defined: set[str] = set()
        self.tensorboard = (
            TensorboardLogger(str(tensorboard_dir)) if tensorboard_dir is not None else None
        )

    def write(self, scope: str, step: int, data: dict[str, float]) -> None:
        """``run.log`` the data together with the scope's step counter."""
        step_key = f"{scope}/{SCOPE_STEP.get(scope, 'step')}"
        if scope not in self._defined:
            self.run.define_metric(step_key)
            self.run.define_metric(f"{scope}/*", step_metric=step_key)
            self._defined.add(scope)
        self.run.log({step_key: step, **data})
        if scope == "save":
            write_resume_file(
                self.log_dir, step, int(data["save/env_step"]), int(data["save/gradient_step"])
            )
        if self.tensorboard is not None:
            self.tensorboard.write(scope, step, data)

    def restore_data(self) -> tuple[int, int, int]:
        """``(epoch, env_step, gradient_step)`` from the sidecar in ``dir``, else the resumed
        run's summary, else zeros."""
        saved = read_resume_file(self.log_dir)
        if saved is None:
            summary = getattr(self.run, "summary", {})
            try:
                saved = (
                    int(summary.get("save/epoch", 0)),
                    int(summary.get("save/env_step", 0)),
                    int(summary.get("save/gradient_step", 0)),
                )
            except (TypeError, ValueError):
                saved = (0, 0, 0)
        return self._restored(*saved)

    def finalize(self) -> None:
        """Finish the wandb run (and close the TensorBoard writer)."""
        self.run.finish()
        if self.tensorboard is not None:
            self.tensorboard.finalize()
