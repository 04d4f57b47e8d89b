"""Discrete BCQ presets (plain data; the builder imports torch when called).

Offline (``tdrl train discrete_bcq CartPole-v1 --dataset FILE.hdf5``), from the data that
``tdrl gather dqn CartPole-v1`` writes; success threshold 185 (the issue's; the registry's
stop threshold of the task, 195, still stops a run early when a test reaches it).

Starting point: Tianshou 2.0.1's ``test/offline/test_discrete_bcq.py``: a Q network and an
imitator on one shared first layer (64) with two 64-unit ReLU layers each, Adam 3e-4,
gamma 0.99, 3-step returns, a target sync every 320 gradient steps, ``tau = 0.6``,
logits penalty 0.01, batch 64, 5 epochs of 2000 gradient steps, epsilon 0.001 when
testing, 100 test episodes. (Tianshou's test heads end in a softmax, so its "Q-values" are
probabilities; here the Q head and the imitator output raw values and logits.) Changes:
20 test episodes (Tianshou: 100) after every 500 gradient steps (Tianshou: 2000), so a run
stops sooner; the budget stays 10k gradient steps. Seeds 0-4 (``scripts/seed_sweep.py``
on the seed-0 ``tdrl gather`` data) reached 185 after 1000 gradient steps each, in 5-9 s;
seeds 0-2 on data gathered with seed 1 after 500.

>>> p = DiscreteBCQPreset()
>>> p.task, p.unlikely_action_threshold, p.n_step
('CartPole-v1', 0.6, 3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import NONNEG, DiscreteOfflineFields, Rules, register_classic

__all__ = ["DiscreteBCQPreset", "build"]


@dataclass(frozen=True)
class DiscreteBCQPreset(DiscreteOfflineFields):
    """Discrete BCQ hyperparameters and offline-trainer settings (defaults: CartPole-v1).

    Network: a shared first layer of ``hidden_sizes[0]`` units, then a Q head and an
    imitation head of ``hidden_sizes[1:]`` each. ``step_per_epoch`` counts gradient steps;
    the test collector adds ``eps_test`` random actions.
    """

    algo: ClassVar[str] = "discrete_bcq"
    rules: ClassVar[Rules] = {
        "unlikely_action_threshold": ("in [0, 1)", lambda v: 0 <= v < 1),
        "imitation_logits_penalty": NONNEG,
    }

    threshold: float | None = 185.0
    n_step: int = 3
    unlikely_action_threshold: float = 0.6
    imitation_logits_penalty: float = 0.01
    eps_test: float = 0.001


def build(
    p: DiscreteBCQPreset, observation_space: Any, action_space: Any, dataset: Any = None
) -> Any:
    """Create the shared-trunk Q network and imitator, the policy and the algorithm; a
    dataset that does not fit the spaces is a one-line error.

    >>> import gymnasium as gym
    >>> alg = build(DiscreteBCQPreset(hidden_sizes=(8, 8)), gym.spaces.Box(-1, 1, (4,)),
    ...             gym.spaces.Discrete(2))
    >>> type(alg).__name__, alg.n_step, alg.policy.model[0] is alg.policy.imitator[0]
    ('DiscreteBCQ', 3, True)
    """
    from tdrl.algorithm.imitation.discrete_bcq import DiscreteBCQ, DiscreteBCQPolicy

    model, imitator = common.shared_first_layer(
        *common.offline_dims(dataset, observation_space, action_space), p.hidden_sizes
    )
    policy = DiscreteBCQPolicy(
        model=model,
        imitator=imitator,
        action_space=action_space,
        observation_space=observation_space,
        unlikely_action_threshold=p.unlikely_action_threshold,
        eps_inference=p.eps_test,
    )
    return DiscreteBCQ(
        policy=policy,
        **common.q_learning_args(p),
        imitation_logits_penalty=p.imitation_logits_penalty,
    )


register_classic(
    __name__,
    DiscreteBCQPreset(),
    trainer="offline",
    exploration_noise=True,  # eps_test random actions when testing
    action_space="discrete",
)
