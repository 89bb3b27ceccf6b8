"""A trained agent on a robot: a belief map and a pose in, the next waypoint out (``Explorer``).
Above the core and the evaluation's loading; the planner only where asked for and present."""
from explorer.explorer import Explorer, Waypoint, belief_from_occupancy_grid

__all__ = ["Explorer", "Waypoint", "belief_from_occupancy_grid"]
