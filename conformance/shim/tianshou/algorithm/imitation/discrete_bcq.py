"""``tianshou.algorithm.imitation.discrete_bcq`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.imitation.discrete_bcq",
    {
        "DiscreteBCQ": "tdrl.algorithm:DiscreteBCQ",
        "DiscreteBCQPolicy": "tdrl.algorithm:DiscreteBCQPolicy",
    },
)
