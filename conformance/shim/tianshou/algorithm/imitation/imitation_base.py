"""``tianshou.algorithm.imitation.imitation_base`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.imitation.imitation_base",
    {
        "ImitationPolicy": "tdrl.algorithm:ImitationPolicy",
        "OffPolicyImitationLearning": "tdrl.algorithm:OffPolicyImitationLearning",
        "OfflineImitationLearning": "tdrl.algorithm:OfflineImitationLearning",
    },
)
