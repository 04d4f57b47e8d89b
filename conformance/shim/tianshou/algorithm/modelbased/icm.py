"""``tianshou.algorithm.modelbased.icm`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelbased.icm",
    {
        "ICMOffPolicyWrapper": "tdrl.algorithm:ICMOffPolicyWrapper",
        "ICMOnPolicyWrapper": "tdrl.algorithm:ICMOnPolicyWrapper",
    },
)
