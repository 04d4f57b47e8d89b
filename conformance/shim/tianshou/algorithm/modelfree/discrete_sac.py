"""``tianshou.algorithm.modelfree.discrete_sac`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelfree.discrete_sac",
    {
        "DiscreteSAC": "tdrl.algorithm:DiscreteSAC",
        "DiscreteSACPolicy": "tdrl.algorithm:DiscreteSACPolicy",
    },
)
