"""A local Ray for the tests of this folder: 2 CPUs on this machine, started once per module."""
import pytest
import ray


@pytest.fixture(scope="module")
def local_ray():
    if ray.is_initialized():  # e.g. a simulated cluster left by another module
        ray.shutdown()
    # "local": a Ray of its own, not the simulated cluster another test process may be running
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="warning")
    yield ray
    ray.shutdown()
