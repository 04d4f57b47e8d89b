"""The flags ``tdrl train`` and the recipes share: run flags and one flag per preset field.

Every preset field is a flag, dashes for underscores (``--lr 3e-4 --batch-size 256
--hidden-sizes 256 256``):

* numbers and strings take one value; tuples take several (``--hidden-sizes 64 64``);
* booleans: ``--obs-norm`` / ``--no-obs-norm``, or ``--obs-norm false`` (also ``true``,
  ``yes``/``no``, ``on``/``off``, ``1``/``0``);
* a field that may be ``None`` takes ``none``;
* the other names of a field (:data:`~tdrl.experiment.config.PRESET_ALIASES`: Tianshou
  2.0's names and the run-option shorthands) are flags too: ``--epochs``/``--max-epochs``,
  ``--step-per-epoch``/``--epoch-num-steps``, ``--training-num``/``--num-training-envs``,
  ``--test-num``/``--num-test-envs``, ``--stop-reward``/``--threshold``.

Plain data: parsing loads no torch.

>>> field_flags("max_epochs"), field_flags("step_per_epoch"), field_flags("lr")
(('--epochs', '--max-epochs'), ('--step-per-epoch', '--epoch-num-steps'), ('--lr',))
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from tdrl.errors import PresetError, UsageError
from tdrl.experiment.config import (
    COMPILE_MODES,
    LOGGERS,
    MAX_SEED,
    PRESET_ALIASES,
    RUN_OPTIONS,
    SHORTHANDS,
)
from tdrl.presets import registry

__all__ = [
    "ArgumentParser",
    "add_preset_flags",
    "add_run_flags",
    "fail",
    "field_error",
    "field_flags",
    "is_user_error",
    "positive_int",
    "seed_type",
]

_TRUE = {"true", "yes", "on", "1", "y", "t"}
_FALSE = {"false", "no", "off", "0", "n", "f"}


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, but an error is one line on stderr (no usage block), exit 2."""

    def error(self, message: str) -> Any:
        """Print ``PROG: error: MESSAGE`` and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message}\n")


def fail(prog: str, message: str) -> NoReturn:
    """An argument error: one line on stderr and ``SystemExit(2)``, as argparse's own."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's mistake (reported in one line) rather than a bug."""
    return isinstance(exc, (PresetError, UsageError)) or (type(exc).__module__ == "gymnasium.error")


def seed_type(text: str) -> int:
    """argparse ``type`` of ``--seed``: an int in ``[0, 2**32 - 1]``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an int in [0, {MAX_SEED}], got {text!r}"
        ) from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected an int in [0, {MAX_SEED}], got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse ``type`` of a count: an int >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {value}")
    return value


# ------------------------------------------------------------------------ run flags
_RUN_FLAGS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("--seed",), dict(type=seed_type, help="random seed (default 0)")),
    (("--device",), dict(help="torch device of the networks (default cpu)")),
    (
        ("--buffer-device",),
        dict(
            metavar="DEVICE",
            help="torch device of the replay buffer's storage (default cpu; cuda keeps the "
            "whole replay storage on the GPU)",
        ),
    ),
    (
        ("--logger",),
        dict(
            choices=LOGGERS, help="log backend beside the CSV files every run writes (default csv)"
        ),
    ),
    (("--logdir",), dict(help="where run directories go")),
    (
        ("--checkpoint",),
        dict(
            action="store_true",
            help="save a full checkpoint after every epoch (Ctrl-C always saves one)",
        ),
    ),
    (
        ("--resume",),
        dict(
            nargs="?",
            const=True,
            metavar="RUN_DIR",
            help="continue the latest run of this algorithm, task and seed (or RUN_DIR) "
            "from its checkpoint",
        ),
    ),
    (
        ("--overwrite",),
        dict(
            action="store_true",
            help="replace the latest run directory instead of starting a new one (-2, -3, ...)",
        ),
    ),
    (("--no-progress",), dict(action="store_true")),
    (("--no-plot",), dict(action="store_true")),
    (
        ("--dataset",),
        dict(
            metavar="FILE.hdf5",
            help="offline/imitation algorithms: the transitions to learn from (an HDF5 "
            "replay buffer, e.g. from tdrl gather, or minari:NAME)",
        ),
    ),
    (("--icm",), dict(action="store_true", help="add the intrinsic curiosity module's reward")),
    (
        ("--compile",),
        dict(
            nargs="?",
            const="default",
            choices=COMPILE_MODES,
            metavar="MODE",
            help="run the update through torch.compile (MODE: default, reduce-overhead, "
            "max-autotune, max-autotune-no-cudagraphs); compiled before the first epoch",
        ),
    ),
    (
        ("--cudagraphs",),
        dict(
            action="store_true",
            help="compile the update with CUDA graphs (--compile reduce-overhead); needs "
            "--device cuda",
        ),
    ),
    (
        ("--ray-collectors",),
        dict(
            type=int,
            metavar="M",
            help="off-policy: collect with M Ray worker actors of --training-num envs each "
            "(a local Ray, or the cluster at RAY_ADDRESS); see docs/scaling.md",
        ),
    ),
    (
        ("--set",),
        dict(
            action="append",
            metavar="FIELD=VALUE",
            help="override a preset field, e.g. --set lr=3e-4 (repeatable)",
        ),
    ),
    (
        ("--config",),
        dict(metavar="FILE.yaml", help="read run options and preset fields from a YAML file"),
    ),
    (("--debug",), dict(action="store_true", help="show tracebacks of errors")),
)
"""The run flags (not preset fields): flags and ``add_argument`` keywords but the default."""

_FLAG_DEFAULTS: dict[str, Any] = {
    **RUN_OPTIONS,
    "resume": False,
    "overwrite": False,
    "no_progress": False,
    "no_plot": False,
    "cudagraphs": False,
    "set": None,
    "config": None,
    "debug": False,
}
"""Each run flag's default: a run option's is :data:`~tdrl.experiment.config.RUN_OPTIONS`'."""


def add_run_flags(
    parser: argparse.ArgumentParser, defaults: bool = True, only: tuple[str, ...] | None = None
) -> None:
    """Add the run flags (``defaults=False``: absent flags stay unset; ``only``: just the
    flags of these destinations, e.g. ``("seed", "logger", "logdir")`` for a recipe)."""
    for flags, kwargs in _RUN_FLAGS:
        dest = flags[0][2:].replace("-", "_")
        if only is not None and dest not in only:
            continue
        default = _FLAG_DEFAULTS[dest] if defaults else argparse.SUPPRESS
        parser.add_argument(*flags, default=default, **kwargs)


# ----------------------------------------------------------------------- field flags
def flag(name: str) -> str:
    """The flag of a preset field: ``batch_size`` -> ``--batch-size``."""
    return "--" + name.replace("_", "-")


def field_flags(name: str) -> tuple[str, ...]:
    """Every flag of preset field ``name``: its run-option shorthand first (``--epochs``),
    then its own (``--max-epochs``), then Tianshou 2.0's (``--epoch-num-steps``)."""
    aliases = [a for a, f in PRESET_ALIASES.items() if f == name]
    shorthands = [a for a in aliases if a in SHORTHANDS]
    order = [*shorthands, name, *(a for a in aliases if a not in SHORTHANDS)]
    return tuple(dict.fromkeys(flag(n) for n in order))


def _none(text: str) -> bool:
    return text.strip().lower() in ("none", "null")


def _value_type(kind: str, optional: bool, expected: str) -> Callable[[str], Any]:
    """An argparse ``type`` for one value of a field of ``kind``."""

    def convert(text: str) -> Any:
        if optional and _none(text):
            return None
        try:
            if kind == "int":
                return int(text)
            if kind in ("float", "tuple_float"):
                value = float(text)
                if not math.isfinite(value):
                    raise ValueError
                return value
            if kind == "bool":
                return _parse_bool(text)
            return text
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None

    return convert


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(text)


def _note_flag(namespace: argparse.Namespace, dest: str, flag: str | None) -> None:
    used = getattr(namespace, "_flags", None)
    if used is None:
        used = {}
        namespace._flags = used
    used[dest] = flag


class _BoolFlag(argparse.Action):
    """``--x`` (true), ``--x VALUE`` (true/false/yes/no/on/off/1/0) and ``--no-x`` (false)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        negative = bool(option_string and option_string.startswith("--no-"))
        if negative and values is not None:
            parser.error(f"argument {option_string}: expected no value, got {values!r}")
        if values is None:
            value = not negative
        else:
            try:
                value = _parse_bool(values)
            except ValueError:
                parser.error(f"argument {option_string}: expected true or false, got {values!r}")
        setattr(namespace, self.dest, value)
        _note_flag(namespace, self.dest, option_string)


class _Store(argparse.Action):
    """Store the value and remember which flag set it (for error messages)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, tuple(values) if isinstance(values, list) else values)
        _note_flag(namespace, self.dest, option_string)


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return " ".join(map(str, value))
    if value is None:
        return "none"
    return str(value)


def add_preset_flags(parser: argparse.ArgumentParser, preset: registry.Preset) -> None:
    """One flag per field of ``preset``'s class (but ``task``), unset unless given; the
    help shows what each expects and the preset's value."""
    cls = type(preset)
    group = parser.add_argument_group(
        f"{cls.algo} preset fields ({cls.__name__}; values of the preset for {preset.task})"
    )
    for name, (kind, optional) in registry.field_kinds(cls).items():
        if name == "task":
            continue
        expected = registry.field_text(cls, name)
        text = f"{expected}; preset: {_show(getattr(preset, name))}"
        flags = field_flags(name)
        common: dict[str, Any] = dict(dest=f"field__{name}", default=argparse.SUPPRESS, help=text)
        if kind == "bool":
            negs = [f"--no-{f[2:]}" for f in flags]
            group.add_argument(*flags, *negs, nargs="?", action=_BoolFlag, metavar="BOOL", **common)
        elif kind == "tuple":
            convert = _value_type("int", False, expected)
            group.add_argument(
                *flags, nargs="*", action=_Store, type=convert, metavar="N", **common
            )
        else:
            convert = _value_type(kind, optional, expected)
            group.add_argument(*flags, action=_Store, type=convert, metavar=name.upper(), **common)


def given_fields(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, str]]:
    """``(fields, source)``: the preset fields given as flags, and for each the flag that
    gave it (``"argument --lr"``), for error messages."""
    flags: dict[str, str] = getattr(args, "_flags", {})
    fields: dict[str, Any] = {}
    source: dict[str, str] = {}
    for key, value in vars(args).items():
        if key.startswith("field__"):
            name = key[len("field__") :]
            fields[name] = value
            source[name] = f"argument {flags.get(key) or flag(name)}"
    return fields, source


def field_error(exc: PresetError, source: dict[str, str]) -> UsageError:
    """A preset error, naming the flag or file the bad field came from."""
    text = str(exc).splitlines()[0]
    field = exc.field
    if field is None:
        return UsageError(text)
    where = source.get(field, f"argument {field_flags(field)[0]}")
    _, _, detail = text.partition(": ")
    return UsageError(f"{where}: {detail} ({text.split(':', 1)[0]})")
