"""SQL over a store (DuckDB) and ``tracker index``.
A capability: imports core, host, read, capture and write; DuckDB only when used.


DuckDB and psycopg are optional extras (``tracker-core[query]``,
``tracker-core[team]``), imported only when a function here needs them.
"""

from __future__ import annotations

from tracker.query.sql import query

__all__ = ["query"]
