"""Model-free algorithms: DQN, PPO, SAC."""

from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy, ProbabilisticActorPolicy
from tdrl.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy

__all__ = [
    "DQN",
    "PPO",
    "SAC",
    "ActorPolicy",
    "AutoAlpha",
    "DQNPolicy",
    "ProbabilisticActorPolicy",
    "SACPolicy",
]
