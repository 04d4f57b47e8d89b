"""Discrete CRR presets (plain data; the builder imports torch when called).

Offline (``tdrl train discrete_crr CartPole-v1 --dataset FILE.hdf5``), from the data that
``tdrl gather dqn CartPole-v1`` writes; success threshold 180 (the issue's; the registry's
stop threshold of the task, 195, still stops a run early when a test reaches it).

Starting point: Tianshou 2.0.1's ``test/offline/test_discrete_crr.py``: an actor and a
critic on one shared first layer (64) with two 64-unit ReLU layers each, Adam 7e-4, gamma
0.99, the "exp" weight (beta 1, bound 20), CQL weight 10, a target sync every 320
gradient steps, batch 64, 5 epochs of 1000 gradient steps, 100 test episodes, actions
sampled when testing. Changes: 20 test episodes (Tianshou: 100) after every 500 gradient
steps (Tianshou: 1000); the budget stays 5000 gradient steps. Seeds 0-4
(``scripts/seed_sweep.py`` on the seed-0 ``tdrl gather`` data) reached 180 after 500
gradient steps each, in 4-9 s; seeds 0-2 on data gathered with seed 1 too.

>>> p = DiscreteCRRPreset()
>>> p.task, p.policy_improvement_mode, p.target_update_freq
('CartPole-v1', 'exp', 320)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import NONNEG, POSITIVE, DiscreteOfflineFields, Rules, register_classic

__all__ = ["DiscreteCRRPreset", "build"]


@dataclass(frozen=True)
class DiscreteCRRPreset(DiscreteOfflineFields):
    """Discrete CRR hyperparameters and offline-trainer settings (defaults: CartPole-v1).

    Network: a shared first layer of ``hidden_sizes[0]`` units, then an actor head and a
    critic head of ``hidden_sizes[1:]`` each. ``step_per_epoch`` counts gradient steps;
    ``deterministic_eval``: test with the most probable action (else sample).
    """

    algo: ClassVar[str] = "discrete_crr"
    rules: ClassVar[Rules] = {
        "policy_improvement_mode": common.among("exp", "binary", "all"),
        "ratio_upper_bound": POSITIVE,
        "beta": POSITIVE,
        "min_q_weight": NONNEG,
    }

    threshold: float | None = 180.0
    lr: float = 7e-4
    policy_improvement_mode: str = "exp"
    ratio_upper_bound: float = 20.0
    beta: float = 1.0
    min_q_weight: float = 10.0
    deterministic_eval: bool = False
    max_epochs: int = 10


def build(
    p: DiscreteCRRPreset, observation_space: Any, action_space: Any, dataset: Any = None
) -> Any:
    """Create the shared-trunk actor and critic, the policy and the algorithm; a dataset
    that does not fit the spaces is a one-line error.

    >>> import gymnasium as gym
    >>> alg = build(DiscreteCRRPreset(hidden_sizes=(8, 8)), gym.spaces.Box(-1, 1, (4,)),
    ...             gym.spaces.Discrete(2))
    >>> type(alg).__name__, alg.policy.actor[0] is alg.critic[0]
    ('DiscreteCRR', True)
    """
    from tdrl.algorithm.imitation.discrete_crr import DiscreteCRR, DiscreteCRRPolicy

    actor, critic = common.shared_first_layer(
        *common.offline_dims(dataset, observation_space, action_space), p.hidden_sizes
    )
    policy = DiscreteCRRPolicy(
        actor=actor,
        action_space=action_space,
        observation_space=observation_space,
        deterministic_eval=p.deterministic_eval,
    )
    crr_args = ("gamma", "policy_improvement_mode", "ratio_upper_bound", "beta", "min_q_weight")
    return DiscreteCRR(
        policy=policy,
        critic=critic,
        optim=p.lr,
        **common.pick(p, (*crr_args, "target_update_freq")),
    )


register_classic(
    __name__,
    DiscreteCRRPreset(),
    trainer="offline",
    exploration_noise=False,
    action_space="discrete",
)
