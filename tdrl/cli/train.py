"""``tdrl train ALGO [TASK] [flags]``: parse, build the run configuration, train.

Parsing runs in two stages: first the algorithm and task (the first two words after
``train``; or ``--config FILE`` / ``--resume RUN_DIR``, whose file names them), then the
flags of that algorithm's preset class for that task (:mod:`tdrl.cli.args`). ``--config
FILE.yaml`` reads run options and preset fields from a file (every run writes its resolved
``config.yaml``, so ``tdrl train --config runs/X/config.yaml`` trains it again); flags on the
command line win over it. ``--resume`` continues the latest run of the algorithm, task and
seed (``--resume RUN_DIR``: that run), with the run's own config under the flags given.

Help and argument errors load no torch and are fast. A user error exits with status 2 and
one line on stderr naming the flag or file; ``--debug`` shows the traceback. Ctrl-C
(SIGINT) or SIGTERM during training saves a checkpoint, prints how to resume and exits with
130 / 143.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tdrl.cli.args import (
    ArgumentParser,
    add_preset_flags,
    add_run_flags,
    fail,
    field_error,
    given_fields,
    is_user_error,
)
from tdrl.errors import PresetError, UsageError
from tdrl.experiment.config import (
    PRESET_ALIASES,
    RUN_OPTIONS,
    ExperimentConfig,
    check_run_options,
    parse_overrides,
)
from tdrl.experiment.rundir import latest_run_config, read_config_file
from tdrl.presets import registry

__all__ = ["parse_train", "run_config", "train_main"]


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
    add_run_flags(parser)
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


def train_main(argv: Sequence[str]) -> int:
    """``tdrl train ...``: parse (two stages), build the config, train; the exit status."""
    debug = "--debug" in argv
    try:
        config = parse_train(argv)
    except (UsageError, PresetError) as exc:
        if debug:
            raise
        print(str(exc).splitlines()[0], file=sys.stderr)
        return 2
    return run_config(ExperimentConfig(**config), debug=debug)


def parse_train(argv: Sequence[str]) -> dict[str, Any]:
    """Parse ``tdrl train`` arguments (after ``train``) into the keyword arguments of
    :class:`~tdrl.experiment.config.ExperimentConfig`, checking every value (no torch).

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
    pre = _pre_parse(rest)
    layers = _config_layers(pre)
    algo, task = _algo_and_task(words, layers, pre)
    if pre.resume is True and pre.config is None:  # the run's own config, under the flags
        seed = _seed_value(pre.seed)
        logdir = pre.logdir if pre.logdir is not None else RUN_OPTIONS["logdir"]
        latest = latest_run_config(algo, task, seed, logdir)
        if latest is not None:
            layers.insert(0, latest)
    base = registry.preset(algo, task)  # PresetError: no preset for the task's family
    args = _preset_parser(algo, task, base).parse_args(rest)  # exits 2 / 0 after --help
    options, fields, source = _merge(layers, args, type(base))
    check_run_options(seed=options["seed"], logger=options["logger"])
    if getattr(args, "cudagraphs", False):
        options["compile"] = _cudagraphs_mode(options)
    try:
        registry.preset(algo, task, **fields)
    except PresetError as exc:
        raise field_error(exc, source) from exc
    return dict(
        algo=algo,
        task=task,
        seed=options["seed"],
        logger=options["logger"],
        log_dir=str(options["logdir"]),
        device=str(options["device"]),
        checkpoint=bool(options["checkpoint"]),
        resume=bool(getattr(args, "resume", False)),
        run_dir=pre.resume if isinstance(pre.resume, str) else None,
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


def _config_layers(pre: argparse.Namespace) -> list[tuple[dict[str, Any], str]]:
    """The config files given (``--resume RUN_DIR``'s ``config.yaml``, then ``--config``),
    lowest first, each with where it came from."""
    layers: list[tuple[dict[str, Any], str]] = []
    if isinstance(pre.resume, str):
        cfg_path = Path(pre.resume) / "config.yaml"
        if not cfg_path.is_file():
            raise UsageError(
                f"argument --resume: expected a run directory with config.yaml, "
                f"{cfg_path} does not exist"
            )
        layers.append((read_config_file(cfg_path), str(cfg_path)))
    if pre.config is not None:
        layers.append((read_config_file(pre.config), str(pre.config)))
    return layers


def _algo_and_task(
    words: list[str], layers: list[tuple[dict[str, Any], str]], pre: argparse.Namespace
) -> tuple[str, str]:
    """The algorithm and task: the command line's words, else the config files' (the
    preset's own task when none names one); ``--help`` without an algorithm prints the
    general help."""
    file_data: dict[str, Any] = {}
    for data, _ in layers:
        file_data.update({k: v for k, v in data.items() if k in ("algo", "task")})
    algo = words[0] if words else file_data.get("algo")
    if algo is None:
        if pre.help:
            _general_parser().print_help()
            raise SystemExit(0)
        return fail(
            "tdrl train",
            "expected an algorithm: tdrl train ALGO [TASK] (one of "
            f"{', '.join(registry.algorithms())}), or --config FILE.yaml, got none",
        )
    if algo not in registry.algorithms():
        return fail(
            "tdrl train",
            f"argument ALGO: expected one of {', '.join(registry.algorithms())}, got {algo!r}",
        )
    task = words[1] if len(words) > 1 else file_data.get("task") or registry.default_task(algo)
    return algo, task


def _preset_parser(algo: str, task: str, base: registry.Preset) -> ArgumentParser:
    """Stage two: the run flags (unset unless given) and one flag per preset field."""
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
    add_run_flags(parser, defaults=False)
    add_preset_flags(parser, base)
    return parser


def _merge(
    layers: list[tuple[dict[str, Any], str]], args: argparse.Namespace, cls: type[registry.Preset]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """``(run options, preset fields, source of each field)``: config files lowest, then
    ``--set``, then the field flags."""
    options = dict(RUN_OPTIONS)
    fields: dict[str, Any] = {}
    source: dict[str, str] = {}
    for data, where in layers:
        run_opts, preset_fields = _split_config(data, cls, where)
        options.update(run_opts)
        fields.update(preset_fields)
        source.update({k: f"config {where}" for k in preset_fields})
    if getattr(args, "set", None):
        from_set = parse_overrides(args.set, flag="argument --set")
        fields.update(from_set)
        source.update({k: f"argument --set {k}" for k in from_set})
    flagged, flag_source = given_fields(args)
    fields.update(flagged)
    source.update(flag_source)
    options.update({k: v for k, v in vars(args).items() if k in RUN_OPTIONS})
    return options, fields, source


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
        name = PRESET_ALIASES.get(key, key)
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


def run_config(cfg: ExperimentConfig, debug: bool = False) -> int:
    """Train an :class:`~tdrl.experiment.config.ExperimentConfig`; the exit status: 0 done,
    2 a user error (one line on stderr), 1 an OS error (a full disk), 130/143 interrupted by
    SIGINT/SIGTERM (after saving a checkpoint)."""
    try:  # the checks that need no torch first: a typo is reported in well under 2 s
        from tdrl.experiment.preflight import preflight

        preflight(cfg)
    except Exception as exc:
        if debug or not is_user_error(exc):
            raise
        print(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, file=sys.stderr)
        return 2
    try:
        from tdrl.experiment.build import run_experiment
        from tdrl.trainer import TrainingInterrupted

        run_experiment(cfg)
    except KeyboardInterrupt:
        if debug:
            raise
        print("tdrl train: interrupted; no checkpoint saved", file=sys.stderr)
        return 130
    except Exception as exc:
        if isinstance(exc, TrainingInterrupted):
            return _interrupted(exc)
        if debug or not (is_user_error(exc) or isinstance(exc, OSError)):
            raise
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(message, file=sys.stderr)
        return 1 if isinstance(exc, OSError) and not is_user_error(exc) else 2
    return 0


def _interrupted(exc: Any) -> int:
    """Report a run stopped by SIGINT/SIGTERM (where its checkpoint is, how to resume);
    the exit status 130 / 143."""
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
