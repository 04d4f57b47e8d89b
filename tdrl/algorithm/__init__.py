"""Algorithms (TorchRL loss modules that own their optimizers) and their policies.

Names are loaded lazily, so ``import tdrl.algorithm.returns`` does not import TorchRL
(whose import switches multiprocessing to ``spawn``).

>>> from tdrl.algorithm import DQN, Algorithm
>>> issubclass(DQN, Algorithm)
True
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AdamOptimizerFactory": "tdrl.algorithm.optim",
    "LRSchedulerFactory": "tdrl.algorithm.optim",
    "LRSchedulerFactoryLinear": "tdrl.algorithm.optim",
    "RMSpropOptimizerFactory": "tdrl.algorithm.optim",
    "TorchOptimizerFactory": "tdrl.algorithm.optim",
    "Algorithm": "tdrl.algorithm.algorithm_base",
    "OptimizerFactory": "tdrl.algorithm.optim",
    "Policy": "tdrl.algorithm.policy",
    "within_training_step": "tdrl.algorithm.policy",
    "weighted_mean": "tdrl.algorithm.loss_keys",
    "DQN": "tdrl.algorithm.modelfree.dqn",
    "DQNPolicy": "tdrl.algorithm.modelfree.dqn",
    "PPO": "tdrl.algorithm.modelfree.ppo",
    "ActorPolicy": "tdrl.algorithm.policy_gradient",
    "ProbabilisticActorPolicy": "tdrl.algorithm.policy_gradient",
    "OnPolicyAlgorithm": "tdrl.algorithm.policy_gradient",
    "OffPolicyActorCritic": "tdrl.algorithm.actor_critic",
    "ContinuousDeterministicPolicy": "tdrl.algorithm.actor_critic",
    "QLearningAlgorithm": "tdrl.algorithm.qlearning",
    "QLearningPolicy": "tdrl.algorithm.qlearning",
    "Stage": "tdrl.algorithm.optim",
    "GradStep": "tdrl.algorithm.optim",
    "make_batch": "tdrl.algorithm.policy",
    "call_model": "tdrl.algorithm.policy",
    "SAC": "tdrl.algorithm.modelfree.sac",
    "A2C": "tdrl.algorithm.modelfree.a2c",
    "Reinforce": "tdrl.algorithm.modelfree.reinforce",
    "NPG": "tdrl.algorithm.modelfree.npg",
    "TRPO": "tdrl.algorithm.modelfree.trpo",
    "DDPG": "tdrl.algorithm.modelfree.ddpg",
    "DeterministicActorCritic": "tdrl.algorithm.actor_critic",
    "TD3": "tdrl.algorithm.modelfree.td3",
    "REDQ": "tdrl.algorithm.modelfree.redq",
    "REDQPolicy": "tdrl.algorithm.modelfree.redq",
    "DiscreteSAC": "tdrl.algorithm.modelfree.discrete_sac",
    "DiscreteSACPolicy": "tdrl.algorithm.modelfree.discrete_sac",
    "C51": "tdrl.algorithm.modelfree.c51",
    "C51Policy": "tdrl.algorithm.modelfree.c51",
    "QRDQN": "tdrl.algorithm.modelfree.qrdqn",
    "QRDQNPolicy": "tdrl.algorithm.modelfree.qrdqn",
    "IQN": "tdrl.algorithm.modelfree.iqn",
    "IQNPolicy": "tdrl.algorithm.modelfree.iqn",
    "FQF": "tdrl.algorithm.modelfree.fqf",
    "FQFPolicy": "tdrl.algorithm.modelfree.fqf",
    "Rainbow": "tdrl.algorithm.modelfree.rainbow",
    "DRQN": "tdrl.algorithm.modelfree.drqn",
    "DRQNPolicy": "tdrl.algorithm.modelfree.drqn",
    "BDQN": "tdrl.algorithm.modelfree.bdqn",
    "BDQNPolicy": "tdrl.algorithm.modelfree.bdqn",
    "RainbowPolicy": "tdrl.algorithm.modelfree.rainbow",
    "SACPolicy": "tdrl.algorithm.modelfree.sac",
    "AutoAlpha": "tdrl.algorithm.actor_critic",
    "categorical_projection": "tdrl.algorithm.distributional",
    "categorical_support": "tdrl.algorithm.distributional",
    "quantile_huber_loss": "tdrl.algorithm.distributional",
    "quantile_midpoints": "tdrl.algorithm.distributional",
    "quantile_priority": "tdrl.algorithm.distributional",
    "GaussianNoise": "tdrl.algorithm.exploration",
    "OUNoise": "tdrl.algorithm.exploration",
    "LinearSchedule": "tdrl.algorithm.exploration",
    "ExponentialSchedule": "tdrl.algorithm.exploration",
    "PiecewiseLinearSchedule": "tdrl.algorithm.exploration",
    "BC": "tdrl.algorithm.imitation.bc",
    "ImitationPolicy": "tdrl.algorithm.imitation.bc",
    "TD3BC": "tdrl.algorithm.imitation.td3_bc",
    "TD3BCPolicy": "tdrl.algorithm.imitation.td3_bc",
    "IQL": "tdrl.algorithm.imitation.iql",
    "DiscreteBCQ": "tdrl.algorithm.imitation.discrete_bcq",
    "DiscreteBCQPolicy": "tdrl.algorithm.imitation.discrete_bcq",
    "DiscreteCQL": "tdrl.algorithm.imitation.discrete_cql",
    "DiscreteCRR": "tdrl.algorithm.imitation.discrete_crr",
    "DiscreteCRRPolicy": "tdrl.algorithm.imitation.discrete_crr",
    "BCQ": "tdrl.algorithm.imitation.bcq",
    "BCQPolicy": "tdrl.algorithm.imitation.bcq",
    "CQL": "tdrl.algorithm.imitation.cql",
    "GAIL": "tdrl.algorithm.imitation.gail",
    "PSRL": "tdrl.algorithm.modelbased.psrl",
    "PSRLPolicy": "tdrl.algorithm.modelbased.psrl",
    "ICM": "tdrl.algorithm.modelbased.icm",
    "IntrinsicCuriosityModule": "tdrl.algorithm.modelbased.icm",
    "MultiAgentOffPolicyAlgorithm": "tdrl.algorithm.multiagent",
    "MultiAgentPolicyManager": "tdrl.algorithm.multiagent",
    "MultiAgentCollector": "tdrl.algorithm.multiagent",
    "MultiAgentOnPolicyAlgorithm": "tdrl.algorithm.multiagent",
    "MARLRandomDiscreteMaskedOffPolicyAlgorithm": "tdrl.algorithm.multiagent",
    "RandomActionPolicy": "tdrl.algorithm.random_policy",
    "RandomActor": "tdrl.algorithm.random_policy",
    "TrainingStats": "tdrl.algorithm.training_stats",
    "TrainingStatsWrapper": "tdrl.algorithm.training_stats",
    "compute_episodic_return": "tdrl.algorithm.returns",
    "compute_nstep_return": "tdrl.algorithm.returns",
}

ALIASES = {
    "DiscreteQLearningPolicy": "DQNPolicy",
    "RainbowDQN": "Rainbow",
    "DiscreteActorPolicy": "ActorPolicy",
    "OfflineImitationLearning": "BC",
    "OffPolicyImitationLearning": "BC",
    "ICMOffPolicyWrapper": "ICM",
    "ICMOnPolicyWrapper": "ICM",
}
"""Tianshou 2.0 names whose tdrl class has another name (the same object)."""

__all__ = sorted([*_EXPORTS, *ALIASES])


def __getattr__(name: str) -> Any:
    """Import an exported name (or a Tianshou 2.0 alias, :data:`ALIASES`) on first access.

    >>> import tdrl.algorithm as A
    >>> A.DiscreteQLearningPolicy is A.DQNPolicy, A.RainbowDQN is A.Rainbow
    (True, True)
    """
    name = ALIASES.get(name, name)
    if name not in _EXPORTS:
        raise AttributeError(f"module 'tdrl.algorithm' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
