"""The source of a URDF: XML text, a file, or a xacro file.

xacro (issue 14): a path ending in ``.xacro`` is expanded with the ``xacro``
package (:func:`expand_xacro`, arguments ``xacro_args`` as ``{name: value}`` or
``["name:=value", ...]``, :func:`xacro_mappings`); any xacro error (missing argument, bad expression,
missing include, XML syntax) is one ``ValueError`` naming the cause.  Text is
never expanded: xacro text given as a string (a request, a topic) is refused with
a message naming xacro (``XACRO_TEXT_MESSAGE``).  With ``text_only`` (:func:`_read_source`), anything
but XML text is refused with one fixed message (``TEXT_ONLY_MESSAGE``) that never depends on the file
system.
"""

from __future__ import annotations

import io
import logging
import os
import re
import threading
from collections.abc import Mapping, Sequence
from contextlib import redirect_stderr
from typing import Any

_LOG = logging.getLogger("robot_dynamics.model.urdf_conversion")  # one logger for the whole conversion


_XACRO_LOCK = threading.Lock()  # the xacro package keeps its state in module globals
_XACRO_ARG = re.compile(r"^([A-Za-z_][\w.-]*):=(.*)$", re.DOTALL)


TEXT_ONLY_MESSAGE = "the URDF must be XML text starting with '<' (file paths are not accepted here)"
XACRO_TEXT_MESSAGE = (
    "this text is xacro, not URDF ({what}): xacro is expanded only from a .xacro file (CLI --xacro-arg, node "
    "parameters urdf_path + xacro_args); expand it first (xacro FILE > robot.urdf) and send the URDF"
)


def is_xacro_path(source: Any) -> bool:
    """True for a path (str or PathLike, not XML text) whose name ends in ``.xacro`` (``.urdf.xacro`` too)."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    return isinstance(source, str) and not source.lstrip().startswith("<") and source.rstrip().lower().endswith(".xacro")


def xacro_mappings(args: Mapping[str, Any] | Sequence[str] | None) -> dict[str, str]:
    """xacro arguments as ``{name: value}`` from a mapping or from ``["name:=value", ...]`` (ValueError if malformed)."""
    if args is None:
        return {}
    if isinstance(args, Mapping):
        out = {}
        for k, v in args.items():
            if not isinstance(k, str) or not _XACRO_ARG.match(f"{k}:="):
                raise ValueError(f"xacro argument name {k!r} is not a valid name")
            out[k] = str(v)
        return out
    if isinstance(args, str):
        args = [args]
    out = {}
    for item in args:
        m = _XACRO_ARG.match(str(item).strip())
        if m is None:
            raise ValueError(f"xacro argument {str(item)[:200]!r} must read name:=value")
        out[m.group(1)] = m.group(2)
    return out


def expand_xacro(path: str | os.PathLike[str], args: Mapping[str, Any] | Sequence[str] | None = None) -> str:
    """URDF text of the xacro file ``path`` with arguments ``args`` (see :func:`xacro_mappings`).

    Uses the ``xacro`` package's Python API (``process_file`` + ``toprettyxml``, what its command line
    prints); its warnings go to the conversion's logger at DEBUG level.  Every failure is one ValueError
    naming the file and the cause (missing file or include, undefined argument, bad expression, XML syntax).
    """
    mappings = xacro_mappings(args)
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"xacro file {path!r} does not exist")
    from xml.parsers.expat import ExpatError

    try:
        import xacro
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ValueError(f"cannot expand {path!r}: the 'xacro' package is not installed (pip install xacro)") from exc
    stderr = io.StringIO()
    with _XACRO_LOCK, redirect_stderr(stderr):
        try:
            doc = xacro.process_file(path, mappings=dict(mappings), verbosity=0)
            text = doc.toprettyxml(indent="  ")
        except ExpatError as exc:
            raise ValueError(f"xacro {path!r}: {_xacro_where(xacro)}XML syntax error: {exc}") from None
        except xacro.XacroException as exc:
            raise ValueError(f"xacro {path!r}: {_xacro_where(xacro)}{_xacro_cause(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - expressions raise anything (NameError, ZeroDivisionError, ...)
            raise ValueError(f"xacro {path!r}: {_xacro_where(xacro)}{type(exc).__name__}: {exc}") from None
        finally:
            for line in stderr.getvalue().splitlines():
                if line.strip():
                    _LOG.debug("xacro: %s", line)
    return text


def _xacro_cause(exc: Exception) -> str:
    """xacro's message, with the hint a user needs for a missing argument or include."""
    text = " ".join(str(exc).split())
    inner = getattr(exc, "exc", None)
    if type(inner).__name__ == "ArgException":
        return f"missing xacro argument {str(inner)!r} ({text}): pass {inner}:=VALUE"
    if isinstance(inner, OSError):
        return f"cannot open an included file: {inner.strerror}: {inner.filename}"
    if inner is not None and str(inner) and str(inner) not in text:
        text = f"{text}: {inner}"
    return text


def _xacro_where(xacro: Any) -> str:
    """'in file X (included from Y): ' from xacro's file stack when an include is involved."""
    stack = [f for f in (getattr(xacro, "filestack", None) or []) if f]
    if len(stack) < 2:
        return ""
    return f"in {stack[-1]!r} (included from {' <- '.join(repr(f) for f in reversed(stack[:-1]))}): "


def _read_source(
    source: Any, text_only: bool = False, xacro_args: Mapping[str, Any] | Sequence[str] | None = None
) -> str:
    """URDF text of ``source`` (XML text, or a path unless ``text_only``; a ``.xacro`` path is expanded).

    With ``text_only`` anything that is not XML text is refused with one fixed message that never
    depends on the file system (no file-existence oracle for requests and topics).
    """
    if text_only:
        if not isinstance(source, str) or not source.lstrip().startswith("<"):
            raise ValueError(TEXT_ONLY_MESSAGE)
        if xacro_args:
            raise ValueError("xacro arguments apply to .xacro files only, not to URDF text")
        return source
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise ValueError(f"URDF source must be a path or an XML string, got {type(source).__name__}")  # noqa: TRY004
    if is_xacro_path(source):
        return expand_xacro(source, xacro_args)
    if xacro_args:
        raise ValueError(f"xacro arguments given but the URDF source is not a .xacro file: {source[:200]!r}")
    if source.lstrip().startswith("<"):
        return source
    if not os.path.isfile(source):
        raise ValueError(f"URDF source is neither XML text nor an existing file: {source[:200]!r}")
    with open(source, encoding="utf-8") as f:
        return f.read()
