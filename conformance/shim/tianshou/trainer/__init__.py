"""``tianshou.trainer`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.trainer",
    {
        "OffPolicyTrainerParams": "tdrl.trainer:OffPolicyTrainerParams",
        "OnPolicyTrainerParams": "tdrl.trainer:OnPolicyTrainerParams",
        "OfflineTrainerParams": "tdrl.trainer:OfflineTrainerParams",
        "TrainerParams": "tdrl.trainer:TrainerParams",
        "OnlineTrainerParams": "tdrl.trainer:OnlineTrainerParams",
        "OffPolicyTrainer": "tdrl.trainer:OffPolicyTrainer",
        "OnPolicyTrainer": "tdrl.trainer:OnPolicyTrainer",
        "OfflineTrainer": "tdrl.trainer:OfflineTrainer",
    },
)
