"""``tianshou.data`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.data",
    {
        "Batch": "tdrl.data:Batch",
        "ReplayBuffer": "tdrl.data:ReplayBuffer",
        "VectorReplayBuffer": "tdrl.data:VectorReplayBuffer",
        "CachedReplayBuffer": "tdrl.data:CachedReplayBuffer",
        "PrioritizedReplayBuffer": "tdrl.data:PrioritizedReplayBuffer",
        "PrioritizedVectorReplayBuffer": "tdrl.data:PrioritizedVectorReplayBuffer",
        "HERReplayBuffer": "tdrl.data:HERReplayBuffer",
        "HERVectorReplayBuffer": "tdrl.data:HERVectorReplayBuffer",
        "SegmentTree": "tdrl.data:SegmentTree",
        "Collector": "tdrl.data:Collector",
        "AsyncCollector": "tdrl.data:AsyncCollector",
        "CollectStats": "tdrl.data:CollectStats",
        "InfoStats": "tdrl.trainer:TrainResult",
        "SequenceSummaryStats": "tdrl.data:SequenceSummaryStats",
        "to_numpy": "tdrl.data:to_numpy",
        "to_torch": "tdrl.data:to_torch",
        "to_torch_as": "tdrl.data:to_torch_as",
        "to_hdf5": "tdrl.data:to_hdf5",
        "from_hdf5": "tdrl.data:from_hdf5",
    },
)
