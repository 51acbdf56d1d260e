"""SQL over a store (DuckDB) and ``tracker index``.
A capability: imports core, host, read, capture and write; DuckDB only when used.

DuckDB is the optional extra ``tracker-core[query]``, imported only when a function here needs it.
"""

from __future__ import annotations

from tracker.query.sql import query

__all__ = ["query"]
