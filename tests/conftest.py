"""Shared pytest configuration."""

import os

import torch

os.environ.setdefault("RL_WARNINGS", "0")
os.environ.setdefault("WANDB_MODE", "offline")
torch.set_num_threads(1)
