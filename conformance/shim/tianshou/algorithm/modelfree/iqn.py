"""``tianshou.algorithm.modelfree.iqn`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelfree.iqn",
    {
        "IQN": "tdrl.algorithm:IQN",
        "IQNPolicy": "tdrl.algorithm:IQNPolicy",
    },
)
