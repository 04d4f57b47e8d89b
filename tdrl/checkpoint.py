"""Compatibility alias: a run directory's files now live in :mod:`tdrl.experiment.rundir`
(``config.yaml``, run directories) and :mod:`tdrl.experiment.policy` (``policy.pt``,
:func:`load_policy`). Nothing in the library imports this module.
"""

from __future__ import annotations

from tdrl.errors import CheckpointError
from tdrl.experiment.policy import (
    POLICY_FILE,
    POLICY_FORMAT,
    load_policy,
    read_policy_file,
    rebuild,
    save_policy,
)
from tdrl.experiment.rundir import (
    CONFIG_FILE,
    RUN_KEYS,
    config_preset_fields,
    preset_fields,
    read_run_config,
    write_run_config,
)

__all__ = [
    "CONFIG_FILE",
    "POLICY_FILE",
    "POLICY_FORMAT",
    "RUN_KEYS",
    "CheckpointError",
    "config_preset_fields",
    "load_policy",
    "preset_fields",
    "read_policy_file",
    "read_run_config",
    "rebuild",
    "save_policy",
    "write_run_config",
]
