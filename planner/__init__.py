"""The planner layer: the map predictor, lookahead play-outs, the planning actor, imitation of the
lookahead, their world copies and pictures. Built on the core; nothing in the core imports it."""
