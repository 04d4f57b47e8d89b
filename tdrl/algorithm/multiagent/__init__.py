"""Multi-agent RL: a policy manager that routes each agent's observations to its own policy,
independent per-agent learners, and a collector that stores each agent's own transitions.

See ``docs/multiagent.md``; the environments are in :mod:`tdrl.env.pettingzoo`.

>>> from tdrl.algorithm.multiagent import MultiAgentOffPolicyAlgorithm, MultiAgentCollector
>>> MultiAgentOffPolicyAlgorithm.__mro__[1].__name__
'Algorithm'
"""

from tdrl.algorithm.multiagent.collector import MultiAgentCollector, MultiAgentCollectStats
from tdrl.algorithm.multiagent.manager import MultiAgentPolicyManager, RandomPolicy
from tdrl.algorithm.multiagent.marl import (
    MARLRandomDiscreteMaskedOffPolicyAlgorithm,
    MultiAgentBuffer,
    MultiAgentOffPolicyAlgorithm,
    MultiAgentOnPolicyAlgorithm,
)

__all__ = [
    "MARLRandomDiscreteMaskedOffPolicyAlgorithm",
    "MultiAgentBuffer",
    "MultiAgentCollectStats",
    "MultiAgentCollector",
    "MultiAgentOffPolicyAlgorithm",
    "MultiAgentOnPolicyAlgorithm",
    "MultiAgentPolicyManager",
    "RandomPolicy",
]
