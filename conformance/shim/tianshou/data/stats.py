"""``tianshou.data.stats`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.data.stats",
    {
        "InfoStats": "tdrl.trainer:TrainResult",
        "CollectStats": "tdrl.data:CollectStats",
        "SequenceSummaryStats": "tdrl.data:SequenceSummaryStats",
    },
)
