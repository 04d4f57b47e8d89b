"""``tianshou.algorithm.modelfree.qrdqn`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelfree.qrdqn",
    {
        "QRDQN": "tdrl.algorithm:QRDQN",
        "QRDQNPolicy": "tdrl.algorithm:QRDQNPolicy",
    },
)
