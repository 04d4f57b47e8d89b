"""Pieces the preset modules share (plain data: no torch at import; not a preset module).

* field groups: frozen dataclasses of the fields a family of presets shares, with one
  preset's defaults; a preset class derives from its group and lists only what it tunes;
* range rules (:data:`POSITIVE`, :func:`either`, ...) for :attr:`Preset.rules`;
* argument helpers: the keyword arguments many builders pass the same way, read from a
  preset's fields, so a builder names only what is its own;
* network helpers (torch imported when called) and :func:`register_classic`.

>>> from tdrl.presets.c51 import C51Preset
>>> p = C51Preset()
>>> q_learning_args(p)
{'optim': 0.001, 'gamma': 0.9, 'n_step': 3, 'target_update_freq': 160}
>>> eps_args(p), support_args(p)
({'eps_training': 0.1, 'eps_inference': 0.05}, {'num_atoms': 51, 'v_min': -10.0, 'v_max': 10.0})
>>> pick(p, ("gamma", "no_such_field"))
{'gamma': 0.9}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tdrl.errors import PresetError
from tdrl.presets.registry import Entry, Preset, register

__all__ = [
    "AT_LEAST_1",
    "AT_LEAST_2",
    "EPSILON_GREEDY",
    "NONNEG",
    "POSITIVE",
    "UNIT",
    "DiscreteOfflineFields",
    "EpisodeCollectFields",
    "OffPolicyFields",
    "OfflineActorCriticFields",
    "OfflineFields",
    "OnPolicyFields",
    "QLearningFields",
    "Rule",
    "Rules",
    "actor_critic_args",
    "actor_policy",
    "among",
    "check_support",
    "either",
    "eps_args",
    "offline_dims",
    "orthogonal_init",
    "pg_actor",
    "pick",
    "q_learner",
    "q_learning_args",
    "register_classic",
    "sac_alpha",
    "shared_first_layer",
    "space_dim",
    "support_args",
]

# ---------------------------------------------------------------------------- range rules
Rule = tuple[str, Callable[[Any], bool]]
Rules = dict[str, Rule]
"""The type of :attr:`Preset.rules`: ``{field: (text, check)}``."""

POSITIVE: Rule = ("> 0", lambda v: v > 0)
NONNEG: Rule = (">= 0", lambda v: v >= 0)
AT_LEAST_1: Rule = (">= 1", lambda v: v >= 1)
AT_LEAST_2: Rule = (">= 2", lambda v: v >= 2)
UNIT: Rule = ("in [0, 1]", lambda v: 0 <= v <= 1)


def either(a: str, b: str) -> Rule:
    """The rule "``a`` or ``b``" of a str field.

    >>> either("min", "mean")[0], either("min", "mean")[1]("max")
    ("'min' or 'mean'", False)
    """
    return (f"{a!r} or {b!r}", lambda v: v in (a, b))


def among(*values: str) -> Rule:
    """The rule "in ``values``" of a str field.

    >>> among("exp", "binary", "all")[0]
    "in ('exp', 'binary', 'all')"
    """
    return (f"in {values!r}", lambda v: v in values)


def check_support(p: Any) -> None:
    """Raise a one-line :class:`PresetError` unless ``p.v_min < p.v_max``."""
    if not p.v_min < p.v_max:
        raise PresetError(
            f"{p.algo} preset field 'v_max': expected a float > v_min = {p.v_min}, got {p.v_max}"
        )


# ------------------------------------------------------------------------- argument helpers
def pick(p: Any, names: Iterable[str]) -> dict[str, Any]:
    """``{name: p.name}`` for each of ``names`` that preset ``p`` has (the others are left
    to the algorithm's defaults)."""
    return {n: getattr(p, n) for n in names if hasattr(p, n)}


def q_learning_args(p: Any) -> dict[str, Any]:
    """The Q-learning base's arguments: ``optim`` (``p.lr``), ``gamma``, ``n_step`` and
    ``target_update_freq``."""
    return {"optim": p.lr, **pick(p, ("gamma", "n_step", "target_update_freq"))}


def eps_args(p: Any) -> dict[str, Any]:
    """An epsilon-greedy policy's epsilons: ``eps_train`` inside training steps, ``eps_test``
    outside."""
    return {"eps_training": p.eps_train, "eps_inference": p.eps_test}


def support_args(p: Any) -> dict[str, Any]:
    """A distributional policy's support: ``num_atoms`` atoms on ``[v_min, v_max]``."""
    return pick(p, ("num_atoms", "v_min", "v_max"))


def actor_critic_args(p: Any, make_critic: Callable[[], Any], twin: bool = False) -> dict[str, Any]:
    """An actor-critic's optimizers and critics: ``policy_optim`` (``p.actor_lr``),
    ``critic=make_critic()`` (and ``critic2=make_critic()`` if ``twin``), ``critic_optim``
    (``p.critic_lr``), and ``tau``, ``gamma``, ``n_step`` where ``p`` has them."""
    kw = {"policy_optim": p.actor_lr, "critic": make_critic(), "critic_optim": p.critic_lr}
    if twin:
        kw["critic2"] = make_critic()
    return {**kw, **pick(p, ("tau", "gamma", "n_step"))}


def sac_alpha(p: Any, log_alpha: float | None = None) -> Any:
    """SAC's temperature: ``p.alpha``, or with ``p.auto_alpha`` an ``AutoAlpha`` tuned by
    Adam ``p.alpha_lr`` from ``log_alpha`` (default ``log(p.alpha)``)."""
    if not p.auto_alpha:
        return p.alpha
    import numpy as np

    from tdrl.algorithm.modelfree.sac import AutoAlpha

    start = np.log(p.alpha) if log_alpha is None else log_alpha
    return AutoAlpha("auto", log_alpha=float(start), optim=p.alpha_lr)


# ------------------------------------------------------------------------- network helpers
def space_dim(space: Any) -> int:
    """A space's flat size: ``n`` of a ``Discrete``, the product of the shape otherwise."""
    import numpy as np

    n = getattr(space, "n", None)
    return int(n) if n is not None else int(np.prod(space.shape))


def offline_dims(dataset: Any, observation_space: Any, action_space: Any) -> tuple[int, int]:
    """:func:`space_dim` of both spaces, after checking that ``dataset`` (if given) fits them
    (else a one-line error)."""
    if dataset is not None:
        from tdrl.data.datasets import check_spaces

        check_spaces(dataset, observation_space, action_space)
    return space_dim(observation_space), space_dim(action_space)


def orthogonal_init(*modules: Any, gain: float = 1.0) -> None:
    """Orthogonal weights (``gain``) and zero biases for every linear layer of ``modules``."""
    import torch

    for m in [m for module in modules for m in module.modules()]:
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.orthogonal_(m.weight, gain=gain)
            torch.nn.init.zeros_(m.bias)


def pg_actor(
    p: Any,
    observation_space: Any,
    action_space: Any,
    discrete_activation: Any = None,
    **gaussian_kwargs: Any,
) -> Any:
    """A policy-gradient actor of ``p.hidden_sizes``: categorical (``DiscreteActor``, with
    ``discrete_activation`` if given) for a ``Discrete`` space, else a Gaussian with a
    state-independent ``log std`` (``gaussian_kwargs`` go to ``GaussianActor``)."""
    import gymnasium as gym

    from tdrl.utils.net import DiscreteActor, GaussianActor

    d, a = space_dim(observation_space), space_dim(action_space)
    if isinstance(action_space, gym.spaces.Discrete):
        kw = {} if discrete_activation is None else {"activation": discrete_activation}
        return DiscreteActor(d, a, p.hidden_sizes, **kw)
    return GaussianActor(d, a, p.hidden_sizes, state_dependent_std=False, **gaussian_kwargs)


def actor_policy(p: Any, actor: Any, action_space: Any, **kwargs: Any) -> Any:
    """An ``ActorPolicy`` on ``actor`` that samples at test time unless
    ``p.deterministic_eval``."""
    from tdrl.algorithm.policy_gradient import ActorPolicy

    return ActorPolicy(
        actor=actor, action_space=action_space, deterministic_eval=p.deterministic_eval, **kwargs
    )


def shared_first_layer(d: int, n: int, hidden_sizes: tuple[int, ...]) -> tuple[Any, Any]:
    """Two MLP heads ``-> n`` of ``hidden_sizes[1:]`` on one shared first layer of
    ``hidden_sizes[0]`` units (Tianshou's offline discrete tests)."""
    from torch import nn

    from tdrl.utils.net import MLP

    trunk = MLP(d, 0, hidden_sizes[:1])
    width = trunk.output_dim
    return (
        nn.Sequential(trunk, MLP(width, n, hidden_sizes[1:])),
        nn.Sequential(trunk, MLP(width, n, hidden_sizes[1:])),
    )


def q_learner(
    p: Any,
    policy_cls: Any,
    algo_cls: Any,
    model: Any,
    action_space: Any,
    eps: dict[str, Any] | None = None,
    policy_args: dict[str, Any] | None = None,
    **algo_args: Any,
) -> Any:
    """``algo_cls`` on ``policy_cls(model, action_space, eps, policy_args)``, with
    :func:`q_learning_args` and ``algo_args``; ``eps`` defaults to :func:`eps_args`."""
    policy = policy_cls(
        model=model,
        action_space=action_space,
        **(policy_args or {}),
        **(eps_args(p) if eps is None else eps),
    )
    return algo_cls(policy=policy, **q_learning_args(p), **algo_args)


# ----------------------------------------------------------------------------- registering
EPSILON_GREEDY: dict[str, Any] = {
    "trainer": "offpolicy",
    "exploration_noise": True,  # epsilon-greedy: eps_train in training, eps_test when testing
    "action_space": "discrete",
}
"""How the DQN family's ``classic`` entries are registered (:func:`register_classic`)."""


def register_classic(module: str, preset: Preset, **kwargs: Any) -> Entry:
    """:func:`~tdrl.presets.registry.register` ``preset`` for the ``classic`` family with
    the builder ``module:build`` (``kwargs``: ``trainer``, ``exploration_noise``,
    ``action_space``, ...)."""
    return register(preset.algo, "classic", preset, builder=f"{module}:build", **kwargs)


# ---------------------------------------------------------------------------- field groups
@dataclass(frozen=True)
class OffPolicyFields(Preset):
    """The off-policy trainer's fields, with the ``classic`` SAC/DDPG/TD3 defaults
    (Pendulum-v1); a preset class derives from it and overrides the defaults it tunes.

    Warm up with ``collect(n_step=warmup_steps, random=True)``.
    """

    buffer_size: int = 20_000
    training_num: int = 10
    test_num: int = 10
    warmup_steps: int = 1000
    max_epochs: int = 20
    step_per_epoch: int = 1000
    step_per_collect: int = 10
    update_per_step: float = 1.0
    batch_size: int = 128


@dataclass(frozen=True)
class QLearningFields(OffPolicyFields):
    """:class:`OffPolicyFields` plus the Q-learning fields of the DQN family, with DQN's
    ``classic`` defaults (CartPole-v1): Adam ``lr``, ``gamma``, ``n_step`` returns, a
    target sync every ``target_update_freq`` gradient steps, epsilon-greedy ``eps_train``
    inside training steps and ``eps_test`` outside (:func:`eps_args`)."""

    lr: float = 1e-3
    gamma: float = 0.9
    n_step: int = 3
    target_update_freq: int = 320
    eps_train: float = 0.1
    eps_test: float = 0.05
    test_num: int = 100
    warmup_steps: int = 640
    max_epochs: int = 10
    step_per_epoch: int = 10_000
    update_per_step: float = 0.1
    batch_size: int = 64


@dataclass(frozen=True)
class OnPolicyFields(Preset):
    """The on-policy trainer's fields and the actor's, with PPO's ``classic`` defaults
    (CartPole-v1): networks of ``hidden_sizes``, Adam ``lr``, ``gamma``, test with the
    most probable action if ``deterministic_eval``; ``repeat_per_collect`` passes over each
    collect in minibatches of ``batch_size``."""

    hidden_sizes: tuple[int, ...] = (64, 64)
    lr: float = 3e-4
    gamma: float = 0.99
    deterministic_eval: bool = True
    buffer_size: int = 20_000
    training_num: int = 20
    test_num: int = 100
    max_epochs: int = 10
    step_per_epoch: int = 50_000
    step_per_collect: int = 2000
    repeat_per_collect: int = 10
    batch_size: int = 64


@dataclass(frozen=True)
class EpisodeCollectFields(Preset):
    """Collect ``episode_per_collect`` whole episodes or ``step_per_collect`` steps per
    update: exactly one of the two is set (checked), and the trainer gets both."""

    step_per_collect: int | None = None
    episode_per_collect: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.step_per_collect is None) == (self.episode_per_collect is None):
            raise PresetError(
                f"{self.algo} preset fields 'step_per_collect' and 'episode_per_collect': "
                f"expected exactly one of them set, got {self.step_per_collect} and "
                f"{self.episode_per_collect}"
            )

    def trainer_kwargs(self) -> dict[str, Any]:
        """The base's trainer arguments plus ``episode_per_collect``."""
        return {**super().trainer_kwargs(), "episode_per_collect": self.episode_per_collect}


@dataclass(frozen=True)
class OfflineFields(Preset):
    """The offline trainer's fields (``step_per_epoch`` counts gradient steps) and the
    networks' ``hidden_sizes``, with the continuous offline presets' defaults
    (Pendulum-v1)."""

    hidden_sizes: tuple[int, ...] = (64, 64)
    test_num: int = 10
    max_epochs: int = 20
    step_per_epoch: int = 500
    batch_size: int = 256


@dataclass(frozen=True)
class DiscreteOfflineFields(OfflineFields):
    """:class:`OfflineFields` plus the discrete offline presets' shared fields, with Discrete
    BCQ's defaults (CartPole-v1): Adam ``lr``, ``gamma``, a target sync every
    ``target_update_freq`` gradient steps, 20 test episodes."""

    task: str = "CartPole-v1"
    hidden_sizes: tuple[int, ...] = (64, 64, 64)
    lr: float = 3e-4
    gamma: float = 0.99
    target_update_freq: int = 320
    test_num: int = 20
    batch_size: int = 64


@dataclass(frozen=True)
class OfflineActorCriticFields(OfflineFields):
    """:class:`OfflineFields` plus the continuous offline actor-critics' shared fields, with
    their defaults (Pendulum-v1): Adam ``actor_lr`` and ``critic_lr``, ``gamma``, soft
    target updates of rate ``tau``."""

    task: str = "Pendulum-v1"
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.005
