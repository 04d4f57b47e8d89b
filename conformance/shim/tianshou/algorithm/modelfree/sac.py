"""``tianshou.algorithm.modelfree.sac`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelfree.sac",
    {
        "SAC": "tdrl.algorithm:SAC",
        "SACPolicy": "tdrl.algorithm:SACPolicy",
        "AutoAlpha": "tdrl.algorithm:AutoAlpha",
        "SACTrainingStats": "tdrl.algorithm:SACTrainingStats",
    },
)
