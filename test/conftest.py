"""Test-wide settings: DDS traffic stays on this machine, in a domain of this run's own."""

from __future__ import annotations

import os

# Every test process (and the node processes it starts, which inherit this
# environment) talks only over loopback, in a domain no concurrent run shares.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ... under pytest-xdist: the run's pid is the parent's
if _WORKER.startswith("gw") and _WORKER[2:].isdigit():
    _DOMAIN = 10 + (os.getppid() % 30) * 3 + int(_WORKER[2:]) % 3  # one domain per worker of this run (10-99)
else:
    _DOMAIN = 10 + os.getpid() % 90
os.environ["ROS_DOMAIN_ID"] = os.environ.get("RD_TEST_DOMAIN_ID") or str(_DOMAIN)
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
os.environ.setdefault("MPLBACKEND", "Agg")
# the NumPy model is the reference of the oracle tests (bit-for-bit repeatable); test_default_engine.py and
# test_codegen_cache.py exercise the compiled default engine themselves
os.environ.setdefault("ROBOT_DYNAMICS_ENGINE", "numpy")
# one BLAS thread per process: small matrices, and node processes share the 2 cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
