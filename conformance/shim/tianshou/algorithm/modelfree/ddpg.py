"""``tianshou.algorithm.modelfree.ddpg`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelfree.ddpg",
    {
        "DDPG": "tdrl.algorithm:DDPG",
        "ContinuousDeterministicPolicy": "tdrl.algorithm:ContinuousDeterministicPolicy",
    },
)
