"""Exploration gridworld (numpy only). Importing this package registers the gymnasium ids.

``GridExplore-v0`` draws a procedural family per episode; ``GridExplore-<Family>-v0`` fixes one.
Any :class:`env.settings.GridExploreConfig` field can be overridden through ``gymnasium.make``.
"""
from gymnasium.envs.registration import register, registry

ENTRY_POINT = "env.grid_explore:GridExploreEnv"
ENV_IDS = {
    "GridExplore-v0": "mixed",
    "GridExplore-Rooms-v0": "rooms",
    "GridExplore-Caves-v0": "caves",
    "GridExplore-Maze-v0": "maze",
    "GridExplore-Obstacles-v0": "obstacles",
}

for _env_id, _family in ENV_IDS.items():
    # Guarded so that re-importing (e.g. in a worker process) does not warn about overrides.
    if _env_id not in registry:
        register(id=_env_id, entry_point=ENTRY_POINT, kwargs={"map_family": _family})
