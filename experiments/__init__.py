"""The research scripts behind docs/results.md's figures (``python -m experiments.NAME``): one-off
measurements, kept so every figure can be rerun. Speed benchmarks live in ``bench/``."""
