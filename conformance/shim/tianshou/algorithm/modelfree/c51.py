"""``tianshou.algorithm.modelfree.c51`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelfree.c51",
    {
        "C51": "tdrl.algorithm:C51",
        "C51Policy": "tdrl.algorithm:C51Policy",
    },
)
