"""NPG presets (plain data; torch is imported by :func:`build` only).

``classic`` (Pendulum-v1) starts from Tianshou's ``test/continuous/test_npg.py``: a
``(64, 64)`` tanh MLP actor (state-independent ``log std``, unbounded mean) and critic,
orthogonal weights and zero biases, gamma 0.95, GAE lambda 0.95, return scaling and
advantage normalization, 5 critic steps per actor step, trust region size 0.5, full-batch
updates twice per collect, 16 training envs, no observation normalization. Changed for
speed: 1024 env steps per collect (Tianshou's test: 2048; reached the threshold in about
60k env steps against 70-100k) and epochs of 5000 steps (a test every 5 collects; the
budget stays 250k steps). A larger trust region (1.0), more critic steps (10) or more
passes per collect (4) made some seeds fail.

>>> from tdrl.presets import registry
>>> p = registry.preset("npg", "Pendulum-v1")
>>> p.trust_region_size, p.threshold, registry.entry("npg", "Pendulum-v1").trainer
(0.5, -250.0, 'onpolicy')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import POSITIVE, OnPolicyFields, Rules, register_classic

if TYPE_CHECKING:
    from tdrl.algorithm.modelfree.npg import NPG

__all__ = ["NATURAL_ARGS", "NPGPreset", "NaturalGradientFields", "build", "build_networks"]

NATURAL_ARGS = (
    *("gamma", "gae_lambda", "return_scaling", "advantage_normalization", "optim_critic_iters"),
    *("trust_region_size", "max_kl", "backtrack_coeff", "max_backtracks"),
)
"""The NPG/TRPO arguments a preset's fields of the same names set (those it has)."""


@dataclass(frozen=True)
class NaturalGradientFields(OnPolicyFields):
    """What the NPG and TRPO presets share (defaults: Pendulum-v1, from Tianshou's
    ``test_npg.py`` and ``test_trpo.py``): GAE, return scaling, advantage normalization,
    ``optim_critic_iters`` critic steps per actor step, full-batch updates."""

    rules: ClassVar[Rules] = {"optim_critic_iters": POSITIVE}

    task: str = "Pendulum-v1"
    lr: float = 1e-3
    gamma: float = 0.95
    gae_lambda: float = 0.95
    return_scaling: bool = True
    advantage_normalization: bool = True
    optim_critic_iters: int = 5
    buffer_size: int = 50_000
    training_num: int = 16
    test_num: int = 10
    max_epochs: int = 50
    step_per_epoch: int = 5000
    step_per_collect: int = 1024
    repeat_per_collect: int = 2
    batch_size: int = 99_999


@dataclass(frozen=True)
class NPGPreset(NaturalGradientFields):
    """NPG hyperparameters and trainer settings (defaults: Pendulum-v1)."""

    algo: ClassVar[str] = "npg"
    rules: ClassVar[Rules] = {**NaturalGradientFields.rules, "trust_region_size": POSITIVE}

    trust_region_size: float = 0.5


def build_networks(p: Any, observation_space: Any, action_space: Any) -> tuple[Any, Any]:
    """The policy (tanh MLP Gaussian actor) and critic of an NPG/TRPO preset, with
    orthogonal weights and zero biases as in Tianshou's tests."""
    import torch

    from tdrl.utils.net import VCritic

    actor = common.pg_actor(p, observation_space, action_space, activation=torch.nn.Tanh)
    critic = VCritic(common.space_dim(observation_space), p.hidden_sizes)
    common.orthogonal_init(actor, critic)
    return common.actor_policy(p, actor, action_space), critic


def build(p: NPGPreset, observation_space: Any, action_space: Any) -> NPG:
    """Create the actor, critic, policy and NPG."""
    from tdrl.algorithm.modelfree.npg import NPG

    policy, critic = build_networks(p, observation_space, action_space)
    return NPG(policy=policy, critic=critic, optim=p.lr, **common.pick(p, NATURAL_ARGS))


register_classic(
    __name__, NPGPreset(), trainer="onpolicy", exploration_noise=False, action_space="any"
)
