"""``tianshou.exploration`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.exploration",
    {
        "GaussianNoise": "tdrl.algorithm.exploration:GaussianNoise",
        "OUNoise": "tdrl.algorithm.exploration:OUNoise",
    },
)
