"""The ``tdrl`` command: ``tdrl train ALGO [TASK] [flags]``, ``eval``, ``plot``, ``gather``,
``bench`` and ``report``.

``tdrl train`` parses in two stages: first the algorithm and task (the first two words after
``train``; or ``--config FILE`` / ``--resume RUN_DIR``, whose file names them), then the flags
of that algorithm's preset class for that task. Every preset field is a flag, dashes for
underscores (``--lr 3e-4 --batch-size 256 --hidden-sizes 256 256``):

* numbers and strings take one value; tuples take several (``--hidden-sizes 64 64``);
* booleans: ``--obs-norm`` / ``--no-obs-norm``, or ``--obs-norm false`` (also ``true``,
  ``yes``/``no``, ``on``/``off``, ``1``/``0``);
* a field that may be ``None`` takes ``none``;
* Tianshou 2.0's names are aliases: ``--epochs``/``--max-epochs``, ``--step-per-epoch``/
  ``--epoch-num-steps``, ``--training-num``/``--num-training-envs``, ``--test-num``/
  ``--num-test-envs``; ``--stop-reward`` sets the stop threshold (``threshold``).

``--config FILE.yaml`` reads run options and preset fields from a file (every run writes
its resolved ``config.yaml``, so ``tdrl train --config runs/X/config.yaml`` trains it
again); flags on the command line win over it. ``--resume`` continues the latest run of
the algorithm, task and seed (``--resume RUN_DIR``: that run), with the run's own config
under the flags given.

Help and argument errors load no torch and are fast: parsing needs only
:mod:`tdrl.registry` (plain data), gymnasium's registry and PyYAML. A user error (a bad flag
value, no preset for the task, an unknown env id, an action space the algorithm cannot
handle, ``--resume`` without a checkpoint, a corrupt file) exits with status 2 and one line
on stderr naming the flag or file; ``--debug`` shows the traceback. Ctrl-C (SIGINT) or
SIGTERM during training saves a checkpoint, prints how to resume and exits with 130 / 143.
"""

from __future__ import annotations

import argparse
import ast
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from tdrl import registry
from tdrl.errors import UsageError

LOGGERS = ("csv", "console", "tensorboard", "wandb", "none")
MAX_SEED = 2**32 - 1
"""Seeds are what NumPy's ``default_rng`` and gymnasium's ``reset(seed=)`` accept."""

FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "max_epochs": ("--epochs", "--max-epochs"),
    "step_per_epoch": ("--step-per-epoch", "--epoch-num-steps"),
    "training_num": ("--training-num", "--num-training-envs"),
    "test_num": ("--test-num", "--num-test-envs"),
    "threshold": ("--stop-reward", "--threshold"),
}
"""Flags of preset fields beside ``--field-name`` (today's names, Tianshou 2.0's names)."""

CONFIG_ALIASES: dict[str, str] = {
    "epochs": "max_epochs",
    "epoch_num_steps": "step_per_epoch",
    "num_training_envs": "training_num",
    "num_test_envs": "test_num",
    "stop_reward": "threshold",
}
"""Config-file keys that name a preset field by another name."""

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
"""``--compile`` modes (``torch.compile``'s; ``default`` is its ``mode=None``)."""

RUN_OPTIONS: dict[str, Any] = {
    "seed": 0,
    "device": "cpu",
    "logger": "csv",
    "logdir": "runs",
    "checkpoint": False,
    "dataset": None,
    "icm": False,
    "ray_collectors": None,
    "compile": None,
    "buffer_device": "cpu",
}
"""Run options (not preset fields) a config file may set, with their defaults."""

_TRUE = {"true", "yes", "on", "1", "y", "t"}
_FALSE = {"false", "no", "off", "0", "n", "f"}


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, but an error is one line on stderr (no usage block), exit 2."""

    def error(self, message: str) -> Any:
        """Print ``PROG: error: MESSAGE`` and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message}\n")


def check_run_options(seed: Any = None, logger: Any = None) -> None:
    """Raise :class:`~tdrl.errors.UsageError` naming the flag for a seed outside
    ``[0, 2**32 - 1]`` or an unknown logger.

    >>> check_run_options(seed=-1)
    Traceback (most recent call last):
    ...
    tdrl.errors.UsageError: argument --seed: expected an int in [0, 4294967295], got -1
    """
    if seed is not None and (
        not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED
    ):
        raise UsageError(f"argument --seed: expected an int in [0, {MAX_SEED}], got {seed!r}")
    if logger is not None and logger not in LOGGERS:
        raise UsageError(f"argument --logger: expected one of {', '.join(LOGGERS)}, got {logger!r}")


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an int in [0, {MAX_SEED}], got {text!r}"
        ) from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected an int in [0, {MAX_SEED}], got {value}")
    return value


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """The run flags of ``tdrl train`` and the recipes (the preset's fields beside them are
    added by :func:`train_parser`; here only the trainer's, with their aliases)."""
    parser.add_argument("--task", default=None, help="gymnasium id (default: the preset's)")
    _add_run_flags(parser)
    parser.add_argument("--epochs", "--max-epochs", dest="epochs", type=int, default=None)
    parser.add_argument(
        "--step-per-epoch", "--epoch-num-steps", dest="step_per_epoch", type=int, default=None
    )
    parser.add_argument(
        "--training-num", "--num-training-envs", dest="training_num", type=int, default=None
    )
    parser.add_argument("--test-num", "--num-test-envs", dest="test_num", type=int, default=None)
    parser.add_argument("--stop-reward", type=float, default=None)


def _add_run_flags(parser: argparse.ArgumentParser, defaults: bool = True) -> None:
    """Flags about the run, not the preset (``defaults=False``: absent flags stay unset)."""

    def d(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--seed", type=_seed, default=d(0), help="random seed (default 0)")
    parser.add_argument(
        "--device", default=d("cpu"), help="torch device of the networks (default cpu)"
    )
    parser.add_argument(
        "--buffer-device",
        default=d("cpu"),
        metavar="DEVICE",
        help="torch device of the replay buffer's storage (default cpu; cuda keeps the "
        "whole replay storage on the GPU)",
    )
    parser.add_argument(
        "--logger",
        choices=LOGGERS,
        default=d("csv"),
        help="log backend beside the CSV files every run writes (default csv)",
    )
    parser.add_argument("--logdir", default=d("runs"), help="where run directories go")
    parser.add_argument(
        "--checkpoint",
        action="store_true",
        default=d(False),
        help="save a full checkpoint after every epoch (Ctrl-C always saves one)",
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=d(False),
        metavar="RUN_DIR",
        help="continue the latest run of this algorithm, task and seed (or RUN_DIR) from "
        "its checkpoint",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        default=d(False),
        help="replace the latest run directory instead of starting a new one (-2, -3, ...)",
    )
    parser.add_argument("--no-progress", action="store_true", default=d(False))
    parser.add_argument("--no-plot", action="store_true", default=d(False))
    parser.add_argument(
        "--dataset",
        default=d(None),
        metavar="FILE.hdf5",
        help="offline/imitation algorithms: the transitions to learn from (an HDF5 replay "
        "buffer, e.g. from tdrl gather, or minari:NAME)",
    )
    parser.add_argument(
        "--icm",
        action="store_true",
        default=d(False),
        help="add the intrinsic curiosity module's reward",
    )
    parser.add_argument(
        "--compile",
        nargs="?",
        const="default",
        default=d(None),
        choices=COMPILE_MODES,
        metavar="MODE",
        help="run the update through torch.compile (MODE: default, reduce-overhead, "
        "max-autotune, max-autotune-no-cudagraphs); compiled before the first epoch",
    )
    parser.add_argument(
        "--cudagraphs",
        action="store_true",
        default=d(False),
        help="compile the update with CUDA graphs (--compile reduce-overhead); needs --device cuda",
    )
    parser.add_argument(
        "--ray-collectors",
        type=int,
        default=d(None),
        metavar="M",
        help="off-policy: collect with M Ray worker actors of --training-num envs each "
        "(a local Ray, or the cluster at RAY_ADDRESS); see docs/scaling.md",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=d(None),
        metavar="FIELD=VALUE",
        help="override a preset field, e.g. --set lr=3e-4 (repeatable)",
    )
    parser.add_argument(
        "--config",
        default=d(None),
        metavar="FILE.yaml",
        help="read run options and preset fields from a YAML file",
    )
    parser.add_argument(
        "--debug", action="store_true", default=d(False), help="show tracebacks of errors"
    )


# ----------------------------------------------------------------------- field flags
def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _field_flags(name: str) -> tuple[str, ...]:
    own = _flag(name)
    aliases = FIELD_ALIASES.get(name, ())
    return (*aliases, *([own] if own not in aliases else []))


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


def _note_flag(namespace: argparse.Namespace, dest: str, flag: str | None) -> None:
    used = getattr(namespace, "_flags", None)
    if used is None:
        used = {}
        namespace._flags = used
    used[dest] = flag


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
        dest = f"field__{name}"
        text = f"{expected}; preset: {_show(getattr(preset, name))}"
        flags = _field_flags(name)
        if kind == "bool":
            negs = [f"--no-{f[2:]}" for f in flags]
            group.add_argument(
                *flags,
                *negs,
                dest=dest,
                nargs="?",
                action=_BoolFlag,
                default=argparse.SUPPRESS,
                metavar="BOOL",
                help=text,
            )
        elif kind == "tuple":
            group.add_argument(
                *flags,
                dest=dest,
                nargs="*",
                action=_Store,
                default=argparse.SUPPRESS,
                type=_value_type("int", False, expected),
                metavar="N",
                help=text,
            )
        else:
            group.add_argument(
                *flags,
                dest=dest,
                action=_Store,
                default=argparse.SUPPRESS,
                type=_value_type(kind, optional, expected),
                metavar=name.upper(),
                help=text,
            )


# ----------------------------------------------------------------------- recipes
def parse_recipe_args(
    algo: str,
    task: str,
    argv: Sequence[str] | None = None,
    *,
    description: str | None = None,
    dataset: bool = False,
    loggers: Sequence[str] = LOGGERS,
) -> tuple[argparse.Namespace, Any]:
    """A recipe's command line: its run flags and the registry preset they select (typed
    ``Any``: its class, hence its fields, depends on ``algo`` and the task).

    The run flags are ``--task`` (default ``task``), ``--seed``, ``--logger`` (one of
    ``loggers``, default :data:`LOGGERS`), ``--logdir``, ``--no-progress`` and, with
    ``dataset=True``, a required ``--dataset FILE.hdf5|minari:NAME``. Every field of
    ``algo``'s preset for the chosen task is a flag, as in ``tdrl train``
    (:func:`add_preset_flags`), and the preset returned is ``registry.preset(algo,
    args.task, **given_fields)``: a recipe's defaults are ``tdrl train``'s. ``--help`` lists
    each field with the preset's value; a bad value exits with status 2 and one line naming
    the flag, as ``tdrl train`` does.

    >>> args, p = parse_recipe_args("dqn", "CartPole-v1", ["--lr", "3e-4", "--seed", "3"])
    >>> args.task, args.seed, args.logger, args.logdir, p.lr, p.gamma
    ('CartPole-v1', 3, 'csv', 'runs', 0.0003, 0.9)
    >>> parse_recipe_args("sac", "Hopper-v5", [])[1].hidden_sizes  # the MuJoCo preset
    (256, 256)
    """
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--task", default=task)
    chosen = pre.parse_known_args(argv)[0].task
    parser = ArgumentParser(description=description, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--task", default=task, help=f"gymnasium id (default {task})")
    parser.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--logger",
        choices=loggers,
        default="csv",
        help="log backend beside the CSV files every run writes (default csv)",
    )
    parser.add_argument("--logdir", default="runs", help="where run directories go")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    if dataset:
        parser.add_argument(
            "--dataset",
            required=True,
            metavar="FILE.hdf5|minari:NAME",
            help="the transitions to learn from: an HDF5 replay buffer (e.g. from "
            "`tdrl gather`) or minari:NAME",
        )
    try:
        base = registry.preset(algo, chosen)
    except registry.PresetError as exc:
        _fail(parser.prog, f"argument --task: {str(exc).splitlines()[0]}")
    add_preset_flags(parser, base)  # --lr, --gamma, --hidden-sizes ...
    args = parser.parse_args(argv)
    flags: dict[str, str] = getattr(args, "_flags", {})
    fields: dict[str, Any] = {}
    source: dict[str, str] = {}
    for key, value in vars(args).items():
        if key.startswith("field__"):
            name = key[len("field__") :]
            fields[name] = value
            source[name] = f"argument {flags.get(key) or _flag(name)}"
    try:
        return args, registry.preset(algo, args.task, **fields)
    except registry.PresetError as exc:
        _fail(parser.prog, str(_field_error(exc, source)))


def summary_line(
    algo: str, task: str, result: Any, seconds: float, run_dir: str | Path, offline: bool = False
) -> str:
    """The last line ``tdrl train`` and every recipe print: ``ALGO on TASK: best test return
    X ± Y (epoch E), N env steps, T s; logs in DIR`` (``offline``: ``N gradient steps``), for
    a trainer's result (``best_reward``, ``best_reward_std``, ``best_epoch``, ``env_step``,
    ``gradient_step``).

    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(best_reward=200.0, best_reward_std=0.0, best_epoch=3,
    ...                     env_step=9190, gradient_step=900)
    >>> print(summary_line("dqn", "CartPole-v1", r, 2.34, "d"))
    dqn on CartPole-v1: best test return 200.0 ± 0.0 (epoch 3), 9190 env steps, 2.3 s; logs in d
    """
    steps = f"{result.gradient_step} gradient steps" if offline else f"{result.env_step} env steps"
    return (
        f"{algo} on {task}: best test return {result.best_reward:.1f} ± "
        f"{result.best_reward_std:.1f} (epoch {result.best_epoch}), {steps}, {seconds:.1f} s; "
        f"logs in {run_dir}"
    )


# ----------------------------------------------------------------------- config files
def read_config_file(path: str | Path) -> dict[str, Any]:
    """A YAML config file as a mapping (``algo``, ``task``, run options, preset fields at
    the top level or under ``preset:``); an unreadable file is a one-line
    :class:`~tdrl.errors.UsageError` naming it."""
    from tdrl.checkpoint import read_run_config  # plain data: no torch
    from tdrl.errors import CheckpointError

    p = Path(path)
    if not p.is_file():
        raise UsageError(f"argument --config: expected a YAML file, {p} does not exist")
    import yaml

    try:
        data = yaml.safe_load(p.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise UsageError(f"config {p}: expected YAML, could not parse it: {first}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"config {p}: expected a mapping of settings, got {data!r}")
    if "algo" in data and "task" in data:
        try:
            read_run_config(p)  # the checks of a run's config.yaml
        except CheckpointError as exc:
            raise UsageError(str(exc)) from exc
    return data


def _split_config(
    data: dict[str, Any], cls: type[registry.Preset], where: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(run options, preset fields)`` of a config mapping; unknown keys raise."""
    options: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    names = {f for f in registry.field_kinds(cls) if f != "task"}
    nested = data.get("preset") or {}
    if not isinstance(nested, dict):
        raise UsageError(f"config {where}: expected 'preset' to be a mapping of fields")
    for key, value in [*data.items(), *nested.items()]:
        if key in ("algo", "task", "preset"):
            continue
        name = CONFIG_ALIASES.get(key, key)
        if name in RUN_OPTIONS:
            options[name] = value
        elif name in names:
            fields[name] = tuple(value) if isinstance(value, list) else value
        else:
            raise UsageError(
                f"config {where}: expected run options ({', '.join(RUN_OPTIONS)}) or "
                f"{cls.algo} preset fields ({', '.join(sorted(names))}), got unknown key {key!r}"
            )
    return options, fields


# ----------------------------------------------------------------------- train
def _positionals(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """The leading words (ALGO, TASK) and the rest."""
    words: list[str] = []
    i = 0
    while i < len(argv) and len(words) < 2 and not argv[i].startswith("-"):
        words.append(argv[i])
        i += 1
    return words, list(argv[i:])


def _general_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="tdrl train",
        allow_abbrev=False,
        usage="tdrl train ALGO [TASK] [flags]  |  tdrl train --config FILE.yaml [flags]",
        description="Train an agent with the registry's preset for ALGO on TASK (default: "
        "the task the preset was tuned on). `tdrl train ALGO TASK --help` lists the "
        "preset's fields, each a flag. Algorithms: " + ", ".join(registry.algorithms()),
    )
    _add_run_flags(parser)
    return parser


def _pre_parse(rest: list[str]) -> argparse.Namespace:
    """Stage one: the flags that decide which preset applies (config, resume, seed ...)."""
    pre = ArgumentParser(prog="tdrl train", add_help=False, allow_abbrev=False)
    pre.add_argument("-h", "--help", action="store_true")
    pre.add_argument("--config", default=None)
    pre.add_argument("--resume", nargs="?", const=True, default=False)
    pre.add_argument("--seed", default=None)
    pre.add_argument("--logdir", default=None)
    pre.add_argument("--debug", action="store_true")
    ns, _ = pre.parse_known_args(rest)
    return ns


def _fail(prog: str, message: str) -> NoReturn:
    """An argument error: one line on stderr and ``SystemExit(2)``, as argparse's own."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _latest_run_config(
    algo: str, task: str, seed: Any, logdir: Any
) -> tuple[dict[str, Any], str] | None:
    """The config of the run ``--resume`` (bare) would continue, if it has one."""
    if not isinstance(seed, int):
        return None
    name = registry.run_name(algo, task, seed)
    root = Path(logdir)
    candidates = [root / name] + (
        sorted(
            (p for p in root.glob(f"{name}-*") if p.name[len(name) + 1 :].isdigit()),
            key=lambda p: int(p.name[len(name) + 1 :]),
        )
        if root.is_dir()
        else []
    )
    existing = [p for p in candidates if p.is_dir()]
    if not existing or not (existing[-1] / "config.yaml").is_file():
        return None
    path = existing[-1] / "config.yaml"
    return read_config_file(path), str(path)


def train_main(argv: Sequence[str]) -> int:
    """``tdrl train ...``: parse (two stages), build the config, train; the exit status."""
    debug = "--debug" in argv
    try:
        config = parse_train(argv)
    except (UsageError, registry.PresetError) as exc:
        if debug:
            raise
        print(str(exc).splitlines()[0], file=sys.stderr)
        return 2
    from tdrl.launch import ExperimentConfig

    return run_config(ExperimentConfig(**config), debug=debug)


def parse_train(argv: Sequence[str]) -> dict[str, Any]:
    """Parse ``tdrl train`` arguments (after ``train``) into the keyword arguments of
    :class:`tdrl.launch.ExperimentConfig`, checking every value (no torch loaded).

    Preset fields given (by flags, ``--set`` or config files) go to ``overrides``; flags
    win over ``--config``, which wins over the config of the run ``--resume`` continues.
    ``--help`` and argument errors raise ``SystemExit`` (0 / 2); a bad value is a one-line
    :class:`~tdrl.errors.UsageError` naming the flag or file.

    >>> cfg = parse_train(["dqn", "--lr", "3e-4", "--hidden-sizes", "64", "64", "--no-dueling",
    ...                    "--max-epochs", "3", "--seed", "7"])
    >>> cfg["algo"], cfg["task"], cfg["seed"]
    ('dqn', 'CartPole-v1', 7)
    >>> cfg["overrides"]
    {'lr': 0.0003, 'hidden_sizes': (64, 64), 'dueling': False, 'max_epochs': 3}
    >>> parse_train(["dqn", "--lr", "0"])
    Traceback (most recent call last):
    ...
    tdrl.errors.UsageError: argument --lr: expected a float > 0, got 0.0 (dqn preset field 'lr')
    """
    words, rest = _positionals(argv)
    return _train(words, rest, _pre_parse(rest))


def _train(words: list[str], rest: list[str], pre: argparse.Namespace) -> dict[str, Any]:
    file_data: dict[str, Any] = {}
    layers: list[tuple[dict[str, Any], str]] = []  # config layers, lowest first
    resume_dir = pre.resume if isinstance(pre.resume, str) else None
    if resume_dir is not None:
        cfg_path = Path(resume_dir) / "config.yaml"
        if not cfg_path.is_file():
            raise UsageError(
                f"argument --resume: expected a run directory with config.yaml, "
                f"{cfg_path} does not exist"
            )
        layers.append((read_config_file(cfg_path), str(cfg_path)))
    if pre.config is not None:
        layers.append((read_config_file(pre.config), str(pre.config)))
    for data, _ in layers:
        file_data.update({k: v for k, v in data.items() if k in ("algo", "task")})
    algo = words[0] if words else file_data.get("algo")
    if algo is None:
        if pre.help:
            _general_parser().print_help()
            raise SystemExit(0)
        return _fail(
            "tdrl train",
            "expected an algorithm: tdrl train ALGO [TASK] (one of "
            f"{', '.join(registry.algorithms())}), or --config FILE.yaml, got none",
        )
    if algo not in registry.algorithms():
        return _fail(
            "tdrl train",
            f"argument ALGO: expected one of {', '.join(registry.algorithms())}, got {algo!r}",
        )
    task = words[1] if len(words) > 1 else file_data.get("task") or registry.default_task(algo)
    if pre.resume is True and pre.config is None:  # the run's own config, under the flags
        seed = _seed_value(pre.seed)
        logdir = pre.logdir if pre.logdir is not None else RUN_OPTIONS["logdir"]
        latest = _latest_run_config(algo, task, seed, logdir)
        if latest is not None:
            layers.insert(0, latest)
    base = registry.preset(algo, task)  # PresetError: no preset for the task's family
    parser = ArgumentParser(
        prog=f"tdrl train {algo} {task}",
        usage=f"tdrl train {algo} {task} [flags]",
        allow_abbrev=False,
        description=f"Train {algo} on {task} with the registry's preset "
        f"({type(base).__name__}); every preset field is a flag (booleans: --x / --no-x; "
        "tuples: several values; none for an unset optional field). Flags win over "
        "--config. Stop threshold: "
        + ("none (all epochs run)" if base.threshold is None else f"{base.threshold:g}"),
    )
    _add_run_flags(parser, defaults=False)
    add_preset_flags(parser, base)
    args = parser.parse_args(rest)  # exits 2 on a bad flag, 0 after --help
    options = dict(RUN_OPTIONS)
    fields: dict[str, Any] = {}
    source: dict[str, str] = {}
    for data, where in layers:
        run_opts, preset_fields = _split_config(data, type(base), where)
        options.update(run_opts)
        fields.update(preset_fields)
        source.update({k: f"config {where}" for k in preset_fields})
    if getattr(args, "set", None):
        from_set = _parse_set(args.set)
        fields.update(from_set)
        source.update({k: f"argument --set {k}" for k in from_set})
    flags: dict[str, str] = getattr(args, "_flags", {})
    for key, value in vars(args).items():
        if key.startswith("field__"):
            name = key[len("field__") :]
            fields[name] = value
            source[name] = f"argument {flags.get(key) or _flag(name)}"
        elif key in RUN_OPTIONS:
            options[key] = value
    check_run_options(seed=options["seed"], logger=options["logger"])
    if getattr(args, "cudagraphs", False):
        options["compile"] = _cudagraphs_mode(options)
    try:
        registry.preset(algo, task, **fields)
    except registry.PresetError as exc:
        raise _field_error(exc, source) from exc
    return dict(
        algo=algo,
        task=task,
        seed=options["seed"],
        logger=options["logger"],
        log_dir=str(options["logdir"]),
        device=str(options["device"]),
        checkpoint=bool(options["checkpoint"]),
        resume=bool(getattr(args, "resume", False)),
        run_dir=resume_dir,
        overwrite=bool(getattr(args, "overwrite", False)),
        show_progress=not getattr(args, "no_progress", False),
        plot=not getattr(args, "no_plot", False),
        overrides=fields,
        dataset=options["dataset"],
        icm=bool(options["icm"]),
        ray_collectors=options["ray_collectors"],
        buffer_device=str(options["buffer_device"]),
        compile=options["compile"],
    )


def _cudagraphs_mode(options: dict[str, Any]) -> str:
    """``--cudagraphs``: the compile mode it stands for, or a :class:`UsageError`.

    >>> _cudagraphs_mode({"device": "cuda", "compile": None})
    'reduce-overhead'
    >>> _cudagraphs_mode({"device": "cpu", "compile": None})
    Traceback (most recent call last):
    ...
    tdrl.errors.UsageError: --cudagraphs: expected --device cuda (CUDA graphs need a GPU), got 'cpu'
    """
    device = str(options["device"])
    if not device.startswith("cuda"):
        raise UsageError(
            f"--cudagraphs: expected --device cuda (CUDA graphs need a GPU), got {device!r}"
        )
    if options["compile"] not in (None, "reduce-overhead"):
        raise UsageError(
            "--cudagraphs: expected no --compile MODE or --compile reduce-overhead, got "
            f"--compile {options['compile']}"
        )
    return "reduce-overhead"


def _seed_value(text: Any) -> Any:
    if text is None:
        return RUN_OPTIONS["seed"]
    try:
        return int(text)
    except ValueError:
        return None


def _parse_set(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"argument --set: expected FIELD=VALUE, got {item!r}")
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            value = text.strip()
        out[name.strip()] = value
    return out


def _field_error(exc: registry.PresetError, source: dict[str, str]) -> UsageError:
    """A preset error, naming the flag or file the bad field came from."""
    text = str(exc).splitlines()[0]
    field = exc.field
    if field is None:
        return UsageError(text)
    where = source.get(field, f"argument {_field_flags(field)[0]}")
    _, _, detail = text.partition(": ")
    return UsageError(f"{where}: {detail} ({text.split(':', 1)[0]})")


def _user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's mistake (reported in one line) rather than a bug."""
    return isinstance(exc, (registry.PresetError, UsageError)) or (
        type(exc).__module__ == "gymnasium.error"
    )


def run_config(cfg: Any, debug: bool = False) -> int:
    """Train an :class:`~tdrl.launch.ExperimentConfig`; the exit status: 0 done, 2 a user
    error (one line on stderr), 1 an OS error (a full disk), 130/143 interrupted by
    SIGINT/SIGTERM (after saving a checkpoint)."""
    try:
        from tdrl.launch import run_experiment
        from tdrl.trainer import TrainingInterrupted

        run_experiment(cfg)
    except KeyboardInterrupt:
        if debug:
            raise
        print("tdrl train: interrupted; no checkpoint saved", file=sys.stderr)
        return 130
    except Exception as exc:
        if isinstance(exc, TrainingInterrupted):
            r = exc.result
            where = (
                f"checkpoint saved to {exc.checkpoint}; resume with: tdrl train --resume "
                f"{exc.checkpoint.parent}"
                if exc.checkpoint is not None
                else "no checkpoint saved"
            )
            print(
                f"tdrl train: interrupted ({exc.reason}) in epoch {r.epoch} after "
                f"{r.env_step} env steps; {where}",
                file=sys.stderr,
                flush=True,
            )
            return 143 if exc.reason == "SIGTERM" else 130
        if debug or not (_user_error(exc) or isinstance(exc, OSError)):
            raise
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(message, file=sys.stderr)
        return 1 if isinstance(exc, OSError) and not _user_error(exc) else 2
    return 0


def run_train(algo: str, task: str | None, args: argparse.Namespace) -> int:
    """Run ``tdrl train`` (or a recipe) for flags parsed by :func:`add_train_arguments`."""
    try:
        from tdrl.launch import config_from_args

        cfg = config_from_args(algo, task, args)
    except Exception as exc:
        if not _user_error(exc):
            raise
        print(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, file=sys.stderr)
        return 2
    return run_config(cfg, debug=bool(getattr(args, "debug", False)))


COMMANDS = {
    "plot": ("tdrl.utils.plot:plot_main", "draw learning curves: tdrl plot RUN_DIR... --out X.png"),
    "eval": ("tdrl.commands.eval:main", "play a trained run's policy: tdrl eval RUN_DIR"),
    "gather": (
        "tdrl.commands.gather:main",
        "train an expert, then save its transitions: tdrl gather EXPERT TASK",
    ),
    "bench": ("tdrl.commands.bench:main", "a multi-seed benchmark sweep with a report"),
    "report": ("tdrl.commands.report:main", "the report of a benchmark directory"),
}
"""Subcommands beside ``train``: name -> (``"module:function"`` taking the remaining
arguments and returning the exit status, help line). Each module parses its own flags."""


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the subcommand; return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        import importlib

        module, _, name = COMMANDS[argv[0]][0].partition(":")
        command: Callable[[list[str]], int] = getattr(importlib.import_module(module), name)
        return command(argv[1:])
    if argv and argv[0] == "train":
        return train_main(argv[1:])
    parser = ArgumentParser(prog="tdrl", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("train", help="train an agent with a tested preset: tdrl train ALGO [TASK]")
    for name, (_, text) in COMMANDS.items():
        sub.add_parser(name, help=text)
    parser.parse_args(argv)  # --help, or an error: exits
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
