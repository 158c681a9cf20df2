"""The compiled-program cache (issue 15, item 3): key, directory, corrupted entries, concurrent builders.

Each test works in its own empty cache directory (``ROBOT_DYNAMICS_CACHE``).  Results of the compiled
programs are compared with the NumPy model (itself checked against Pinocchio in
``test_inverse_dynamics``); what is tested here is which entry is used, built or rebuilt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from robot_dynamics import codegen
from robot_dynamics.dynamics.inverse_dynamics import inverse_dynamics
from robot_dynamics.model.robot_model import RobotModel
from robot_dynamics.model.seed_robots import planar_2r
from robot_dynamics.symbolic.codegen import GeneratedBackend

ROOT = Path(__file__).resolve().parents[1]
Q = np.array([[0.4, -0.3], [1.0, 2.0]])
QD = np.array([[1.0, 0.5], [-0.2, 0.3]])
QDD = np.array([[-0.2, 0.7], [0.1, -1.0]])


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("ROBOT_DYNAMICS_CACHE", str(d))
    monkeypatch.setenv("ROBOT_DYNAMICS_ENGINE", "numpy")  # no background builds of the models made here
    return d


def _planar(seed: int) -> RobotModel:
    """A planar 2R with random masses: a description no other test compiles (the loaded modules are
    shared by the whole process, whatever the cache directory)."""
    m = planar_2r()
    p = m.inertial.copy()
    p[:, 9] = np.random.default_rng(1000 + seed).uniform(1.0, 3.0, 2)
    return m.replace(inertial=p)


class Counting:
    """``codegen.generate_program`` wrapped: how many programs were generated (i.e. entries built)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self.real = codegen.generate_program
        monkeypatch.setattr(codegen, "generate_program", self)

    def __call__(self, *args, **kwargs):
        out = self.real(*args, **kwargs)
        self.calls += 1
        return out


def _entries(d: Path) -> list[str]:
    return sorted(p.name for p in d.glob("rdgen_*.so")) if d.exists() else []


def _forget(key: str) -> None:
    """Make this process look up ``key`` on disk again (as a new process would)."""
    codegen._LOADED.pop(key, None)
    sys.modules.pop(f"rdgen_{key}", None)


def _ok(be: GeneratedBackend, m: RobotModel) -> bool:
    return bool(np.allclose(be.inverse_dynamics(Q, QD, QDD), inverse_dynamics(m, Q, QD, QDD), rtol=1e-12, atol=0.0))


# ------------------------------------------------------------------ key and directory
def test_cache_directory_from_the_environment(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ROBOT_DYNAMICS_CACHE", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert codegen.cache_dir() == tmp_path / "mine"
    m = _planar(1)
    GeneratedBackend(m)
    assert len(_entries(tmp_path / "mine")) == 1 and not (tmp_path / "xdg").exists()
    monkeypatch.delenv("ROBOT_DYNAMICS_CACHE")
    assert codegen.cache_dir() == tmp_path / "xdg" / "robot_dynamics" / "codegen"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert codegen.cache_dir() == Path(os.path.expanduser("~")) / ".cache" / "robot_dynamics" / "codegen"


def test_generator_source_is_in_the_key(monkeypatch, cache) -> None:
    """The hash input is the generator's source; changing it (as an edit of customized_model.py would)
    makes a new entry instead of reusing the stale one, and the original source finds its entry again.
    A process whose generator files changed on disk after it imported them refuses to build."""
    sources = dict(codegen._generator_sources())
    for f in ("customized_model.py", "codegen.py"):
        assert sources[f] == (ROOT / "robot_dynamics" / "symbolic" / f).read_bytes()
    counting = Counting(monkeypatch)
    m = _planar(2)
    assert _ok(GeneratedBackend(m), m) and counting.calls == 1
    assert _ok(GeneratedBackend(RobotModel.from_dict(m.to_dict())), m) and counting.calls == 1  # warm: reused
    key = codegen.model_key(m, kind="id")
    mutated = [(f, d.replace(b'p("Fc", j) * sp.sign(qp)', b"0") if f == "customized_model.py" else d)
               for f, d in codegen._generator_sources()]
    mutated = mutated if mutated != codegen._generator_sources() else [*mutated, ("customized_model.py", b"#")]
    original = codegen._generator_sources
    monkeypatch.setattr(codegen, "_generator_sources", lambda: mutated)
    # edited on disk after this process imported it: no build (the running code is not the hashed one)
    with pytest.raises(RuntimeError, match="changed since this process imported"):
        GeneratedBackend(_planar(4))
    codegen.generator_hash.cache_clear()  # as a new process would hash it
    try:
        assert codegen.model_key(m, kind="id") != key
        assert _ok(GeneratedBackend(m), m) and counting.calls == 2  # rebuilt, not the stale entry
        assert len(_entries(cache)) == 2
    finally:
        monkeypatch.setattr(codegen, "_generator_sources", original)
        codegen.generator_hash.cache_clear()
    assert codegen.model_key(m, kind="id") == key
    assert _ok(GeneratedBackend(m), m) and counting.calls == 2  # the original source finds its entry


def test_key_covers_model_options_compiler_and_flags(monkeypatch) -> None:
    m = _planar(3)
    key = codegen.model_key(m, kind="id", lang="c")
    assert codegen.model_key(RobotModel.from_dict(m.to_dict()), kind="id", lang="c") == key  # content, not identity
    p = m.standard_parameter_values.copy()
    p[11] += 1e-9  # Fc1
    others = {
        "parameters": codegen.model_key(m.with_standard_parameters(p), kind="id", lang="c"),
        "kind": codegen.model_key(m, kind="gravity", lang="c"),
        "options": codegen.model_key(m, kind="id", lang="c", parameters="standard"),
    }
    flags = codegen.CFLAGS
    monkeypatch.setattr(codegen, "CFLAGS", (*flags, "-ffast-math"))
    others["flags"] = codegen.model_key(m, kind="id", lang="c")
    monkeypatch.setattr(codegen, "CFLAGS", flags)
    monkeypatch.setattr(codegen, "_compiler_id", lambda cc: "gcc 99")
    others["compiler"] = codegen.model_key(m, kind="id", lang="c")
    assert all(v != key for v in others.values()) and len(set(others.values())) == len(others), others


# ------------------------------------------------------------------ corrupted entries
def _rewrite(path: Path, data: bytes) -> None:
    """Replace the file by another one (never write into a shared object this process has mapped)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _corrupt_truncated(so: Path, meta: Path) -> None:
    _rewrite(so, so.read_bytes()[: so.stat().st_size // 2])


def _corrupt_metadata(so: Path, meta: Path) -> None:
    meta.write_text("{not json")


def _corrupt_wrong_key(so: Path, meta: Path) -> None:
    info = json.loads(meta.read_text())
    meta.write_text(json.dumps({**info, "key": "0" * 24}))


def _corrupt_missing_metadata(so: Path, meta: Path) -> None:
    meta.unlink()


def _corrupt_garbage_with_matching_checksum(so: Path, meta: Path) -> None:
    """Metadata that agree with the file, but the file is no shared object: loading fails."""
    _rewrite(so, b"\x7fELF this is not a shared object")
    info = json.loads(meta.read_text())
    meta.write_text(json.dumps({**info, "size": so.stat().st_size, "sha256": codegen._sha256(so)}))


CORRUPTIONS = [_corrupt_truncated, _corrupt_metadata, _corrupt_wrong_key, _corrupt_missing_metadata,
               _corrupt_garbage_with_matching_checksum]


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__.removeprefix("_corrupt_"))
def test_corrupted_entry_is_detected_and_rebuilt(corrupt, cache) -> None:
    m = _planar(10 + CORRUPTIONS.index(corrupt))
    cm = codegen.generate_program(m, "id")
    builds = []

    def sources(name: str) -> list[str]:
        builds.append(name)
        return codegen.module_sources("id", {"id": cm}, name)

    key = codegen.model_key(m, kind="id", lang="c", parameters="base", simplified=True)
    so, meta, _ = codegen._paths(key)
    if corrupt is _corrupt_garbage_with_matching_checksum:  # never loaded in this process before
        cache.mkdir(parents=True)
        so.write_bytes(b"")
        meta.write_text(json.dumps({"key": key}))
    else:
        codegen.build_module(key, sources)
        assert codegen._valid_entry(key) and len(builds) == 1
        _forget(key)
    corrupt(so, meta)
    assert not codegen._valid_entry(key) or corrupt is _corrupt_garbage_with_matching_checksum
    builds.clear()
    mod = codegen.build_module(key, sources)
    assert len(builds) == 1  # rebuilt, once
    assert codegen._valid_entry(key)
    assert np.allclose(mod.evaluate(Q, QD, QDD), inverse_dynamics(m, Q, QD, QDD), rtol=1e-12, atol=0.0)
    assert not [p for p in cache.iterdir() if p.name.startswith(".rdgen_")]  # no temporary build left
    # a new process loads the rebuilt entry from the file
    code = textwrap.dedent(f"""
        import json, sys
        from robot_dynamics import codegen
        mod = codegen.cache_load({key!r})
        print(json.dumps(mod.evaluate(*json.loads(sys.argv[1])).tolist()))
    """)
    out = subprocess.run([sys.executable, "-c", code, json.dumps([Q.tolist(), QD.tolist(), QDD.tolist()])],
                         capture_output=True, text=True, cwd=ROOT, check=True, timeout=120)
    assert np.allclose(json.loads(out.stdout), inverse_dynamics(m, Q, QD, QDD), rtol=1e-12, atol=0.0)


def test_failed_build_publishes_nothing(cache) -> None:
    with pytest.raises(RuntimeError, match="compilation failed"):
        codegen.build_module("f" * 24, lambda name: ["this is not C;"])
    assert not _entries(cache) and not list(cache.glob("*.json"))
    assert not [p for p in cache.iterdir() if p.name.startswith(".rdgen_")]


# ------------------------------------------------------------------ concurrent builders
_BUILDER = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np
    from robot_dynamics import codegen
    from robot_dynamics.model.robot_model import RobotModel
    model = RobotModel.from_dict(json.loads(sys.argv[1]))
    calls = []
    real = codegen.generate_program
    codegen.generate_program = lambda *a, **k: calls.append(1) or real(*a, **k)
    while not os.path.exists(sys.argv[2]):  # start together
        time.sleep(0.005)
    be = codegen.GeneratedBackend(model)
    q = np.array(json.loads(sys.argv[3]))
    print(json.dumps({"generated": len(calls), "tau": be.inverse_dynamics(q, q, q).tolist()}))
""")


def test_two_processes_building_one_entry(cache, tmp_path) -> None:
    """Two processes ask for the same program in an empty cache at the same moment: one builds, the other
    waits on the entry's lock and loads it; both get correct torques and the entry is whole."""
    m = _planar(20)
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", _BUILDER, json.dumps(m.to_dict()), str(go), json.dumps(Q.tolist())],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
             for _ in range(2)]
    go.touch()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    assert sorted(r["generated"] for r in results) == [0, 1]
    for r in results:
        assert np.allclose(r["tau"], inverse_dynamics(m, Q, Q, Q), rtol=1e-12, atol=0.0)
    key = codegen.model_key(m, kind="id", lang="c", parameters="base", simplified=True)
    assert _entries(cache) == [f"rdgen_{key}{codegen._EXT}"] and codegen._valid_entry(key)
    assert not [p for p in cache.iterdir() if p.name.startswith(".rdgen_")]


def test_leftovers_of_a_killed_builder_are_removed(cache) -> None:
    """A builder killed mid-way leaves its temporary directory; the next builder of the key removes it."""
    m = _planar(30)
    key = codegen.model_key(m, kind="id", lang="c", parameters="base", simplified=True)
    stale = cache / f".rdgen_{key}.killed"
    stale.mkdir(parents=True)
    (stale / "half.c").write_text("double x")
    assert _ok(GeneratedBackend(m), m)
    assert not stale.exists() and codegen._valid_entry(key)
