"""Settings of the code generator of :mod:`robot_dynamics.symbolic.codegen`: the names of its environment
variables (described in its Environment section) and the size limits and flags of the compiled C programs.

The size limits and flags change the generated or compiled code, so every cache key includes them
(:func:`~robot_dynamics.symbolic.codegen_cache.model_key`).
"""

from __future__ import annotations

ENGINE_ENV = "ROBOT_DYNAMICS_ENGINE"
COMPILE_AFTER_ENV = "ROBOT_DYNAMICS_COMPILE_AFTER"
CACHE_ENV = "ROBOT_DYNAMICS_CACHE"
DEFAULT_COMPILE_AFTER = 20


# size of one generated C function, in characters of its statements (~8 per operation): gcc's
# compile time stays about linear in the program size with functions of this size (measured at
# 12-48 joints, see bench/bench_default_api.py --compile)
CHUNK_CHARS = 24_000
CFLAGS = ("-O2", "-march=native", "-fPIC", "-fno-math-errno", "-fno-semantic-interposition")
# programs larger than these (characters of C statements) get no 4-lane SIMD version / are compiled at -O1
SIMD_MAX_CHARS = 200_000
O1_MIN_CHARS = 200_000


_STACK_BYTES = 131072  # work arrays larger than this are allocated on the heap
