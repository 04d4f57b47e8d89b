"""Trainers: the on-policy, off-policy and offline training loops."""

from tdrl.trainer.base import BaseTrainer, TrainingInterrupted
from tdrl.trainer.offline import OfflineTrainer
from tdrl.trainer.online import OffPolicyTrainer, OnlineTrainer, OnPolicyTrainer
from tdrl.trainer.params import (
    OfflineTrainerParams,
    OffPolicyTrainerParams,
    OnlineTrainerParams,
    OnPolicyTrainerParams,
    TrainerParams,
    run_training,
)
from tdrl.trainer.result import TrainingTiming, TrainResult

__all__ = [
    "BaseTrainer",
    "OffPolicyTrainer",
    "OffPolicyTrainerParams",
    "OfflineTrainer",
    "OfflineTrainerParams",
    "OnPolicyTrainer",
    "OnPolicyTrainerParams",
    "OnlineTrainer",
    "OnlineTrainerParams",
    "TrainResult",
    "TrainerParams",
    "TrainingInterrupted",
    "TrainingTiming",
    "run_training",
]
