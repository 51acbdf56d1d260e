"""The MCP server: the tools of :mod:`tracker.mcp.tools` and the ``tracker://runs/{id}`` resource, on the ``mcp`` SDK.

Imported only by ``tracker mcp``. A tracker error (an unknown run, SQL that
is refused) reaches the client as the SDK's ``ToolError`` carrying the
tracker's message, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from tracker.core.errors import RunNotFound, TrackerError
from tracker.mcp import tools

INSTRUCTIONS = ("Read-only access to a tracker store of machine-learning runs: list_runs to find runs, get_run for "
                "one run's config, summaries and per-metric figures, get_metrics for downsampled series, "
                "compare_runs for config differences and last values, query for SQL over the views runs, metrics, "
                "records, metric_stats (DuckDB), list_alerts, list_sweeps. Nothing here changes the store.")


def build_server(store: Any) -> Any:
    """An ``MCPServer`` over ``store`` with every tool and the run resource registered."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError

    server = MCPServer(name="tracker", instructions=INSTRUCTIONS, log_level="WARNING")

    def answer(fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(store, *args)
        except (TrackerError, ValueError, TypeError) as exc:
            raise ToolError(str(exc)) from None

    @server.tool()
    def list_runs(project: str | None = None, status: str | None = None, tag: str | None = None,
                  limit: int = 50) -> dict[str, Any]:
        """List runs newest first: id, name, project, status (running, finished, failed, crashed), start and
        end (epoch seconds), tags, last step, number of alerts and the last value of each metric.
        At most `limit` runs (1..500); `truncated` and `total` say when there are more."""
        return answer(tools.list_runs, project, status, tag, limit)

    @server.tool()
    def get_run(run: str) -> dict[str, Any]:
        """One run by id (a unique prefix works) or name: info, config, summary values, notes, error, per-metric
        count/first/last/min/max with their steps, records per schema, and every summary table."""
        return answer(tools.get_run, run)

    @server.tool()
    def get_metrics(run: str, names: list[str] | None = None, max_points: int = 200) -> dict[str, Any]:
        """Metric series of a run against step, downsampled as the dashboard does: at most `max_points`
        (1..2000) buckets per series, each with its first step (x), mean (y), min and max; NaN as null.
        `names` left out means every metric."""
        return answer(tools.get_metrics, run, names, max_points)

    @server.tool()
    def compare_runs(runs: list[str]) -> dict[str, Any]:
        """Two to twenty runs side by side: each one's config and last metric values, and the config keys whose
        values differ (nested keys dotted)."""
        return answer(tools.compare_runs, runs)

    @server.tool()
    def query(sql: str, limit: int = 100) -> dict[str, Any]:
        """Read-only SQL (DuckDB) over the views runs, metrics (run_id, step, time, name, value), records,
        metric_stats and one view per record schema. Statements that write (COPY ... TO, EXPORT, ATTACH,
        INSTALL, CREATE ...) are refused. At most `limit` rows (1..1000), with `total` and `truncated`."""
        return answer(tools.query, sql, limit)

    @server.tool()
    def list_alerts(run: str | None = None, limit: int = 100) -> dict[str, Any]:
        """Alerts newest first (of one run, or of every run): time, run, level, title, text, whether it was
        suppressed, and the rule condition that fired (empty for alerts the training script sent)."""
        return answer(tools.list_alerts, run, limit)

    @server.tool()
    def list_sweeps() -> dict[str, Any]:
        """Hyperparameter sweeps of the store: each sweep's id, number of trials (runs tagged sweep:<id>), their
        states and projects."""
        return answer(tools.list_sweeps)

    @server.resource("tracker://runs/{id}", name="run", mime_type="application/json",
                     description="One run as get_run gives it.")
    def run_resource(id: str) -> str:  # noqa: A002 - the URI template's name
        try:
            return orjson.dumps(tools.get_run(store, id)).decode()
        except RunNotFound as exc:
            raise ResourceNotFoundError(str(exc)) from None

    return server


def serve(store: Any, http: bool = False, host: str = "127.0.0.1", port: int = 5171) -> None:
    """Serve over stdio, or over streamable HTTP at ``http://host:port/mcp``."""
    server = build_server(store)
    if http:
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("stdio")
