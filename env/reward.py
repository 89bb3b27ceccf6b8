"""The reward, defined once. Every other module imports :func:`step_reward`."""
from __future__ import annotations

import math

INFO_WEIGHT = 1.0
"""Weight of the new-information term (already normalised to about [0, 1])."""
TRAVEL_WEIGHT = 0.1
"""Cost of travelling one node spacing."""
COMPLETION_BONUS = 5.0
"""Paid once, on the step that leaves no reachable frontier."""
INVALID_ACTION_PENALTY = 0.5
"""Paid for choosing a masked slot (the robot stays put)."""


def information_normaliser(sensor_range: int, node_spacing: int) -> float:
    """Roughly the most cells one hop can reveal: a sensor disc swept along a diagonal hop."""
    return math.pi * sensor_range**2 + 2 * sensor_range * node_spacing * math.sqrt(2)


def step_reward(new_cells: int, distance: float, completed: bool, invalid: bool, *,
                sensor_range: int, node_spacing: int) -> float:
    """Reward of one step.

    .. math::

        r = w_{info} \\frac{\\Delta_{known}}{\\pi R^2 + 2 R s \\sqrt{2}}
            - w_{travel} \\frac{d}{s} + B \\, [\\text{completed}] - P \\, [\\text{invalid}]

    ``new_cells`` (Δ_known) is how many cells became known this step, ``distance`` (d) the cells
    travelled, R the sensor range, s the node spacing. With the defaults w_info = 1,
    w_travel = 0.1, B = 5, P = 0.5, an ordinary step lies in about [-0.15, 1] and the completion
    bonus dominates the last step, as in the reference's "finish" reward.
    """
    info = INFO_WEIGHT * new_cells / information_normaliser(sensor_range, node_spacing)
    travel = TRAVEL_WEIGHT * distance / node_spacing
    return float(info - travel + COMPLETION_BONUS * completed - INVALID_ACTION_PENALTY * invalid)
