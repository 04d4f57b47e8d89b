"""Tianshou 2.0's network classes (``tianshou.utils.net``) with its constructor keywords.

Scripts written for Tianshou build their networks with keyword signatures such as
``Net(state_shape=..., action_shape=..., hidden_sizes=...)`` and
``DiscreteActor(preprocess_net=..., action_shape=...)``, and call them with Tianshou's
contract ``forward(obs, state=None, info=None) -> (output, state)``. The classes here take
the same keywords, follow the same contract, register their parameters under the same
names (so a Tianshou ``state_dict`` loads into them) and drop into tdrl's policies:

* :mod:`.common`: ``MLP``, ``Net``, ``Recurrent``, ``BranchingNet``, ``EnsembleLinear``,
  ``ActorCritic``, ``ModuleWithVectorOutput`` and the abstract bases;
* :mod:`.discrete`: ``DiscreteActor``, ``DiscreteCritic``, ``NoisyLinear``, the IQN/FQF
  quantile networks, ``IntrinsicCuriosityModule``;
* :mod:`.continuous`: ``ContinuousActorProbabilistic``, ``ContinuousActorDeterministic``,
  ``ContinuousCritic``, ``RecurrentActorProb``, ``RecurrentCritic``, ``VAE``,
  ``Perturbation``.

tdrl's own positional builders (:mod:`tdrl.utils.net`) are unrelated and unchanged.

>>> from tdrl.utils.tianshou_net.common import Net
>>> from tdrl.utils.tianshou_net.discrete import DiscreteActor
>>> actor = DiscreteActor(preprocess_net=Net(state_shape=4, hidden_sizes=[8]), action_shape=2)
>>> probs, state = actor(torch.zeros(3, 4))
>>> probs.shape, state is None
(torch.Size([3, 2]), True)
"""

from __future__ import annotations

import torch  # noqa: F401  (the doctest above uses it)

__all__: list[str] = []
