"""Start, spin and stop one node cleanly (SIGINT/SIGTERM -> orderly shutdown)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Sequence

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions


def run_node(factory: Callable[[], Node], args: Sequence[str] | None = None) -> int:
    """Create the node with ``factory`` and spin it until SIGINT/SIGTERM; returns an exit code.

    The node may define ``on_shutdown()`` (e.g. a controller's last holding
    command); it is called while the context is still up.
    """
    stop = threading.Event()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    node = None
    code = 0
    try:
        node = factory()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        while rclpy.ok() and not stop.is_set():
            executor.spin_once(timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as exc:
        print(f"node failed to start: {type(exc).__name__}: {exc}", flush=True)
        code = 1
    finally:
        if node is not None:
            hook = getattr(node, "on_shutdown", None)
            if hook is not None and rclpy.ok():
                try:
                    hook()
                except Exception as exc:  # shutdown must go on
                    node.get_logger().error(f"on_shutdown failed: {exc}")
            node.destroy_node()
        rclpy.try_shutdown()
    return code
