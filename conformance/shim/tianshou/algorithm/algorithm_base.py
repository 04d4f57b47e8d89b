"""``tianshou.algorithm.algorithm_base`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.algorithm_base",
    {
        "Algorithm": "tdrl.algorithm:Algorithm",
        "Policy": "tdrl.algorithm:Policy",
        "episode_mc_return_to_go": "tdrl.data:episode_mc_return_to_go",
        "OnPolicyAlgorithm": "tdrl.algorithm:OnPolicyAlgorithm",
        "OffPolicyAlgorithm": "tdrl.algorithm:OffPolicyAlgorithm",
        "OfflineAlgorithm": "tdrl.algorithm:OfflineAlgorithm",
        "RandomActionPolicy": "tdrl.algorithm:RandomActionPolicy",
        "TrainingStats": "tdrl.algorithm:TrainingStats",
        "TrainingStatsWrapper": "tdrl.algorithm:TrainingStatsWrapper",
    },
)
