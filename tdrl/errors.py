"""Errors that are the user's doing (a bad flag, file or run directory), not tdrl bugs.

The command line reports any :class:`UsageError` (and :class:`PresetError`) in one line
with exit status 2, without a traceback unless ``--debug`` is given. Plain data: importing
this module loads no torch.

>>> issubclass(CheckpointError, UsageError), issubclass(UsageError, ValueError)
(True, True)
>>> raise PresetError("dqn preset field 'lr': expected a float > 0, got -1.0", field="lr")
Traceback (most recent call last):
...
tdrl.errors.PresetError: dqn preset field 'lr': expected a float > 0, got -1.0
"""

from __future__ import annotations

__all__ = ["CheckpointError", "PresetError", "RunDirError", "UsageError"]


class UsageError(ValueError):
    """A mistake in what the user asked for: the message names the flag or file, what was
    expected and what was given."""


class CheckpointError(UsageError):
    """A checkpoint, ``policy.pt`` or ``config.yaml`` that is missing, corrupt or of the
    wrong kind; the message names the file."""


class RunDirError(UsageError):
    """A run directory that cannot be used as asked (``--resume`` without a checkpoint,
    ``tdrl eval`` on a directory without a trained policy, ...)."""


class PresetError(ValueError):
    """A preset that does not exist, a bad preset field, or spaces an algorithm cannot use.

    :param field: the preset field the error is about (``None`` if it is about no single
        field); the command line maps it to the flag the user gave.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field
