"""``tianshou.data.collector`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.data.collector",
    {
        "Collector": "tdrl.data:Collector",
        "AsyncCollector": "tdrl.data:AsyncCollector",
        "CollectStats": "tdrl.data:CollectStats",
        "StepHook": "tdrl.data:StepHook",
        "EpisodeRolloutHook": "tdrl.data:EpisodeRolloutHook",
        "EpisodeRolloutHookMCReturn": "tdrl.data:EpisodeRolloutHookMCReturn",
        "get_stddev_from_dist": "tdrl.data:distribution_std",
    },
)
