"""Playing policies on held-out maps (``evaluation/play.py``), comparing reports, one ablation run
and its tables, and means with 95% confidence intervals. Never imports the planner or Ray."""
