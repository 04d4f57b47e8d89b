"""``tianshou.algorithm.modelfree.bdqn`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelfree.bdqn",
    {
        "BDQN": "tdrl.algorithm:BDQN",
        "BDQNPolicy": "tdrl.algorithm:BDQNPolicy",
    },
)
