"""Shared test fixtures: random padded graphs in the observation layout."""
from __future__ import annotations

import pytest

from bench.synthetic import random_graph

HEAD_COUNTS = [1, 2, 4, 8]


@pytest.fixture
def make_graph():
    return random_graph
