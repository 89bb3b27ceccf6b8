"""A U-Net that guesses, from a belief map, which of its unknown cells are walls.

The robot's belief holds three kinds of cell, coded as in ``env.sensing``: 0 unknown, 1 known
free, 2 known occupied. Floor plans repeat their shapes (walls run straight, rooms are boxes,
corridors keep their width), so the known part says something about the cells just past it;
``planner.lookahead.imagined_costs`` plays greedy ahead in a world that holds such a guess.

Shapes (B maps of H x W cells, w = ``width``, ``depth`` 3, the default)::

    belief [B, H, W] int  --one-hot-->  [B, 3, H, W]
    e1 = block(3 -> w)          [B, w,  H,   W  ]   two 3x3 convolutions, ReLU after each
    e2 = block(w -> 2w)         [B, 2w, H/2, W/2]   after a 2x2 max-pool
    e3 = block(2w -> 2w, dil 2) [B, 2w, H/4, W/4]   dilated: a logit reads about 30 cells each way
    d2 = block(4w -> 2w)        [B, 2w, H/2, W/2]   e3 upsampled (nearest), beside e2
    d1 = block(3w -> w)         [B, w,  H,   W  ]   d2 upsampled, beside e1
    logits = 1x1 conv(w -> 1)   [B, H, W]           logit of "occupied", for every cell

A ``depth`` of L has levels e1 .. eL (each after a 2x2 max-pool but the first; 2w channels from
e2 on; only the deepest dilated) and d(L-1) .. d1 back up: ``depth`` 4 adds e4 at H/8 and d3,
and a cell's logit reads about 60 cells each way instead of 30, most of an 80 x 60 floor plan
(a map needs at least 2^(L-1) cells a side). The logits are read only where the
belief is unknown; the rest is known.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

BELIEF_CODES = 3
"""Unknown, free, occupied: ``env.sensing``'s codes 0, 1, 2 (tests/planner/test_train_predictor.py holds them equal)."""


def _block(inputs: int, outputs: int, dilation: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(inputs, outputs, 3, padding=dilation, dilation=dilation), nn.ReLU(),
                         nn.Conv2d(outputs, outputs, 3, padding=dilation, dilation=dilation), nn.ReLU())


class MapPredictor(nn.Module):
    """belief [B, H, W] (codes 0 / 1 / 2) -> [B, H, W] logits that each cell is occupied."""

    def __init__(self, width: int = 16, depth: int = 3) -> None:
        super().__init__()
        if width < 1:
            raise ValueError(f"width={width}: the predictor needs at least 1 channel")
        if depth < 2:
            raise ValueError(f"depth={depth}: the U-Net needs at least 2 levels")
        self.width, self.depth = width, depth
        channels = [width] + [2 * width] * (depth - 1)  # of levels 1 .. depth
        for level in range(1, depth + 1):
            inputs = BELIEF_CODES if level == 1 else channels[level - 2]
            self.add_module(f"e{level}", _block(inputs, channels[level - 1], dilation=2 if level == depth else 1))
        for level in range(depth - 1, 0, -1):  # d(L-1) .. d1: the level below, upsampled, beside e(level)
            self.add_module(f"d{level}", _block(channels[level] + channels[level - 1], channels[level - 1]))
        self.out = nn.Conv2d(width, 1, 1)

    def forward(self, belief: Tensor) -> Tensor:
        if min(belief.shape[-2:]) < 2 ** (self.depth - 1):
            raise ValueError(f"a belief of {tuple(belief.shape[-2:])} cells: a predictor of depth {self.depth} "
                             f"halves it {self.depth - 1} times, so it needs at least {2 ** (self.depth - 1)} a side")
        x = F.one_hot(belief.long(), BELIEF_CODES).permute(0, 3, 1, 2).float()
        skips = [self.e1(x)]  # the outputs of e1 .. eL
        for level in range(2, self.depth + 1):
            skips.append(getattr(self, f"e{level}")(F.max_pool2d(skips[-1], 2)))
        x = skips.pop()
        for level in range(self.depth - 1, 0, -1):
            skip = skips.pop()
            x = getattr(self, f"d{level}")(torch.cat([F.interpolate(x, size=skip.shape[-2:]), skip], dim=1))
        return self.out(x)[:, 0]

    @torch.no_grad()
    def wall_probability(self, belief: np.ndarray) -> np.ndarray:
        """[H, W] float32: the probability that each cell of one belief map ([H, W] codes) is a
        wall (meaningful where the belief is unknown)."""
        return torch.sigmoid(self(torch.from_numpy(np.ascontiguousarray(belief))[None]))[0].numpy()
