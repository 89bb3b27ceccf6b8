"""Speed benchmarks a user reruns (``make bench``; ``python -m bench.NAME``): each prints ratios
against a peer timed in the same run. Research measurements live in ``experiments/``."""
