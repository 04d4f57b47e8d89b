"""IQL presets (plain data; the builder imports torch when called).

``classic`` (tuned on Pendulum-v1 from ``tdrl gather sac Pendulum-v1`` data, threshold
-300). IQL is not in Tianshou; the paper's MuJoCo settings (arXiv:2110.06169, appendix
B) are expectile 0.7, inverse temperature 3, weight clip 100, tau 0.005, gamma 0.99,
batch 256, Adam 3e-4 and 256x256 networks with a state-independent Gaussian policy whose
mean is squashed by tanh. For speed on a CPU: 64x64 networks and lr 1e-3.

>>> p = IQLPreset()
>>> p.expectile, p.beta, p.max_weight
(0.7, 3.0, 100.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import NONNEG, POSITIVE, OfflineActorCriticFields, Rules, register_classic

__all__ = ["IQLPreset", "build"]


@dataclass(frozen=True)
class IQLPreset(OfflineActorCriticFields):
    """IQL hyperparameters and offline-trainer settings (defaults: Pendulum-v1).

    ``step_per_epoch`` counts gradient steps; ``beta`` is the inverse temperature of the
    advantage weights, ``max_weight`` their clip.
    """

    algo: ClassVar[str] = "iql"
    rules: ClassVar[Rules] = {
        "expectile": ("in (0, 1)", lambda v: 0 < v < 1),
        "beta": NONNEG,
        "max_weight": POSITIVE,
        "value_lr": POSITIVE,
    }

    threshold: float | None = -300.0
    value_lr: float = 1e-3
    expectile: float = 0.7
    beta: float = 3.0
    max_weight: float = 100.0


def build(p: IQLPreset, observation_space: Any, action_space: Any, dataset: Any = None) -> Any:
    """Create the Gaussian policy, twin critics, value network and
    :class:`~tdrl.algorithm.imitation.iql.IQL`.

    >>> import gymnasium as gym
    >>> alg = build(IQLPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (1,)))
    >>> type(alg).__name__, alg.expectile, alg.policy.deterministic_eval
    ('IQL', 0.7, True)
    """
    from torch import nn

    from tdrl.algorithm.imitation.iql import IQL, IQLPolicy
    from tdrl.utils.net import GaussianActor, QCritic, VCritic

    d, a = common.offline_dims(dataset, observation_space, action_space)
    actor = GaussianActor(d, a, p.hidden_sizes, state_dependent_std=False, bounded_loc=True)
    policy = IQLPolicy(
        actor=actor,
        action_space=action_space,
        observation_space=observation_space,
        deterministic_eval=True,
    )
    critics = common.actor_critic_args(p, lambda: QCritic(d, a, p.hidden_sizes), twin=True)
    return IQL(
        policy=policy,
        **critics,
        value=VCritic(d, p.hidden_sizes, activation=nn.ReLU),
        value_optim=p.value_lr,
        **common.pick(p, ("expectile", "beta", "max_weight")),
    )


register_classic(
    __name__, IQLPreset(), trainer="offline", exploration_noise=False, action_space="continuous"
)
