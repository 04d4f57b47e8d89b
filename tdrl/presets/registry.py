"""The preset registry: plain data, no torch, no gymnasium at import.

A *preset* is a frozen dataclass of hyperparameters and data-collection/trainer settings,
one class per algorithm (e.g. :class:`tdrl.presets.dqn.DQNPreset`,
:class:`tdrl.presets.ppo.PPOPreset`, :class:`tdrl.presets.sac.SACPreset`). The registry
maps ``(algorithm, family)`` to an :class:`Entry`: a preset plus how to use it, the builder
as a dotted path (imported only when an algorithm is built), the trainer kind and whether
the collectors add exploration noise. Tasks map to families by name (:func:`task_family`):
``classic`` (classic control, Box2D, toy text), ``mujoco``, ``atari``.

>>> task_family("CartPole-v1"), task_family("Hopper-v5"), task_family("ALE/Pong-v5")
('classic', 'mujoco', 'atari')
>>> p = preset("dqn", "CartPole-v1")
>>> p.lr, p.threshold, entry("dqn", "CartPole-v1").trainer
(0.001, 195.0, 'offpolicy')
>>> p.replace(lr=-1.0)
Traceback (most recent call last):
...
tdrl.errors.PresetError: dqn preset field 'lr': expected a float > 0, got -1.0

Every field is checked when a preset is created or overridden (``replace``,
``dataclasses.replace`` or :func:`preset` overrides): an unknown field, a wrong type or a
value out of range is a :class:`PresetError` (a ``ValueError``) naming the field, what was
expected and what was given.

Adding an algorithm: a module in the :mod:`tdrl.presets` package (imported by the first
lookup here, so nothing else needs editing; :data:`INFRASTRUCTURE` lists the package's
modules that hold no presets) defines its preset class (a
``@dataclass(frozen=True)`` subclass of :class:`Preset` with ``algo = "name"``; field names
listed in ``_RULES`` get their range checks for free, other fields their type check), a
builder ``build(preset, observation_space, action_space)`` that imports torch only when
called, and one :func:`register` call per task family it has been tuned for. Adding a family
preset for an existing algorithm is one :func:`register` call (:mod:`tdrl.presets.dqn` is
the smallest example).

Stop thresholds (:func:`task_threshold`): :data:`STOP_THRESHOLDS` wins, then the threshold a
preset was registered with for its own task, then gymnasium's ``reward_threshold`` (looked up
when asked); with none, training runs all its epochs. Budgets (``max_epochs``,
``step_per_epoch``) are the fields of the preset registered for the task's family (or for
the task itself). A run never stops before it trained: the trainer tests the threshold only
after its first gradient step.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from tdrl.errors import PresetError

__all__ = [
    "FAMILIES",
    "INFRASTRUCTURE",
    "MAX_ENVS",
    "STOP_THRESHOLDS",
    "Entry",
    "Preset",
    "PresetError",
    "algorithms",
    "check_action_space",
    "check_dataset",
    "default_task",
    "entry",
    "families",
    "field_kinds",
    "field_text",
    "preset",
    "register",
    "run_name",
    "stop_threshold",
    "task_family",
    "task_threshold",
]

FAMILIES: tuple[str, ...] = ("classic", "mujoco", "atari")
"""Task families, by the kind of network and budget their presets need."""

STOP_THRESHOLDS: dict[str, float] = {
    "CartPole-v1": 195.0,
    "Pendulum-v1": -250.0,
    "PongNoFrameskip-v4": 20.0,  # Tianshou's examples/atari stop value for Pong
}
"""Per-task stop thresholds; they win over gymnasium's ``reward_threshold``."""

_CLASSIC = {
    "CartPole",
    "Pendulum",
    "Acrobot",
    "MountainCar",
    "MountainCarContinuous",
    "LunarLander",
    "LunarLanderContinuous",
    "BipedalWalker",
    "BipedalWalkerHardcore",
    "CarRacing",
    "Blackjack",
    "FrozenLake",
    "FrozenLake8x8",
    "CliffWalking",
    "Taxi",
}
_MUJOCO = {
    "Ant",
    "HalfCheetah",
    "Hopper",
    "Humanoid",
    "HumanoidStandup",
    "InvertedDoublePendulum",
    "InvertedPendulum",
    "Pusher",
    "Reacher",
    "Swimmer",
    "Walker2d",
}
_ENTRY_POINT_FAMILY = (
    ("gymnasium.envs.mujoco", "mujoco"),
    ("ale_py", "atari"),
    ("shimmy.atari", "atari"),
    ("gymnasium.envs.classic_control", "classic"),
    ("gymnasium.envs.box2d", "classic"),
    ("gymnasium.envs.toy_text", "classic"),
)


_P = TypeVar("_P", bound="Preset")


def _base_name(task: str) -> str:
    """``"ALE/Pong-v5"`` -> ``"Pong"``, ``"Hopper-v5"`` -> ``"Hopper"``."""
    name = task.rsplit("/", 1)[-1]
    return re.sub(r"-v\d+$", "", name)


def task_family(task: str) -> str:
    """The family of a gymnasium id: ``classic``, ``mujoco`` or ``atari``.

    By name first (``ALE/...`` and ``...NoFrameskip...`` are Atari); an id not known by name
    goes by its gymnasium entry point; anything else counts as ``classic`` (small MLPs).

    >>> task_family("PongNoFrameskip-v4"), task_family("InvertedPendulum-v5")
    ('atari', 'mujoco')
    """
    if task.startswith("ALE/") or "NoFrameskip" in task:
        return "atari"
    name = _base_name(task)
    if name in _MUJOCO:
        return "mujoco"
    if name in _CLASSIC:
        return "classic"
    entry_point = _gym_spec_attr(task, "entry_point")
    if isinstance(entry_point, str):
        for prefix, family in _ENTRY_POINT_FAMILY:
            if entry_point.startswith(prefix):
                return family
    return "classic"


def _gym_spec_attr(task: str, attr: str) -> Any:
    """An attribute of gymnasium's registered spec for ``task`` (``None`` if unregistered)."""
    import gymnasium

    try:
        spec = gymnasium.spec(task)
    except gymnasium.error.Error:
        return None
    return getattr(spec, attr, None)


def stop_threshold(task: str) -> float | None:
    """The return at which training on ``task`` stops: the registry's, else gymnasium's.

    >>> stop_threshold("CartPole-v1"), stop_threshold("Acrobot-v1"), stop_threshold("Walker2d-v5")
    (195.0, -100.0, None)
    """
    if task in STOP_THRESHOLDS:
        return STOP_THRESHOLDS[task]
    value = _gym_spec_attr(task, "reward_threshold")
    return None if value is None else float(value)


# ------------------------------------------------------------------------ field validation
def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_Rule = tuple[str, Callable[[Any], bool]]
_POS: _Rule = ("> 0", lambda v: v > 0)
_NONNEG: _Rule = (">= 0", lambda v: v >= 0)
_UNIT: _Rule = ("in [0, 1]", lambda v: 0 <= v <= 1)
_OPEN_UNIT: _Rule = ("in (0, 1]", lambda v: 0 < v <= 1)
MAX_ENVS = 1024
"""The most training or test envs a run may ask for (each is a Python object stepped in
this process)."""
_ENVS: _Rule = (f"in [1, {MAX_ENVS}]", lambda v: 1 <= v <= MAX_ENVS)

_RULES: dict[str, _Rule] = {
    # learning
    "lr": _POS,
    "actor_lr": _POS,
    "critic_lr": _POS,
    "alpha_lr": _POS,
    "gamma": _UNIT,
    "gae_lambda": _UNIT,
    "tau": _OPEN_UNIT,
    "alpha": _POS,
    "eps_train": _UNIT,
    "eps_test": _UNIT,
    "eps_clip": _POS,
    "vf_coef": _NONNEG,
    "ent_coef": _NONNEG,
    "max_grad_norm": _POS,
    "n_step": _POS,
    "target_update_freq": _NONNEG,
    # data collection and trainer
    "buffer_size": _POS,
    "training_num": _ENVS,
    "test_num": _ENVS,
    "warmup_steps": _NONNEG,
    "max_epochs": _POS,
    "step_per_epoch": _POS,
    "step_per_collect": _POS,
    "repeat_per_collect": _POS,
    "update_per_step": _POS,
    "batch_size": _POS,
}
"""Range checks by field name (every preset class shares them)."""

_TRAINER_FIELDS = ("max_epochs", "step_per_epoch")
_TRAINER_OPTIONAL = ("step_per_collect", "update_per_step", "repeat_per_collect")


def _describe(tp: Any) -> tuple[str, Callable[[Any], Any]]:
    """``(expected-type text, coerce-or-raise)`` for a field annotation."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if args and type(None) in args:  # X | None
        (inner,) = [a for a in args if a is not type(None)]
        text, conv = _describe(inner)
        return f"{text} or None", lambda v: None if v is None else conv(v)
    if tp is bool:
        return "a bool", lambda v: v if isinstance(v, bool) else _bad()
    if tp is int:
        return "an int", lambda v: v if _is_int(v) else _bad()
    if tp is float:
        return "a float", lambda v: v if _is_number(v) else _bad()
    if tp is str:
        return "a str", lambda v: v if isinstance(v, str) and v else _bad()
    if origin is tuple:
        return (
            "a tuple of ints > 0",
            lambda v: (
                tuple(v)
                if isinstance(v, (tuple, list)) and all(_is_int(x) and x > 0 for x in v)
                else _bad()
            ),
        )
    raise TypeError(f"unsupported preset field type {tp!r}")


class _Bad(Exception):
    pass


def _bad() -> Any:
    raise _Bad


_SCHEMAS: dict[type, dict[str, tuple[str, Callable[[Any], Any], _Rule | None]]] = {}


def _schema(cls: type) -> dict[str, tuple[str, Callable[[Any], Any], _Rule | None]]:
    if cls not in _SCHEMAS:
        hints = typing.get_type_hints(cls)  # each class's annotations in its own module
        _SCHEMAS[cls] = {
            f.name: (*_describe(hints[f.name]), {**_RULES, **cls.rules}.get(f.name))  # type: ignore[attr-defined]
            for f in dataclasses.fields(cls)
        }
    return _SCHEMAS[cls]


@dataclass(frozen=True)
class Preset:
    """Base of the per-algorithm preset dataclasses: field checks, ``replace``, ``build``.

    ``task`` is the task the preset was tuned on (the default task of ``tdrl train ALGO``);
    ``threshold`` the stop threshold (``None``: never stop early); :func:`preset` fills both
    for the task asked for.
    """

    algo: ClassVar[str] = ""
    rules: ClassVar[dict[str, tuple[str, Callable[[Any], bool]]]] = {}
    """Extra range checks by field name, for fields :data:`_RULES` does not know."""

    task: str = ""
    threshold: float | None = None

    def __new__(cls: type[_P], *args: Any, **kwargs: Any) -> _P:
        names = {f.name for f in dataclasses.fields(cls)}
        for key in kwargs:
            if key not in names:
                raise PresetError(
                    f"{cls.algo} preset field {key!r}: expected one of the fields "
                    f"{', '.join(sorted(names))}, got unknown field {key!r} = {kwargs[key]!r}",
                    field=key,
                )
        return super().__new__(cls)

    def __post_init__(self) -> None:
        for name, (text, conv, rule) in _schema(type(self)).items():
            value = getattr(self, name)
            try:
                value = conv(value)
                ok = rule is None or value is None or rule[1](value)
            except (_Bad, TypeError):
                ok = False
            if not ok:
                want = f"{text} {rule[0]}" if rule is not None else text
                raise PresetError(
                    f"{self.algo} preset field {name!r}: expected {want}, got {value!r}",
                    field=name,
                )
            object.__setattr__(self, name, value)

    def replace(self: _P, **overrides: Any) -> _P:
        """A copy with ``overrides`` applied (each checked like at creation)."""
        return dataclasses.replace(self, **overrides)

    def trainer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the trainer: epochs, collects, updates, batch, test size."""
        kw = {k: getattr(self, k) for k in _TRAINER_FIELDS}
        kw.update({k: getattr(self, k) for k in _TRAINER_OPTIONAL if hasattr(self, k)})
        kw["batch_size"] = getattr(self, "batch_size", None)
        kw["episode_per_test"] = getattr(self, "test_num", None)
        return kw

    def build(self, observation_space: Any, action_space: Any) -> Any:
        """Create the algorithm for the given spaces with the builder registered for it."""
        return entry(self.algo, self.task).builder_fn()(self, observation_space, action_space)


# ---------------------------------------------------------------------------- registry
Trainer = Literal["onpolicy", "offpolicy", "offline"]
ActionSpace = Literal["discrete", "continuous", "any"]


@dataclass(frozen=True)
class Entry:
    """One registry entry: a preset and how to run it.

    :param builder: ``"module:function"``; ``function(preset, observation_space,
        action_space)`` returns the algorithm.
    :param trainer: ``"onpolicy"``, ``"offpolicy"`` or ``"offline"`` (gradient steps on a
        fixed dataset, :class:`~tdrl.trainer.OfflineTrainer`).
    :param exploration_noise: whether the training and test collectors add the policy's
        exploration noise.
    :param action_space: the action spaces the builder handles: ``"discrete"`` (gymnasium
        ``Discrete``), ``"continuous"`` (``Box``) or ``"any"`` (both).
    :param env_wrapper: ``"module:function"`` or ``None``; ``function(env, preset)`` wraps
        every env the launcher and :func:`tdrl.make_algorithm` make for this entry (Atari
        preprocessing, action discretization, ...).
    :param needs_dataset: the builder takes a ``dataset=`` replay buffer (offline and
        imitation algorithms: ``tdrl train ALGO TASK --dataset FILE.hdf5``); default: the
        offline trainer's entries.
    """

    algo: str
    family: str
    preset: Preset
    builder: str
    trainer: Trainer
    exploration_noise: bool
    action_space: ActionSpace
    env_wrapper: str | None = None
    needs_dataset: bool = False

    def builder_fn(self) -> Callable[[Preset, Any, Any], Any]:
        """Import and return the builder."""
        return _import(self.builder)  # type: ignore[no-any-return]

    def make_env(
        self, task: str, preset: Preset | None = None, training: bool = True, **make_kwargs: Any
    ) -> Any:
        """``gymnasium.make(task, **make_kwargs)``, wrapped by :attr:`env_wrapper` if the
        entry has one.

        The wrapper's module is imported first (it may register env ids, as ale-py's);
        ``training=False`` (test envs) reaches wrappers that take a ``training`` argument
        (Atari: no episodic life, no reward clipping). ``make_kwargs``: e.g.
        ``render_mode="rgb_array"`` (``tdrl eval --video``).
        """
        import gymnasium

        wrap = _import(self.env_wrapper) if self.env_wrapper is not None else None
        env = gymnasium.make(task, **make_kwargs)
        if wrap is not None:
            p = preset if preset is not None else self.preset
            takes_training = "training" in inspect.signature(wrap).parameters
            env = wrap(env, p, training=training) if takes_training else wrap(env, p)
        return env


def check_action_space(algo: str, task: str, action_space: Any) -> None:
    """Raise a one-line :class:`PresetError` if ``algo`` cannot act in ``action_space``
    (the kind its entry declares: discrete, continuous or any); imports only gymnasium.

    >>> import gymnasium as gym
    >>> check_action_space("dqn", "Pendulum-v1", gym.spaces.Box(-2.0, 2.0, (1,)))
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: dqn needs a Discrete action space; Pendulum-v1 has Box(-2.0, 2.0, (1,), float32)
    """  # noqa: E501
    import gymnasium as gym

    kinds, text = {
        "discrete": ((gym.spaces.Discrete,), "a Discrete"),
        "continuous": ((gym.spaces.Box,), "a Box"),
        "any": ((gym.spaces.Discrete, gym.spaces.Box), "a Discrete or Box"),
    }[entry(algo, task).action_space]
    if not isinstance(action_space, kinds):
        raise PresetError(f"{algo} needs {text} action space; {task} has {action_space}")


def _import(path: str) -> Any:
    """The object named by ``"module:attribute"``."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


_REGISTRY: dict[tuple[str, str], Entry] = {}
_TASK_REGISTRY: dict[tuple[str, str], Entry] = {}  # task-specific entries win


def register(
    algo: str,
    family: str,
    preset: Preset,
    *,
    builder: str,
    trainer: Trainer,
    exploration_noise: bool,
    action_space: ActionSpace,
    task: str | None = None,
    env_wrapper: str | None = None,
    needs_dataset: bool | None = None,
) -> Entry:
    """Add (or replace) the preset of ``algo`` for task ``family``; return the entry.

    With ``task``, the entry applies to that gymnasium id only and wins over the family's
    (e.g. PPO's continuous Pendulum-v1 preset beside its CartPole-tuned classic one).
    """
    if family not in FAMILIES:
        raise PresetError(f"family: expected one of {', '.join(FAMILIES)}, got {family!r}")
    if preset.algo != algo:
        raise PresetError(f"preset: expected a {algo} preset, got a {preset.algo} preset")
    if trainer not in ("onpolicy", "offpolicy", "offline"):
        raise PresetError(
            f"trainer: expected 'onpolicy', 'offpolicy' or 'offline', got {trainer!r}"
        )
    if action_space not in ("discrete", "continuous", "any"):
        raise PresetError(
            f"action_space: expected 'discrete', 'continuous' or 'any', got {action_space!r}"
        )
    if ":" not in builder:
        raise PresetError(f"builder: expected 'module:function', got {builder!r}")
    if env_wrapper is not None and ":" not in env_wrapper:
        raise PresetError(f"env_wrapper: expected 'module:function', got {env_wrapper!r}")
    if needs_dataset is None:
        needs_dataset = trainer == "offline"
    e = Entry(
        algo,
        family,
        preset,
        builder,
        trainer,
        exploration_noise,
        action_space,
        env_wrapper,
        needs_dataset,
    )
    if task is not None:
        if task_family(task) != family:
            raise PresetError(f"task: expected a {family} task, got {task!r}")
        _TASK_REGISTRY[(algo, task)] = e
    else:
        _REGISTRY[(algo, family)] = e
    return e


INFRASTRUCTURE: frozenset[str] = frozenset({"registry", "make", "common"})
"""Modules of :mod:`tdrl.presets` that hold no presets: :func:`algorithms` and friends do
not import them (``make`` imports torch)."""

_DISCOVERED = False


def _discover() -> None:
    """Import every preset module of the :mod:`tdrl.presets` package once (plain data:
    each defines its preset class and calls :func:`register`; builders import torch only
    when called)."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    import os
    import pkgutil

    here = [os.path.dirname(__file__)]  # the package's folder, without importing it here
    for info in sorted(pkgutil.iter_modules(here), key=lambda m: m.name):
        if info.name not in INFRASTRUCTURE:
            importlib.import_module(f"tdrl.presets.{info.name}")


def algorithms() -> list[str]:
    """The algorithms that have at least one preset, sorted."""
    _discover()
    return sorted({a for a, _ in _REGISTRY} | {a for a, _ in _TASK_REGISTRY})


def families(algo: str) -> list[str]:
    """The task families ``algo`` has a preset for, in :data:`FAMILIES` order."""
    _discover()
    return [f for f in FAMILIES if (algo, f) in _REGISTRY]


def _check_algo(algo: str) -> None:
    if algo not in algorithms():
        raise PresetError(f"algorithm: expected one of {', '.join(algorithms())}, got {algo!r}")


def default_task(algo: str) -> str:
    """The task of ``algo``'s first registered preset (``classic`` first)."""
    _check_algo(algo)
    fams = families(algo)
    if fams:
        return _REGISTRY[(algo, fams[0])].preset.task
    return sorted(t for a, t in _TASK_REGISTRY if a == algo)[0]


def entry(algo: str, task: str) -> Entry:
    """The entry for ``algo`` on ``task``'s family; a one-line :class:`PresetError` if none."""
    _check_algo(algo)  # discovers the preset modules
    if (algo, task) in _TASK_REGISTRY:
        return _TASK_REGISTRY[(algo, task)]
    family = task_family(task)
    if (algo, family) not in _REGISTRY:
        raise PresetError(
            f"no {algo} preset for the {family} family (task {task}); "
            f"{algo} presets exist for: {', '.join(families(algo))}"
        )
    return _REGISTRY[(algo, family)]


def preset(algo: str, task: str | None = None, **overrides: Any) -> Preset:
    """The preset of ``algo`` for ``task`` (default: its tuned task), with ``overrides``.

    ``task`` and ``threshold`` (from :func:`stop_threshold`) are filled in unless given.

    >>> preset("sac", "Pendulum-v1", batch_size=0)
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: sac preset field 'batch_size': expected an int > 0, got 0
    """
    task = task or default_task(algo)
    e = entry(algo, task)
    if "threshold" not in overrides:
        overrides["threshold"] = task_threshold(algo, task)
    return e.preset.replace(task=task, **overrides)


def check_dataset(algo: str, spec: Entry, given: bool) -> None:
    """Raise a one-line :class:`PresetError` unless a dataset is ``given`` exactly when the
    entry ``needs_dataset`` (offline and imitation algorithms).

    >>> check_dataset("dqn", entry("dqn", "CartPole-v1"), given=True)
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: --dataset: dqn trains online and takes no dataset
    """
    if spec.needs_dataset and not given:
        raise PresetError(
            f"{algo} learns from a dataset: expected --dataset FILE.hdf5 (or minari:NAME), got none"
        )
    if given and not spec.needs_dataset:
        raise PresetError(f"--dataset: {algo} trains online and takes no dataset")


def run_name(algo: str, task: str, seed: int) -> str:
    """The run directory name of ``algo`` on ``task`` with ``seed``: ``ALGO-TASK-seedS``,
    with the ``/`` of namespaced ids (``ALE/Pong-v5``, ``tdrl/NChain-v0``) as ``_`` so a
    run is one directory.

    >>> run_name("psrl", "tdrl/NChain-v0", 0), run_name("dqn", "CartPole-v1", 3)
    ('psrl-tdrl_NChain-v0-seed0', 'dqn-CartPole-v1-seed3')
    """
    return f"{algo}-{task.replace('/', '_')}-seed{seed}"


def task_threshold(algo: str, task: str) -> float | None:
    """The stop threshold of ``algo`` on ``task``: the threshold the registry entry's
    preset was registered with for that very task (its own ``task``; e.g. the offline
    presets' thresholds on their datasets), else :data:`STOP_THRESHOLDS`, else gymnasium's
    ``reward_threshold``, else ``None`` (run every epoch).

    >>> task_threshold("sac", "Pendulum-v1"), task_threshold("sac", "Hopper-v5")
    (-250.0, 3800.0)
    >>> task_threshold("sac", "Walker2d-v5") is None
    True
    >>> task_threshold("cql", "Pendulum-v1"), task_threshold("bc", "CartPole-v1")
    (-400.0, 185.0)
    """
    own = entry(algo, task).preset
    if own.task == task and own.threshold is not None:
        return float(own.threshold)
    if task in STOP_THRESHOLDS:
        return STOP_THRESHOLDS[task]
    return stop_threshold(task)


def field_kinds(cls: type[Preset]) -> dict[str, tuple[str, bool]]:
    """``{field: (kind, optional)}`` of a preset class, ``kind`` one of ``"bool"``,
    ``"int"``, ``"float"``, ``"str"``, ``"tuple"``; ``optional`` if ``None`` is allowed.
    What the command line builds its flags from (``--hidden-sizes 64 64``).

    >>> from tdrl.presets.dqn import DQNPreset
    >>> field_kinds(DQNPreset)["hidden_sizes"], field_kinds(DQNPreset)["threshold"]
    (('tuple', False), ('float', True))
    """
    out: dict[str, tuple[str, bool]] = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp, optional = hints[f.name], False
        args = typing.get_args(tp)
        if args and type(None) in args:
            (tp,) = [a for a in args if a is not type(None)]
            optional = True
        kind = "tuple" if typing.get_origin(tp) is tuple else getattr(tp, "__name__", str(tp))
        out[f.name] = (kind, optional)
    return out


def field_text(cls: type[Preset], name: str) -> str:
    """What a field of ``cls`` expects, as in its error messages ("an int > 0").

    >>> from tdrl.presets.dqn import DQNPreset
    >>> field_text(DQNPreset, "lr"), field_text(DQNPreset, "training_num")
    ('a float > 0', 'an int in [1, 1024]')
    """
    text, _, rule = _schema(cls)[name]
    return f"{text} {rule[0]}" if rule is not None else text
