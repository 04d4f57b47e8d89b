"""MuJoCo presets: Tianshou 2.0.1's published MuJoCo settings for every continuous algorithm.

One ``mujoco`` family entry per algorithm, so ``tdrl train td3 Hopper-v5`` (or any MuJoCo
task: the builders take their sizes from the spaces) trains with the hyperparameters of
Tianshou's benchmark scripts ``examples/mujoco/mujoco_<algo>.py`` (tag v2.0.1; each value
below cites its script). The presets' own task is Hopper-v5; the stop threshold is
gymnasium's ``reward_threshold`` of the task asked for (none for e.g. Walker2d-v5: the run
takes all its epochs).

On-policy (REINFORCE, A2C, PPO, NPG, TRPO), as the scripts build them:

* tanh MLPs ``(64, 64)``; a Gaussian actor with an unbounded mean and a free log std
  initialised at -0.5; orthogonal weights (gain sqrt 2) and zero biases everywhere, the
  mean's output layer then scaled by 0.01 (arXiv:2006.05990, fig. 24); stochastic test
  episodes (the scripts' ``deterministic_eval=False``); actions clipped (``"clip"``) or
  squashed (REINFORCE: ``"tanh"``) into the Box, then scaled to it;
* ``obs_norm``: the launcher normalizes observations by a running mean/std over the
  training envs, shared frozen with the test envs (:mod:`tdrl.launch`);
* ``lr_decay``: every optimizer's learning rate decays linearly to 0 over the run's
  ``ceil(step_per_epoch / step_per_collect) * max_epochs`` updates
  (:func:`linear_lr_decay`, stepped once per ``update``);
* whole-rollout batches where the scripts pass ``batch_size=None`` (here ``99_999``).

Off-policy (DDPG, TD3, SAC, REDQ): the algorithms' own preset classes and builders
(ReLU MLPs ``(256, 256)``), one training env, one env step per collect, a replay buffer
of 1M and a random warm-up (capped for short runs: :func:`tdrl.launch.warmup_steps`).
Exploration and target-smoothing noise are in raw action units (``[-1, 1]``, before
scaling to the Box), where Tianshou multiplies them by the Box's ``high``: the same for
every MuJoCo task whose actions lie in ``[-1, 1]`` (Hopper, HalfCheetah, Walker2d, Ant).

>>> from tdrl.presets import registry
>>> p = registry.preset("ppo", "HalfCheetah-v5")
>>> type(p).__name__, p.lr, p.step_per_collect, p.obs_norm, p.lr_decay, p.threshold
('PPOMujocoPreset', 0.0003, 2048, True, True, 4800.0)
>>> registry.entry("td3", "Hopper-v5").family, registry.preset("td3", "Hopper-v5").warmup_steps
('mujoco', 25000)
>>> lr_decay_updates(p)  # ceil(30000 / 2048) * 100
1500
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.errors import PresetError
from tdrl.presets import common
from tdrl.presets.a2c import A2C_ARGS, A2CPreset
from tdrl.presets.common import Rules
from tdrl.presets.ddpg import DDPGPreset
from tdrl.presets.npg import NATURAL_ARGS, NPGPreset
from tdrl.presets.ppo import PPO_ARGS, PPOPreset
from tdrl.presets.redq import REDQPreset
from tdrl.presets.registry import Preset, register
from tdrl.presets.reinforce import ReinforcePreset
from tdrl.presets.sac import SACPreset
from tdrl.presets.td3 import TD3Preset
from tdrl.presets.trpo import TRPOPreset
from tdrl.utils.schedule import linear_lr_decay  # its old place: re-exported

if TYPE_CHECKING:
    import gymnasium as gym
    import torch

    from tdrl.algorithm.modelfree.a2c import A2C
    from tdrl.algorithm.modelfree.npg import NPG
    from tdrl.algorithm.modelfree.ppo import PPO
    from tdrl.algorithm.modelfree.reinforce import Reinforce
    from tdrl.algorithm.modelfree.trpo import TRPO
    from tdrl.algorithm.optim import OptimizerFactory
    from tdrl.algorithm.policy_gradient import ActorPolicy

__all__ = [
    "A2CMujocoPreset",
    "NPGMujocoPreset",
    "PPOMujocoPreset",
    "ReinforceMujocoPreset",
    "TRPOMujocoPreset",
    "build_a2c",
    "build_npg",
    "build_ppo",
    "build_reinforce",
    "build_trpo",
    "linear_lr_decay",
    "lr_decay_updates",
    "mujoco_actor_critic",
]

_ON_POLICY_RULES: Rules = {"action_bound_method": common.either("clip", "tanh")}


# ------------------------------------------------------------------------ preset classes
@dataclass(frozen=True)
class _OnPolicyMujocoFields:
    """Fields every on-policy MuJoCo preset adds to its algorithm's preset class.

    ``obs_norm``: the launcher normalizes observations (Tianshou's ``VectorEnvNormObs``);
    ``lr_decay``: linear learning-rate decay to 0 over the run (:func:`linear_lr_decay`);
    ``action_bound_method``: how raw Gaussian actions are bounded, ``"clip"`` or ``"tanh"``.
    """

    obs_norm: bool = True
    lr_decay: bool = True
    action_bound_method: str = "clip"


@dataclass(frozen=True)
class ReinforceMujocoPreset(ReinforcePreset, _OnPolicyMujocoFields):
    """:class:`~tdrl.presets.reinforce.ReinforcePreset` plus the on-policy MuJoCo fields.

    >>> ReinforceMujocoPreset().replace(action_bound_method="none")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: reinforce ... 'action_bound_method': expected ..., got 'none'
    """

    rules: ClassVar[Rules] = {**ReinforcePreset.rules, **_ON_POLICY_RULES}


@dataclass(frozen=True)
class A2CMujocoPreset(A2CPreset, _OnPolicyMujocoFields):
    """:class:`~tdrl.presets.a2c.A2CPreset` plus the on-policy MuJoCo fields; RMSprop
    (``alpha`` 0.99, ``eps`` 1e-5) rather than Adam, as Tianshou's MuJoCo A2C.

    >>> A2CMujocoPreset().lr_decay
    True
    """

    rules: ClassVar[Rules] = {**A2CPreset.rules, **_ON_POLICY_RULES}


@dataclass(frozen=True)
class PPOMujocoPreset(PPOPreset, _OnPolicyMujocoFields):
    """:class:`~tdrl.presets.ppo.PPOPreset` plus the on-policy MuJoCo fields, the dual clip
    (``None``: off) and advantage recomputation before each epoch after the first.

    >>> PPOMujocoPreset().replace(dual_clip=0.5)
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: ppo preset field 'dual_clip': expected a float or None > 1, got 0.5
    """

    rules: ClassVar[Rules] = {
        **PPOPreset.rules,
        **_ON_POLICY_RULES,
        "dual_clip": ("> 1", lambda v: v > 1),
    }

    dual_clip: float | None = None
    recompute_advantage: bool = True


@dataclass(frozen=True)
class NPGMujocoPreset(NPGPreset, _OnPolicyMujocoFields):
    """:class:`~tdrl.presets.npg.NPGPreset` plus the on-policy MuJoCo fields.

    >>> NPGMujocoPreset().obs_norm
    True
    """

    rules: ClassVar[Rules] = {**NPGPreset.rules, **_ON_POLICY_RULES}


@dataclass(frozen=True)
class TRPOMujocoPreset(TRPOPreset, _OnPolicyMujocoFields):
    """:class:`~tdrl.presets.trpo.TRPOPreset` plus the on-policy MuJoCo fields.

    >>> TRPOMujocoPreset().obs_norm
    True
    """

    rules: ClassVar[Rules] = {**TRPOPreset.rules, **_ON_POLICY_RULES}


# ------------------------------------------------------------------ learning-rate decay
def lr_decay_updates(p: Preset) -> int:
    """The number of updates of a run of on-policy preset ``p``:
    ``ceil(step_per_epoch / step_per_collect) * max_epochs`` (Tianshou's
    ``LRSchedulerFactoryLinear``); the trainer calls ``update`` once per collect.

    >>> from tdrl.presets import registry
    >>> lr_decay_updates(registry.preset("a2c", "Hopper-v5"))  # ceil(30000 / 80) * 100
    37500
    >>> lr_decay_updates(registry.preset("reinforce", "CartPole-v1"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: reinforce ... 'step_per_collect': expected an int with lr_decay ...
    """
    step_per_collect = getattr(p, "step_per_collect", None)
    if step_per_collect is None:
        raise PresetError(
            f"{p.algo} preset field 'step_per_collect': expected an int with lr_decay on "
            "(the decay spans the run's collects), got None"
        )
    p_: Any = p
    return math.ceil(p_.step_per_epoch / step_per_collect) * p_.max_epochs


def _optimizer(p: Any, factory: OptimizerFactory) -> OptimizerFactory:
    """``factory``, with the linear decay when the preset asks for it."""
    if getattr(p, "lr_decay", False):
        return factory.with_lr_scheduler(linear_lr_decay(lr_decay_updates(p)))
    return factory


# -------------------------------------------------------------------------------- networks
def mujoco_actor_critic(
    p: Any, observation_space: gym.Space, action_space: gym.Space, critic: bool = True
) -> tuple[ActorPolicy, torch.nn.Module | None]:
    """The policy and critic of Tianshou's on-policy MuJoCo scripts for preset ``p``.

    A tanh-MLP Gaussian actor (unbounded mean, free log std at -0.5) and a tanh-MLP critic
    of ``p.hidden_sizes``; orthogonal weights (gain sqrt 2), zero biases, the mean's layer
    scaled by 0.01; the policy bounds actions by ``p.action_bound_method`` and samples at
    test time unless ``p.deterministic_eval``.

    >>> import gymnasium as gym
    >>> policy, critic = mujoco_actor_critic(
    ...     PPOMujocoPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (5,)),
    ...     gym.spaces.Box(-1, 1, (2,)))
    >>> actor = policy.actor
    >>> actor.log_std.tolist(), float(actor.loc.weight.detach().abs().max()) < 0.05
    ([-0.5, -0.5], True)
    """
    import numpy as np
    import torch

    from tdrl.utils.net import VCritic

    tanh = torch.nn.Tanh
    actor = common.pg_actor(p, observation_space, action_space, init_log_std=-0.5, activation=tanh)
    v = (
        VCritic(common.space_dim(observation_space), p.hidden_sizes, activation=tanh)
        if critic
        else None
    )
    with torch.no_grad():
        common.orthogonal_init(actor, *([v] if v is not None else []), gain=float(np.sqrt(2)))
        actor.loc.weight.mul_(0.01)  # last policy layer scaling: initial actions near 0
    policy = common.actor_policy(p, actor, action_space, action_bound_method=p.action_bound_method)
    return policy, v


# -------------------------------------------------------------------------------- builders
def _build(
    algo_cls: Any, args: tuple[str, ...], p: Any, spaces: tuple[Any, Any], optim: Any
) -> Any:
    """``algo_cls`` on :func:`mujoco_actor_critic`'s networks, with ``optim`` (the linear
    decay added when ``p.lr_decay``) and the fields of ``p`` named in ``args``."""
    policy, critic = mujoco_actor_critic(p, *spaces)
    assert critic is not None
    return algo_cls(
        policy=policy, critic=critic, optim=_optimizer(p, optim), **common.pick(p, args)
    )


def build_reinforce(
    p: ReinforceMujocoPreset, observation_space: gym.Space, action_space: gym.Space
) -> Reinforce:
    """REINFORCE as ``mujoco_reinforce.py``: actor only, Adam with the linear decay."""
    from tdrl.algorithm.modelfree.reinforce import Reinforce
    from tdrl.algorithm.optim import AdamOptimizerFactory

    policy, _ = mujoco_actor_critic(p, observation_space, action_space, critic=False)
    return Reinforce(
        policy=policy,
        optim=_optimizer(p, AdamOptimizerFactory(lr=p.lr)),
        gamma=p.gamma,
        return_standardization=p.return_standardization,
    )


def build_a2c(p: A2CMujocoPreset, observation_space: gym.Space, action_space: gym.Space) -> A2C:
    """A2C as ``mujoco_a2c.py``: RMSprop (alpha 0.99, eps 1e-5) with the linear decay."""
    import torch

    from tdrl.algorithm.modelfree.a2c import A2C
    from tdrl.algorithm.optim import OptimizerFactory

    rmsprop = OptimizerFactory(torch.optim.RMSprop, lr=p.lr, eps=1e-5, alpha=0.99)
    return _build(A2C, A2C_ARGS, p, (observation_space, action_space), rmsprop)


def build_ppo(p: PPOMujocoPreset, observation_space: gym.Space, action_space: gym.Space) -> PPO:
    """PPO as ``mujoco_ppo.py``: one Adam (linear decay) for actor and critic."""
    from tdrl.algorithm.modelfree.ppo import PPO
    from tdrl.algorithm.optim import AdamOptimizerFactory

    adam = AdamOptimizerFactory(lr=p.lr)
    return _build(PPO, PPO_ARGS, p, (observation_space, action_space), adam)


def build_npg(p: NPGMujocoPreset, observation_space: gym.Space, action_space: gym.Space) -> NPG:
    """NPG as ``mujoco_npg.py``: the critic's Adam with the linear decay."""
    from tdrl.algorithm.modelfree.npg import NPG
    from tdrl.algorithm.optim import AdamOptimizerFactory

    adam = AdamOptimizerFactory(lr=p.lr)
    return _build(NPG, NATURAL_ARGS, p, (observation_space, action_space), adam)


def build_trpo(p: TRPOMujocoPreset, observation_space: gym.Space, action_space: gym.Space) -> TRPO:
    """TRPO as ``mujoco_trpo.py``: the critic's Adam with the linear decay."""
    from tdrl.algorithm.modelfree.trpo import TRPO
    from tdrl.algorithm.optim import AdamOptimizerFactory

    adam = AdamOptimizerFactory(lr=p.lr)
    return _build(TRPO, NATURAL_ARGS, p, (observation_space, action_space), adam)


# ------------------------------------------------------------------------------ registry
# Values from Tianshou v2.0.1 examples/mujoco/mujoco_<algo>.py (the ``main`` defaults);
# fields not listed keep their preset class's default, which matches the script unless
# noted. "script: X" names the script's parameter where it differs from the field's name.
# What every on-policy script shares (each one's own values follow in _ON_POLICY):
_ON_POLICY_COMMON: dict[str, Any] = {
    "task": "Hopper-v5",  # script: task="Ant-v4"; any MuJoCo task works
    "hidden_sizes": (64, 64),  # hidden_sizes=[64, 64], nn.Tanh
    "gamma": 0.99,  # gamma=0.99
    "lr_decay": True,  # lr_decay=True
    "obs_norm": True,  # make_mujoco_env(..., obs_norm=True)
    "deterministic_eval": False,  # ProbabilisticActorPolicy's default
    "buffer_size": 4096,  # buffer_size=4096
    "test_num": 10,  # num_test_envs=10
    "max_epochs": 100,  # epoch=100
    "step_per_epoch": 30_000,  # epoch_num_steps=30000
}
_WHOLE_ROLLOUT = {"repeat_per_collect": 1, "batch_size": 99_999}  # batch_size=None
_GAE = {"gae_lambda": 0.95, "return_scaling": True}  # gae_lambda=0.95, return_scaling=True
_NATURAL = {  # mujoco_npg.py and mujoco_trpo.py
    **_GAE,
    "advantage_normalization": True,
    "optim_critic_iters": 20,
    "lr": 1e-3,  # the critic's Adam
    "training_num": 16,
    "step_per_collect": 1024,
    **_WHOLE_ROLLOUT,
}
_ON_POLICY: tuple[tuple[type[Preset], dict[str, Any]], ...] = (
    (  # examples/mujoco/mujoco_reinforce.py
        ReinforceMujocoPreset,
        {
            "lr": 1e-3,  # Adam
            "return_standardization": True,  # script: return_scaling=True
            "action_bound_method": "tanh",
            "training_num": 10,
            "step_per_collect": 2048,
            "episode_per_collect": None,
            **_WHOLE_ROLLOUT,
        },
    ),
    (  # examples/mujoco/mujoco_a2c.py: separate actor and critic
        A2CMujocoPreset,
        {
            "shared_trunk": False,
            "lr": 7e-4,  # RMSprop, eps=1e-5, alpha=0.99
            **_GAE,
            "vf_coef": 0.5,
            "ent_coef": 0.01,
            "max_grad_norm": 0.5,
            "action_bound_method": "clip",
            "training_num": 16,
            "step_per_collect": 80,
            "episode_per_collect": None,
            **_WHOLE_ROLLOUT,
        },
    ),
    (  # examples/mujoco/mujoco_ppo.py
        PPOMujocoPreset,
        {
            "lr": 3e-4,  # Adam, actor and critic together
            **_GAE,
            "eps_clip": 0.2,
            "dual_clip": None,
            "value_clip": True,
            "advantage_normalization": False,
            "recompute_advantage": True,  # script: recompute_adv=True
            "vf_coef": 0.25,
            "ent_coef": 0.0,
            "max_grad_norm": 0.5,
            "action_bound_method": "clip",  # script: bound_action_method="clip"
            "training_num": 8,
            "step_per_collect": 2048,
            "repeat_per_collect": 10,
            "batch_size": 64,
        },
    ),
    (NPGMujocoPreset, {**_NATURAL, "trust_region_size": 0.1}),  # mujoco_npg.py
    (  # examples/mujoco/mujoco_trpo.py
        TRPOMujocoPreset,
        {**_NATURAL, "max_kl": 0.01, "backtrack_coeff": 0.8, "max_backtracks": 10},
    ),
)
"""Per script: the preset class and its values beyond ``_ON_POLICY_COMMON`` (each named as
in the script unless a comment says; ``training_num``: ``num_training_envs``,
``step_per_collect``: ``collection_step_num_env_steps``, ``repeat_per_collect``:
``update_step_num_repetitions``; ``batch_size=99_999``: the script's ``None``, the whole
rollout)."""

# What every off-policy script shares (ReLU MLPs), then each one's own values:
_OFF_POLICY_COMMON: dict[str, Any] = {
    "task": "Hopper-v5",  # script: task="Ant-v4"
    "hidden_sizes": (256, 256),  # hidden_sizes=[256, 256] (ReLU)
    "gamma": 0.99,
    "tau": 0.005,
    "n_step": 1,
    "buffer_size": 1_000_000,
    "training_num": 1,  # num_training_envs=1
    "test_num": 10,  # num_test_envs=10
    "max_epochs": 50,  # epoch=50 (v2.0.1; SAC: 200 in Tianshou 0.x)
    "step_per_epoch": 5000,  # epoch_num_steps=5000
    "step_per_collect": 1,  # collection_step_num_env_steps=1
    "update_per_step": 1.0,
    "batch_size": 256,
}
_NOISE = {  # GaussianNoise, exploration_noise=0.1 (times max_action = 1 on Hopper)
    "exploration_noise": "gaussian",
    "noise_sigma": 0.1,
}
_ENTROPY = {"auto_alpha": False, "alpha": 0.2, "alpha_lr": 3e-4}  # alpha_lr: auto_alpha only
_OFF_POLICY: tuple[tuple[type[Preset], str, bool, dict[str, Any]], ...] = (
    # (class, builder, exploration_noise: the policy adds its noise in training steps, values)
    (  # examples/mujoco/mujoco_ddpg.py
        DDPGPreset,
        "tdrl.presets.ddpg:build",
        True,
        {"actor_lr": 1e-3, "critic_lr": 1e-3, **_NOISE, "warmup_steps": 25_000},
    ),
    (  # examples/mujoco/mujoco_td3.py; policy_noise in units of max_action
        TD3Preset,
        "tdrl.presets.td3:build",
        True,
        {
            **{"actor_lr": 3e-4, "critic_lr": 3e-4, **_NOISE, "warmup_steps": 25_000},
            **{"policy_noise": 0.2, "noise_clip": 0.5, "update_actor_freq": 2},
        },
    ),
    (  # examples/mujoco/mujoco_sac.py
        SACPreset,
        "tdrl.presets.sac:build",
        False,
        {"actor_lr": 1e-3, "critic_lr": 1e-3, **_ENTROPY, "warmup_steps": 10_000},
    ),
    (  # examples/mujoco/mujoco_redq.py; the policy samples inside training steps
        REDQPreset,
        "tdrl.presets.redq:build",
        False,
        {
            **{"actor_lr": 1e-3, "critic_lr": 1e-3, **_ENTROPY, "warmup_steps": 10_000},
            **{"ensemble_size": 10, "subset_size": 2, "target_mode": "min"},
            "actor_delay": 20,  # actor_delay=update_per_step=20
            "update_per_step": 20.0,  # update_per_step=20 (the update-to-data ratio)
        },
    ),
)
"""Per script: the preset class, its builder, whether the collectors add the policy's
exploration noise, and its values beyond ``_OFF_POLICY_COMMON`` (``warmup_steps``: the
script's ``start_timesteps``)."""

for _cls, _values in _ON_POLICY:
    register(
        _cls.algo,
        "mujoco",
        _cls(**{**_ON_POLICY_COMMON, **_values}),
        builder=f"tdrl.presets.mujoco:build_{_cls.algo}",
        trainer="onpolicy",
        exploration_noise=False,
        action_space="continuous",
    )
for _cls, _builder, _noise, _values in _OFF_POLICY:
    register(
        _cls.algo,
        "mujoco",
        _cls(**{**_OFF_POLICY_COMMON, **_values}),
        builder=_builder,
        trainer="offpolicy",
        exploration_noise=_noise,
        action_space="continuous",
    )
