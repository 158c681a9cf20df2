"""Big batch outputs of the compiled programs are reused once nobody references them (codegen ``rd_output``):
a result the caller still holds, directly or through a view, is never overwritten, and a reused buffer
carries nothing of the previous result.  The NumPy model is the reference."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from robot_dynamics.dynamics.inverse_dynamics import regressor as numpy_regressor
from robot_dynamics.model.seed_robots import planar_2r
from robot_dynamics.symbolic import codegen

pytestmark = pytest.mark.skipif(codegen.compiler() is None, reason="needs a C compiler")

NB = 12_000  # 12 000 x 2 x 26 doubles = 5.0 MB: inside the reuse window (4..256 MB)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROBOT_DYNAMICS_CACHE", str(tmp_path_factory.mktemp("cache")))  # cold: built here
        mp.delenv("ROBOT_DYNAMICS_ENGINE", raising=False)  # the default engine (the suite sets numpy)
        m = planar_2r()
        assert m.compile("regressor", wait=True) == {"regressor": "compiled"}
        yield m
        codegen.release_buffers()


def _states(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(-2, 2, (NB, 2)) for _ in range(3))  # type: ignore[return-value]


def test_a_held_result_is_never_overwritten(model) -> None:
    s1, s2 = _states(1), _states(2)
    w1 = model.regressor(*s1)
    assert w1.nbytes >= 4 << 20
    keep = w1.copy()
    w2 = model.regressor(*s2)  # w1 is held: a new array
    assert w2 is not w1 and not np.shares_memory(w1, w2)
    np.testing.assert_array_equal(w1, keep)
    np.testing.assert_allclose(w2, numpy_regressor(model, *s2), rtol=1e-12, atol=1e-12)
    # a view keeps its base alive and unchanged
    view = w2[5:9]
    kept_view = view.copy()
    del w2
    gc.collect()
    w3 = model.regressor(*s1)
    np.testing.assert_array_equal(view, kept_view)
    assert not np.shares_memory(view, w3)
    np.testing.assert_allclose(w3, keep, rtol=0, atol=0)


def test_a_dropped_result_is_reused_and_fully_rewritten(model) -> None:
    s1, s2 = _states(3), _states(4)
    s1[1][:] = 0.0  # zero velocities and accelerations: many entries of W are zero here, not in s2
    s1[2][:] = 0.0
    w = model.regressor(*s2)
    dropped = weakref.ref(w)
    del w
    w = model.regressor(*s1)  # the array of the dropped result (kept alive by the cache), rewritten entirely
    assert dropped() is w
    np.testing.assert_allclose(w, numpy_regressor(model, *s1), rtol=1e-12, atol=1e-12)
    w.flags.writeable = False  # a caller's read-only flag: not handed out again as is
    del w
    w = model.regressor(*s2)
    assert w.flags.writeable
    np.testing.assert_allclose(w, numpy_regressor(model, *s2), rtol=1e-12, atol=1e-12)
    dropped = weakref.ref(w)
    del w
    codegen.release_buffers()
    assert dropped() is None  # released: nothing kept
    w = model.regressor(*s2)
    np.testing.assert_allclose(w, numpy_regressor(model, *s2), rtol=1e-12, atol=1e-12)
