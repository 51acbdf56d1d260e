"""The errors of the package; every one derives from :class:`TrackerError`."""

from __future__ import annotations


class TrackerError(Exception):
    """Base class of every error raised by ``tracker``."""


class SchemaError(TrackerError, ValueError):
    """A record does not match its schema; nothing of it was written.

    :ivar schema: the schema name.
    :ivar problems: one ``(field, message)`` pair per problem found; each
        message says what was expected and what was given.
    """

    def __init__(self, schema: str, problems: list[tuple[str, str]]) -> None:
        self.schema = schema
        self.problems = list(problems)
        lines = [f"{field}: {message}" for field, message in problems]
        if len(lines) == 1:
            msg = f"schema {schema!r}: {lines[0]}"
        else:
            msg = f"schema {schema!r}: {len(lines)} problems:\n  " + "\n  ".join(lines)
        super().__init__(msg)


class StoreError(TrackerError):
    """The store cannot be read or written (permissions, full disk, bad folder)."""


class StoreUnavailable(StoreError):
    """The store's server cannot be reached right now (the team database dropped the connection).

    A later read tries again; the dashboard answers 503 with the message.
    """


class RunNotFound(TrackerError, LookupError):
    """No run, or more than one run, matches an id or id prefix."""

    def __init__(self, message: str, candidates: list[str] | None = None) -> None:
        super().__init__(message)
        self.candidates = list(candidates or [])


class ArtifactNotFound(TrackerError, LookupError):
    """No artifact of that name, or the name has no such version or alias; the message names those that exist."""


class ConfigError(TrackerError):
    """tracker.toml holds an unknown key or a bad value."""


class PluginError(TrackerError):
    """A plugin could not be loaded or broke a rule of the plugin contract."""


class QueryError(TrackerError):
    """A SQL query over a store failed; the message is the query engine's (DuckDB's)."""


class TrackerWarning(UserWarning):
    """Warnings of tracker: broken plugins and handlers, damaged store lines."""
