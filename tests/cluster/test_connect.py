"""``cluster.connect``: a local Ray of the program's own, with no dashboard and no port it was not asked for."""
import os
import subprocess
import sys

import pytest

from cluster.connect import ClusterError, check_reachable
from tests.helpers import ROOT


def test_a_local_ray_starts_without_its_dashboard_and_quietly_keeps_token_authentication():
    """An evaluation or a sweep on this machine starts Ray to split its work: the dashboard would
    cost start-up time and listen on a port nobody asked for, and Ray's default of token
    authentication is kept without the warning it prints when left implicit. A fresh process, so
    that the Ray is the one ``connect`` starts, not a test's shared one."""
    code = ("import ray\n"
            "from cluster.connect import connect\n"
            "assert connect('', num_cpus=1)\n"
            "print(repr(ray._private.worker._global_node.webui_url))\n"
            "ray.shutdown()\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={key: value for key, value in os.environ.items()
                               if key not in ("RAY_ADDRESS", "RAY_AUTH_MODE")})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["''"]
    assert "Token authentication is enabled" not in done.stderr, done.stderr


@pytest.mark.parametrize("address, message", [("nowhere", "must look like host:port"),
                                              ("127.0.0.1:1", "no Ray cluster answers at 127.0.0.1:1")])
def test_a_cluster_address_that_does_not_answer_is_named(address, message):
    with pytest.raises(ClusterError, match=message):
        check_reachable(address, timeout_s=1.0)
