"""``tianshou.algorithm.imitation.bcq`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.imitation.bcq",
    {
        "BCQ": "tdrl.algorithm:BCQ",
        "BCQPolicy": "tdrl.algorithm:BCQPolicy",
    },
)
