"""The ``tdrl`` command line: one module per subcommand.

* :mod:`tdrl.cli.main`: the command table and :func:`main` (the ``tdrl`` entry point);
* :mod:`tdrl.cli.train`: ``tdrl train`` (two-stage parsing, config files, resume);
* :mod:`tdrl.cli.args`: the run flags and one flag per preset field;
* :mod:`tdrl.cli.recipe`: the command line of the scripts in ``recipes/``;
* :mod:`tdrl.cli.eval`, :mod:`~tdrl.cli.gather`, :mod:`~tdrl.cli.bench`,
  :mod:`~tdrl.cli.report`, :mod:`~tdrl.cli.plot`: the other subcommands.

The names below are re-exported here, where they lived before the package was split.
Importing the package loads no torch.
"""

from tdrl.cli.args import ArgumentParser, add_preset_flags, field_flags, is_user_error
from tdrl.cli.main import COMMANDS, main
from tdrl.cli.recipe import parse_recipe_args
from tdrl.cli.train import parse_train, run_config, train_main
from tdrl.experiment.config import (
    COMPILE_MODES,
    LOGGERS,
    MAX_SEED,
    PRESET_ALIASES,
    RUN_OPTIONS,
    check_run_options,
    summary_line,
)
from tdrl.experiment.rundir import read_config_file

CONFIG_ALIASES = PRESET_ALIASES
"""Config-file keys that name a preset field by another name (the preset fields' aliases)."""
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    name: field_flags(name) for name in dict.fromkeys(PRESET_ALIASES.values())
}
"""The flags of the preset fields that have other names (``--epochs``/``--max-epochs``)."""

__all__ = [
    "COMMANDS",
    "COMPILE_MODES",
    "CONFIG_ALIASES",
    "FIELD_ALIASES",
    "LOGGERS",
    "MAX_SEED",
    "RUN_OPTIONS",
    "ArgumentParser",
    "add_preset_flags",
    "check_run_options",
    "is_user_error",
    "main",
    "parse_recipe_args",
    "parse_train",
    "read_config_file",
    "run_config",
    "summary_line",
    "train_main",
]
