"""``tianshou.algorithm.modelfree.fqf`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelfree.fqf",
    {
        "FQF": "tdrl.algorithm:FQF",
        "FQFPolicy": "tdrl.algorithm:FQFPolicy",
    },
)
