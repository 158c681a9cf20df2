"""Every node process starts with one glibc malloc arena (``node_set.NODE_ENVIRONMENT``), so that the pages of a
huge refused request, freed by an executor thread, can be given back to the system (issue 29: RSS back within
50 MB).  Checked in a real interpreter that imports a node module and starts threads as a node does: with the
environment there is one arena, without it (the control) the imports alone made more."""

from __future__ import annotations

import subprocess
import sys

import pytest

from robot_dynamics.ros.bringup import Bringup
from robot_dynamics.ros.node_set import NODE_ENVIRONMENT, NodeSpec, node_environment, node_set

COUNT_ARENAS = r"""
import ctypes, os, tempfile, threading
import robot_dynamics.ros.dynamics_server  # noqa: F401 - the imports a node makes
from robot_dynamics.ros.request_gate import one_malloc_arena
one_malloc_arena()  # what run_node does
def work():
    blocks = [ctypes.create_string_buffer(4096) for _ in range(2000)]
    del blocks
threads = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in threads]; [t.join() for t in threads]
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
path = tempfile.mktemp()
f = libc.fopen(path.encode(), b"w"); libc.malloc_info(0, f); libc.fclose(f)
print(open(path).read().count("<heap nr=")); os.unlink(path)
"""


def arenas(env: dict[str, str]) -> int:
    out = subprocess.run([sys.executable, "-c", COUNT_ARENAS], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


def test_node_environment_sets_one_arena_and_keeps_the_users_value():
    assert NODE_ENVIRONMENT == {"MALLOC_ARENA_MAX": "1"}
    assert node_environment({"PATH": "/bin"}) == {"PATH": "/bin", "MALLOC_ARENA_MAX": "1"}
    assert node_environment({"MALLOC_ARENA_MAX": "4"})["MALLOC_ARENA_MAX"] == "4"  # the user's choice wins


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc arenas")
def test_a_node_process_has_one_malloc_arena_with_the_environment_and_more_without():
    base = {k: v for k, v in node_environment().items() if k != "MALLOC_ARENA_MAX"}
    assert arenas(node_environment(base)) == 1
    assert arenas(base) > 1  # the control: mallopt after the imports does not bring them back to one


def test_the_runner_starts_every_node_with_the_node_environment(monkeypatch):
    seen: list[dict[str, str]] = []

    class FakePopen:
        def __init__(self, cmd, **kwargs):
            seen.append(kwargs["env"])

        def poll(self):
            return 0

    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.setattr("robot_dynamics.ros.bringup.subprocess.Popen", FakePopen)
    specs = node_set("planar2r", "mujoco")
    assert all(isinstance(s, NodeSpec) for s in specs)
    Bringup(specs, say=lambda _: None).start()
    assert len(seen) == len(specs) >= 4
    assert all(env.get("MALLOC_ARENA_MAX") == "1" for env in seen)
