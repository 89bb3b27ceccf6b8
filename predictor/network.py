"""A U-Net that guesses, from a belief map, which of its unknown cells are walls.

The robot's belief holds three kinds of cell, coded as in ``env.sensing``: 0 unknown, 1 known
free, 2 known occupied. Floor plans repeat their shapes (walls run straight, rooms are boxes,
corridors keep their width), so the known part says something about the cells just past it;
``env.lookahead.imagined_costs`` plays greedy ahead in a world that holds such a guess.

Shapes (B maps of H x W cells, w = ``width``)::

    belief [B, H, W] int  --one-hot-->  [B, 3, H, W]
    e1 = block(3 -> w)          [B, w,  H,   W  ]   two 3x3 convolutions, ReLU after each
    e2 = block(w -> 2w)         [B, 2w, H/2, W/2]   after a 2x2 max-pool
    e3 = block(2w -> 2w, dil 2) [B, 2w, H/4, W/4]   dilated: a receptive field of over 40 cells
    d2 = block(4w -> 2w)        [B, 2w, H/2, W/2]   e3 upsampled (nearest), beside e2
    d1 = block(3w -> w)         [B, w,  H,   W  ]   d2 upsampled, beside e1
    logits = 1x1 conv(w -> 1)   [B, H, W]           logit of "occupied", for every cell

The logits are read only where the belief is unknown; the rest is known.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

BELIEF_CODES = 3
"""Unknown, free, occupied: ``env.sensing``'s codes 0, 1, 2 (tests/test_map_prediction.py holds them equal)."""


def _block(inputs: int, outputs: int, dilation: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(inputs, outputs, 3, padding=dilation, dilation=dilation), nn.ReLU(),
                         nn.Conv2d(outputs, outputs, 3, padding=dilation, dilation=dilation), nn.ReLU())


class MapPredictor(nn.Module):
    """belief [B, H, W] (codes 0 / 1 / 2) -> [B, H, W] logits that each cell is occupied."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        if width < 1:
            raise ValueError(f"width={width}: the predictor needs at least 1 channel")
        self.width = width
        self.e1, self.e2, self.e3 = _block(BELIEF_CODES, width), _block(width, 2 * width), _block(2 * width, 2 * width, 2)
        self.d2, self.d1 = _block(4 * width, 2 * width), _block(3 * width, width)
        self.out = nn.Conv2d(width, 1, 1)

    def forward(self, belief: Tensor) -> Tensor:
        x = F.one_hot(belief.long(), BELIEF_CODES).permute(0, 3, 1, 2).float()
        e1 = self.e1(x)
        e2 = self.e2(F.max_pool2d(e1, 2))
        e3 = self.e3(F.max_pool2d(e2, 2))
        d2 = self.d2(torch.cat([F.interpolate(e3, size=e2.shape[-2:]), e2], dim=1))
        d1 = self.d1(torch.cat([F.interpolate(d2, size=e1.shape[-2:]), e1], dim=1))
        return self.out(d1)[:, 0]

    @torch.no_grad()
    def wall_probability(self, belief: np.ndarray) -> np.ndarray:
        """[H, W] float32: the probability that each cell of one belief map ([H, W] codes) is a
        wall (meaningful where the belief is unknown)."""
        return torch.sigmoid(self(torch.from_numpy(np.ascontiguousarray(belief))[None]))[0].numpy()
