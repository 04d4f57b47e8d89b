"""``tianshou.algorithm.modelbased.psrl`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelbased.psrl",
    {
        "PSRL": "tdrl.algorithm:PSRL",
        "PSRLPolicy": "tdrl.algorithm:PSRLPolicy",
    },
)
