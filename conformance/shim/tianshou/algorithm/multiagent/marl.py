"""``tianshou.algorithm.multiagent.marl`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.multiagent.marl",
    {
        "MultiAgentOffPolicyAlgorithm": "tdrl.algorithm:MultiAgentOffPolicyAlgorithm",
        "MultiAgentOnPolicyAlgorithm": "tdrl.algorithm:MultiAgentOnPolicyAlgorithm",
    },
)
