"""What a query may be before it runs: valid UTF-8, statements that only read (DuckDB's own parser tells), and the
tables it names.

Split from :mod:`tracker.query.sql`, which re-exports these names.
"""

from __future__ import annotations

import re
from typing import Any

from tracker.core.errors import QueryError, TrackerError

INSTALL_HINT = 'pip install "tracker-core[query]"'


def duckdb_module() -> Any:
    """The ``duckdb`` module.

    :raises TrackerError: when DuckDB is not installed, naming the extra to install.
    """
    try:
        import duckdb
    except ImportError:
        raise TrackerError(f"SQL queries need DuckDB, which is not installed: {INSTALL_HINT}") from None
    return duckdb


#: Statement types that only read (SELECT covers DESCRIBE, SHOW, SUMMARIZE, VALUES and FROM-first queries).
READING = frozenset({"SELECT"})
_EXPLAIN = re.compile(r"\s*explain\b\s*(?:\([^)]*\)\s*)?(?:analy[sz]e\b)?(.*)\Z", re.IGNORECASE | re.DOTALL)


def check_read_only(query: str) -> None:
    """Refuse ``query`` unless each of its statements only reads (DuckDB's own parser tells).

    ``COPY``, ``EXPORT``, ``ATTACH``, ``INSTALL``/``LOAD``, ``SET``, ``PRAGMA``,
    ``CALL``, ``CREATE``, ``INSERT``... are refused before anything runs;
    ``EXPLAIN`` only of a reading statement.

    :raises QueryError: naming the statement type refused.
    """
    duckdb = duckdb_module()
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise QueryError(str(exc)) from None
    except ValueError as exc:  # a statement type this duckdb module cannot name
        raise QueryError(f"SQL over the store is read-only: a statement of an unknown type is refused ({exc}); "
                         "nothing was run") from None
    for st in statements:
        kind = st.type.name
        if kind in READING:
            continue
        if kind == "EXPLAIN":
            m = _EXPLAIN.match(st.query)
            if m and m.group(1).strip():
                check_read_only(m.group(1))
                continue
        first = st.query.strip().split(None, 1)[0].upper() if st.query.strip() else kind
        raise QueryError(f"SQL over the store is read-only: {first} statements are refused (only SELECT, "
                         "DESCRIBE, SHOW, SUMMARIZE and EXPLAIN of them run); nothing was run or written")


def referenced(query: str) -> set[str] | None:
    """The table names ``query`` refers to, or ``None`` when DuckDB cannot tell."""
    duckdb = duckdb_module()
    try:
        return set(duckdb.get_table_names(query))
    except Exception:  # noqa: BLE001 - a query DuckDB cannot parse gets every view and DuckDB's error
        return None


def check_utf8(sql: str) -> None:
    """Refuse SQL that is not valid UTF-8 (bytes from argv arrive as lone surrogates), naming the first bad byte.

    :raises QueryError: saying where, e.g. ``byte 0xff at character 8``.
    """
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(sql[exc.start])
        what = f"byte 0x{bad - 0xDC00:02x}" if 0xDC80 <= bad <= 0xDCFF else f"lone surrogate U+{bad:04X}"
        raise QueryError(f"the SQL is not valid UTF-8: {what} at character {exc.start + 1}") from None
