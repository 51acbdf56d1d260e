"""What the dashboard's endpoints share: query parameters parsed (a 400 naming the bad one) and JSON answers.

Used by the routes of :mod:`tracker.ui.app` and :mod:`tracker.ui.routes`: a
parameter that does not parse raises :class:`BadRequest` with a message naming
it, what was expected and what was given, which the app answers with 400.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from tracker.ui import parts


class BadRequest(Exception):
    """A bad parameter: answered with 400 and its message."""


def json_response(data: Any, status: int = 200) -> Response:
    """Strict JSON (no NaN or Infinity: callers encode them first)."""
    return Response(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS), status_code=status,
                    media_type="application/json", headers={"cache-control": "no-store"})


def error(status: int, message: str, **extra: Any) -> Response:
    """``{"error": message}`` with ``status``."""
    return json_response({"error": message, **extra}, status)


def parsed_param(request: Request, name: str, parse: Callable[[str], Any], expected: str) -> Any:
    """Query parameter ``name`` through ``parse``; ``None`` when absent or empty; 400 naming it when bad."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return parse(raw)
    except ValueError:
        raise BadRequest(f"{name}: expected {expected}, given {raw[:40]!r}") from None


def ascii_int(raw: str) -> int:
    """``int(raw)`` for ASCII digits only (``int`` also takes "１２", " 12 " and "1_2")."""
    if not (raw.isascii() and raw.lstrip("-").isdigit()):
        raise ValueError(raw)
    return int(raw)


def int_param(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    """An optional integer from ``lo`` to ``hi``; ``default`` when absent or empty."""
    value = parsed_param(request, name, ascii_int, f"an integer from {lo} to {hi}")
    if value is None:
        return default
    if not lo <= value <= hi:
        raise BadRequest(f"{name}: expected an integer from {lo} to {hi}, given {value}")
    return value


def float_param(request: Request, name: str) -> float | None:
    """An optional finite number; ``None`` when absent or empty."""
    value = parsed_param(request, name, float, "a number")
    if value is not None and not math.isfinite(value):
        raise BadRequest(f"{name}: expected a finite number, given {request.query_params.get(name, '')[:40]!r}")
    return value


def names_param(request: Request, name: str) -> list[str] | None:
    """Names separated by commas (the parameter may repeat); ``None`` when absent."""
    raw = request.query_params.getlist(name)
    if not raw:
        return None
    return [n for r in raw for n in r.split(",") if n]


def status_param(request: Request) -> str | None:
    """The runs page's ``status`` filter: one of :data:`tracker.ui.parts.STATUSES`, or ``None``."""
    status = request.query_params.get("status") or None
    if status is not None and status not in parts.STATUSES:
        raise BadRequest(f"status: expected one of {', '.join(parts.STATUSES)}, given {status[:40]!r}")
    return status


def run_ids_param(request: Request) -> list[str] | None:
    """``runs=id,id``: run ids (or prefixes of them), each checked; ``None`` when absent."""
    refs = names_param(request, "runs")
    for ref in refs or ():
        if not parts.is_run_id(ref):
            raise BadRequest(f"runs: invalid run id {ref[:80]!r}")
    return refs
