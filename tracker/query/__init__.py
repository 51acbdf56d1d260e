"""SQL over a store (DuckDB), ``tracker index``, and the team store on PostgreSQL.

DuckDB and psycopg are optional extras (``tracker-core[query]``,
``tracker-core[team]``), imported only when a function here needs them.
"""

from __future__ import annotations

from .sql import query

__all__ = ["query"]
