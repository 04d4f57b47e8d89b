"""TRPO presets (plain data; torch is imported by :func:`build` only).

``classic`` (Pendulum-v1) starts from Tianshou's ``test/continuous/test_trpo.py``: the
networks and rollout settings of the NPG preset (:mod:`tdrl.presets.npg`, including its
1024 steps per collect and epochs of 5000 steps), with the step found by line search
(backtrack coefficient 0.8, 10 trials) within ``max_kl = 0.01`` (TRPO's default and
Tianshou's MuJoCo setting; the test's 0.005 needed 50-90k env steps against 25-60k).
``max_kl = 0.02`` made a seed fail.

>>> from tdrl.presets import registry
>>> p = registry.preset("trpo", "Pendulum-v1")
>>> p.max_kl, p.threshold, registry.entry("trpo", "Pendulum-v1").trainer
(0.01, -250.0, 'onpolicy')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.presets.common import POSITIVE, Rules, pick, register_classic
from tdrl.presets.npg import NATURAL_ARGS, NaturalGradientFields, build_networks

if TYPE_CHECKING:
    from tdrl.algorithm.modelfree.trpo import TRPO

__all__ = ["TRPOPreset", "build"]


@dataclass(frozen=True)
class TRPOPreset(NaturalGradientFields):
    """TRPO hyperparameters and trainer settings (defaults: Pendulum-v1): NPG's
    (:class:`~tdrl.presets.npg.NaturalGradientFields`) and the line search's."""

    algo: ClassVar[str] = "trpo"
    rules: ClassVar[Rules] = {
        **NaturalGradientFields.rules,
        "max_kl": POSITIVE,
        "backtrack_coeff": ("in (0, 1)", lambda v: 0 < v < 1),
        "max_backtracks": POSITIVE,
    }

    max_kl: float = 0.01
    backtrack_coeff: float = 0.8
    max_backtracks: int = 10


def build(p: TRPOPreset, observation_space: Any, action_space: Any) -> TRPO:
    """Create the actor, critic, policy and TRPO."""
    from tdrl.algorithm.modelfree.trpo import TRPO

    policy, critic = build_networks(p, observation_space, action_space)
    return TRPO(policy=policy, critic=critic, optim=p.lr, **pick(p, NATURAL_ARGS))


register_classic(
    __name__, TRPOPreset(), trainer="onpolicy", exploration_noise=False, action_space="any"
)
