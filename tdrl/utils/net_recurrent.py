"""A recurrent Q-network for DRQN: embed each frame, run an LSTM over the frames, read Q
from the last output.

The network takes either a single step ``[B, obs_dim]`` (acting: the collector passes the
hidden state carried from the previous step and gets the new one back) or a sequence
``[B, T, obs_dim]`` (learning: the ``T = stack_num`` most recent observations that a
replay buffer built with ``stack_num`` returns, oldest first, run from a zero state)::

    x_t        = W_in o_t + b_in                        (every frame, no activation)
    h_t, c_t   = LSTM(x_t, (h_{t-1}, c_{t-1}))          (num_layers stacked cells)
    Q(., a)    = W_out h_T + b_out                      (the last frame's top-layer output)

The hidden state is one tensor ``[B, 2, num_layers, hidden_size]``: the LSTM's ``hidden``
(``[:, 0]``) and ``cell`` (``[:, 1]``) batch first, so that the collector indexes,
overwrites and zeroes it per env as a plain tensor; it is returned detached. A mapping
with ``hidden`` and ``cell`` ``[B, num_layers, hidden_size]`` (Tianshou's ``Recurrent``
state) is accepted as input too.

>>> net = RecurrentQNet(4, 2, hidden_size=8)
>>> q, state = net(torch.zeros(3, 4))                 # one step, zero initial state
>>> q.shape, state.shape                    # [B, (hidden, cell), num_layers, hidden_size]
(torch.Size([3, 2]), torch.Size([3, 2, 1, 8]))
>>> q2, _ = net(torch.zeros(3, 4), state=state)       # the next step, carrying the state
>>> net(torch.zeros(3, 5, 4))[0].shape                # a stack of 5 frames per sample
torch.Size([3, 2])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from tdrl.utils.net import flat_dim

__all__ = ["RecurrentQNet"]


class RecurrentQNet(nn.Module):
    """Linear frame embedding, an LSTM over the frames, a linear Q head on its last output.

    :param obs_shape: observation shape (or its flat size); each frame is flattened.
    :param n_actions: number of actions (the Q head's width); a shape is flattened.
    :param hidden_size: width of the embedding and of every LSTM layer.
    :param num_layers: stacked LSTM layers.

    ``forward(obs, state=None, info=None) -> (q [B, n_actions], new state)``: ``obs`` is
    ``[B, obs_dim]`` (one step) or ``[B, T, obs_dim]`` (frames oldest first); ``state`` is
    ``None`` (zeros), a ``[B, 2, num_layers, hidden_size]`` tensor (the returned state)
    or a mapping with ``hidden`` and ``cell`` ``[B, num_layers, hidden_size]``.

    >>> net = RecurrentQNet((4,), 3, hidden_size=16, num_layers=2)
    >>> [name for name, _ in net.named_children()]
    ['embed', 'lstm', 'head']
    >>> net(torch.zeros(2, 4), state={"hidden": torch.zeros(2, 1, 16)})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: state: expected a [B, 2, num_layers, hidden_size] tensor ... got ['hidden']
    """

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        n_actions: int | Sequence[int],
        hidden_size: int = 128,
        num_layers: int = 1,
    ) -> None:
        if int(hidden_size) < 1:
            raise ValueError(f"hidden_size: expected an int >= 1, got {hidden_size!r}")
        if int(num_layers) < 1:
            raise ValueError(f"num_layers: expected an int >= 1, got {num_layers!r}")
        super().__init__()
        self.obs_dim = flat_dim(obs_shape)
        self.n_actions = flat_dim(n_actions)
        self.hidden_size = int(hidden_size)
        self.num_layers = int(num_layers)
        self.embed = nn.Linear(self.obs_dim, self.hidden_size)
        self.lstm = nn.LSTM(
            self.hidden_size, self.hidden_size, num_layers=self.num_layers, batch_first=True
        )
        self.head = nn.Linear(self.hidden_size, self.n_actions)

    def forward(
        self,
        obs: Any,
        state: torch.Tensor | Mapping[str, torch.Tensor] | None = None,
        info: Any = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Q-values of the last frame and the detached ``(hidden, cell)`` state after it."""
        weight = self.embed.weight
        x = torch.as_tensor(obs, device=weight.device).to(weight.dtype)
        batch = x.shape[0]
        # [B, obs...] is one step, [B, T, obs...] a sequence of T flattened frames
        frame = x.shape[1:].numel()
        if frame % self.obs_dim:
            raise ValueError(
                f"obs: expected [B, {self.obs_dim}] or [B, T, {self.obs_dim}] (frames "
                f"flattened), got {tuple(x.shape)}"
            )
        x = x.reshape(batch, frame // self.obs_dim, self.obs_dim)
        hc: tuple[torch.Tensor, torch.Tensor] | None = None
        if isinstance(state, torch.Tensor):
            hidden, cell = state.unbind(1)
        elif state is not None:
            if not hasattr(state, "keys") or not {"hidden", "cell"} <= set(state.keys()):
                keys = sorted(state.keys()) if hasattr(state, "keys") else type(state).__name__
                raise ValueError(
                    "state: expected a [B, 2, num_layers, hidden_size] tensor or a mapping "
                    f"with 'hidden' and 'cell', got {keys}"
                )
            hidden, cell = state["hidden"], state["cell"]
        if state is not None:
            # stored batch first; torch's LSTM wants [num_layers, B, H]
            hc = (hidden.transpose(0, 1).contiguous(), cell.transpose(0, 1).contiguous())
        out, (h, c) = self.lstm(self.embed(x), hc)
        q = self.head(out[:, -1])
        return q, torch.stack([h, c]).permute(2, 0, 1, 3).detach()
