"""``tianshou.algorithm.modelfree.redq`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelfree.redq",
    {
        "REDQ": "tdrl.algorithm:REDQ",
        "REDQPolicy": "tdrl.algorithm:REDQPolicy",
    },
)
