"""``open_store("https://...")``: the reading protocol over a ``tracker server``'s JSON API, with a read key.

:class:`RemoteStore` and :class:`RemoteRunView` answer what the folder store
and the team database answer (runs, run, records, table, metrics, summarize,
blobs, the artifact registry and lineage, data frames), so every reader
command takes ``--store https://...`` and ``Api()`` and ``open_store`` take the
URL. The endpoints are those of :mod:`tracker.ui.remote_read`; the JSON is
:mod:`tracker.remote.wire`'s; requests go through :class:`tracker.remote.session.Session`
(the key, TLS, deadlines, retries).

Design: the client reads *the protocol*, not the server's files. The server
answers each question from the reading protocol of the store it serves, so
one client reads a server over a folder and a server over PostgreSQL and a
bucket alike (the team database keeps records, not segment files, so a
client that mirrored segments by offset, to read them with the folder
reader, would not work there). What is computed from records (tables of
the other schemas, summaries with this machine's summarizers, console
lines, environments, diffs) is computed here by the same code that computes
it over the team database (:class:`~tracker.read.protocol.RecordsRunMixin`);
what the server's store derives (the runs listing, paged, sorted and
filtered as the store does it, with per-metric figures; the artifact
registry) is asked of it, and so are a run's metric columns (one binary
answer, bit for bit, so charts and summaries cost about what they cost over
a folder). SQL runs here, in DuckDB, over the listing and the runs' records
(fetched when a query needs them). A run's records arrive as one
streamed JSON Lines answer, spooled to a temporary file so that the
connection is free again before the caller sees the first record; the
stream ends with a line counting them, so a cut connection is an error, not
a short run. Blobs are streamed into the local blob cache (the one the team
bucket's blobs use), hashed on the way, and kept only when size and SHA-256
match; a mismatch is a :class:`StoreError` naming the blob and the server.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from tracker.core.errors import RunNotFound, StoreError, TrackerError
from tracker.core.records import Problem, Record, RunInfo
from tracker.read.index.catalog import CatalogEntry
from tracker.read.protocol import RecordsRunMixin
from tracker.read.reader import LazyHost
from tracker.remote.wire import decode_figures, decode_info, parse_record
from tracker.write.artifact_methods import ArtifactMethods, RunArtifactMethods

API = "/api/v1"
#: Runs asked for per page of the listing.
PAGE = 1000


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


class RemoteEntry(CatalogEntry):
    """A run's catalog entry as the server sent it (figures fetched with the listing when asked for)."""

    __slots__ = ()


class RemoteStore(LazyHost, ArtifactMethods):
    """A ``tracker server`` opened for reading (the reading protocol; see the module's docstring).

    :param url: ``https://host[:port]`` (``http://`` only to a loopback address).
    :param host: the plugin host for schemas and summarizers, or a function that builds it
        (default: the process's).
    :param session: the :class:`~tracker.remote.session.Session` to use (default: one from the
        URL, the key of ``TRACKER_API_KEY`` or ``tracker login``, ``[team] ca_file`` and ``timeout``).
    :param config: the configuration whose ``[team]`` timeout and CA bundle the session takes.
    :param api_key: the key to read with (default: ``TRACKER_API_KEY``, else the one ``tracker login`` kept).
    """

    def __init__(self, url: str, host: Any = None, *, session: Any = None, config: Any = None,
                 api_key: str | None = None) -> None:
        from tracker.remote.session import Session, shown

        self._host = host
        self.url = url
        self.path = shown(url)
        if session is None:
            session = Session.from_config(url, config, **({"key": api_key} if api_key else {}))
        self.session = session

    def __repr__(self) -> str:
        return f"<RemoteStore {self.path}>"

    # --- requests ---------------------------------------------------------------------------------

    def _get(self, path: str, params: dict[str, Any] | None = None, ok: tuple[int, ...] = ()) -> Any:
        return self.session.request("GET", API + path, params=params, ok=ok)

    def _json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        doc = self._get(path, params).json()
        if not isinstance(doc, dict):
            raise StoreError(f"{self.path}{API}{path}: the server's answer is not a JSON object")
        return doc

    # --- runs -------------------------------------------------------------------------------------

    def runs_page(self, project: str | None = None, status: str | None = None, tag: str | list[str] | None = None, *,
                  q: str | None = None, group: str | None = None, job_type: str | None = None,
                  sort: str | None = None, limit: int = PAGE, cursor: str | None = None, offset: int | None = None,
                  figures: bool = False) -> Any:
        """One page of the listing as the server's store pages it: a :class:`~tracker.read.listing.RunPage` of
        infos (with ``total``, ``next`` and ``entries``, the runs' catalog entries)."""
        from tracker.read.listing import RunPage

        tags = [tag] if isinstance(tag, str) else list(tag or [])
        doc = self._json("/runs", {"project": project, "status": status, "tag": tags or None, "q": q, "group": group,
                                   "job_type": job_type, "sort": sort, "limit": limit, "cursor": cursor,
                                   "offset": offset, "figures": 1 if figures else None})
        entries = []
        for row in doc.get("runs") or ():
            info = decode_info(row.get("info"), row.get("nonfinite"))
            metrics = decode_figures(row["metrics"]) if "metrics" in row else None
            entries.append(RemoteEntry(info, metrics, dict(row.get("schemas") or {})))
        nxt = doc.get("next")
        total = doc.get("total")
        return RunPage([e.info for e in entries], total if isinstance(total, int) else len(entries),
                       nxt if isinstance(nxt, str) and nxt else None, entries)

    def _pages(self, figures: bool, **filters: Any) -> Any:
        from tracker.read.listing import RunPage

        entries: list[CatalogEntry] = []
        cursor = None
        while True:
            page = self.runs_page(**filters, cursor=cursor, figures=figures)
            entries.extend(page.entries)
            cursor = page.next
            if cursor is None:
                return RunPage([e.info for e in entries], len(entries), None, entries)

    def catalog(self, project: str | None = None, status: str | None = None,
                tag: str | None = None) -> list[CatalogEntry]:
        """Every run's entry (info, per-metric figures, records per schema), newest first, every page read."""
        return list(self._pages(True, project=project, status=status, tag=tag).entries)

    def runs(self, project: str | None = None, status: str | None = None, tag: str | list[str] | None = None, *,
             q: str | None = None, group: str | None = None, job_type: str | None = None, sort: str | None = None,
             limit: int | None = None, cursor: str | None = None, offset: int | None = None) -> list[RunInfo]:
        """Runs' infos, newest first (or in ``sort``'s order), filtered; a page of them with ``limit``
        (as :meth:`tracker.Store.runs`: a :class:`~tracker.read.listing.RunPage` with ``total`` and ``next``).

        Without ``limit``, every page is read.
        """
        filters = {"project": project, "status": status, "tag": tag, "q": q, "group": group, "job_type": job_type,
                   "sort": sort}
        if limit is not None or cursor is not None or offset is not None:
            return self.runs_page(**filters, limit=PAGE if limit is None else limit, cursor=cursor, offset=offset)
        return self._pages(False, **filters)

    def run_ids(self) -> list[str]:
        """Every run id on the server."""
        return sorted(i.id for i in self.runs())

    def run(self, ref: str) -> RemoteRunView:
        """The run whose id is ``ref`` or starts with it, else whose name is ``ref`` (resolved by the server).

        :raises RunNotFound: no match, or several (the message lists them).
        """
        if not isinstance(ref, str) or not ref:
            raise RunNotFound(f"no run {ref!r}: expected a run id or a unique prefix of one")
        resp = self._get("/run", {"ref": ref}, ok=(404,))
        doc = resp.json()
        if resp.status == 404:
            said = doc.get("error") if isinstance(doc, dict) else None
            raise RunNotFound(f"{said or f'no run matches {ref!r}'} ({self.path})",
                              list(doc.get("candidates") or []) if isinstance(doc, dict) else [])
        return RemoteRunView(self, doc)

    def dataframe(self, project: str | None = None, status: str | None = None, library: str = "pandas") -> Any:
        """One row per run (as :meth:`tracker.Store.dataframe`), from the server's listing."""
        from tracker.read.frames import run_frame

        return run_frame(self, project, status, library)

    def aggregate(self, metric: str, by: str | None = "group", runs: Any = None, stat: str = "mean",
                  band: Any = "std", max_points: int = 1000) -> dict[Any, dict[str, Any]]:
        """Per group of runs, ``metric``'s mean and band on a common step grid (as :meth:`tracker.Store.aggregate`)."""
        from tracker.read.aggregate import aggregate

        return aggregate(self, metric, by, runs, stat, band, max_points)

    def sql(self, query: str) -> Any:
        """Run SQL over the server's runs and records (DuckDB, here; as :meth:`tracker.Store.sql`).

        The ``runs`` view comes from the listing; the record views, when a query needs them, from
        every run's records, fetched once per query.
        """
        from tracker.query.sql import query as run_query

        return run_query(self, query)

    def sql_sources(self, needed: set[str] | None) -> Any:
        """What ``tracker query`` reads: the runs' infos and, when asked for, every record."""
        from tracker.query.sql import Sources

        entries = self.catalog()
        src = Sources([e.info for e in entries])
        if needed is not None and not (needed - {"runs"}):
            return src
        names: dict[str, None] = {}
        for e in entries:
            names.update(dict.fromkeys(e.metrics))
        src.metric_names = names
        src.dump = lambda folder: self._dump(folder, [e.info.id for e in entries])
        return src

    def _dump(self, folder: Path, run_ids: list[str]) -> list[str]:
        """Every record of each run as a JSONL line under ``folder/<run_id>/records.jsonl``; returns the files."""
        from tracker.core.format import RECORD, encode_nonfinite

        out = []
        for rid in run_ids:
            view = RemoteRunView(self, {"id": rid, "info": {"id": rid}})
            path = folder / rid / "records.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as f:
                for r in view.records():
                    head = orjson.dumps({"kind": RECORD, "schema": r.schema, "step": r.step, "time": r.time,
                                         "w": r.writer, "seq": r.seq})
                    f.write(head[:-1] + b',"data":' + orjson.dumps(encode_nonfinite(r.data)) + b"}\n")
            out.append(str(path))
        return out

    # --- artifacts --------------------------------------------------------------------------------

    def registry(self) -> Any:
        """Every named artifact, as the server's store derives it (versions, aliases, producers, consumers)."""
        from tracker.read.registry import Registry

        doc = self._json("/registry")
        try:
            return Registry.loaded(orjson.dumps(doc["summary"]), [orjson.dumps(c) for c in doc["collections"]],
                                   orjson.dumps(doc["io"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"{self.path}: the server sent an artifact registry this tracker cannot read "
                             f"({exc})") from None

    def _alias_edit(self, run_id: str, data: dict[str, Any]) -> None:
        raise TrackerError(f"{self.path}: aliases are not edited over HTTP (read only); run `tracker artifact "
                           "alias` on the server's store")

    @property
    def blobs(self) -> Any:
        """The server's blobs (:class:`tracker.remote.blobs.RemoteBlobs`), fetched into the local cache, size and
        SHA-256 checked."""
        if getattr(self, "_blobs", None) is None:
            from tracker.remote.blobs import RemoteBlobs

            self._blobs = RemoteBlobs(self)
        return self._blobs

    def close(self) -> None:
        """Close the connection."""
        self.session.close()


class RemoteRunView(RunArtifactMethods, RecordsRunMixin):
    """One run of a ``tracker server``, read-only (the :class:`tracker.RunView` interface)."""

    def __init__(self, store: RemoteStore, doc: dict[str, Any]) -> None:
        self.store = store
        self.id = str(doc.get("id"))
        self.path = f"{store.path}#{self.id}"
        self.problems: list[Problem] = []
        self._set(doc)

    def _set(self, doc: dict[str, Any]) -> None:
        self._info = decode_info(doc.get("info"), doc.get("nonfinite"))
        schemas = doc.get("schemas")
        self._schemas = list(schemas) if isinstance(schemas, (list, dict)) else None
        self._stats = decode_figures(doc.get("metrics"))

    @property
    def host(self) -> Any:
        """The store's plugin host."""
        return self.store.host

    @property
    def info(self) -> RunInfo:
        """The run's info as the server gave it (see :meth:`refresh`)."""
        return self._info

    def refresh(self) -> RunInfo:
        """Ask the server again (status, counts and figures of a running run move)."""
        self._set(self.store._json(f"/runs/{_quote(self.id)}"))
        return self._info

    def schemas(self) -> list[str]:
        """The schema names present in the run, in order of first appearance."""
        if self._schemas is None:
            return super().schemas()
        return list(self._schemas)

    def metric_stats(self) -> dict[str, dict[str, Any]]:
        """Per metric: count, first, last, min, max and their steps (the server's figures)."""
        return self._stats

    def metrics(self) -> dict[str, Any]:
        """``{"step": ..., "time": ..., name: ...}``, one entry per ``metrics`` record in log order: the store's
        columns as the server holds them, bit for bit (NaN where a record lacks a metric)."""
        import numpy as np

        body = self.store._get(f"/runs/{_quote(self.id)}/metrics").body
        nl = body.find(b"\n")
        try:
            head = orjson.loads(body[:nl])
            n = int(head["n"])
            out: dict[str, Any] = {}
            at = nl + 1
            for name, dtype in head["columns"]:
                size = n * 8
                if dtype not in ("<i8", "<f8") or at + size > len(body):
                    raise ValueError(f"column {name!r}")
                out[name] = np.frombuffer(body, dtype, n, at).astype(np.int64 if dtype == "<i8" else np.float64)
                at += size
        except (ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
            raise StoreError(f"{self.path}: the server sent metric columns this tracker cannot read ({exc})") \
                from None
        if at != len(body):
            raise StoreError(f"{self.path}: the metric columns arrived cut off or too long")
        return out

    def table(self, schema: str) -> Any:
        """The run's records of ``schema`` as columns (``metrics`` from the server's columns, as over a folder)."""
        from tracker.core.format import METRICS
        from tracker.core.summary import Table

        if schema != METRICS:
            return super().table(schema)
        cols = self.metrics()
        return Table.from_columns(METRICS, cols, int(cols["step"].size) if "step" in cols else 0,
                                  self.host.schemas.get(METRICS), rows=lambda: (r.data for r in self.records(METRICS)))

    def records_after(self, cursor: dict[str, int], schema: str | None = None) -> tuple[list[Record], dict[str, int]]:
        """The records each writer logged after sequence number ``cursor[writer]``, in log order, and the new
        cursor (what ``tracker tail -f`` and ``logs -f`` print as the run goes on)."""
        recs = list(self._records(schema, orjson.dumps(cursor).decode() if cursor else "{}"))
        new = dict(cursor)
        for r in recs:
            new[r.writer] = max(new.get(r.writer, 0), int(r.seq))
        return recs, new

    def records(self, schema: str | None = None) -> Iterator[Record]:
        """Every record (of one schema), in log order.

        The answer is read whole into a temporary file first (memory up to 8 MiB, then disk), so the
        caller may ask the server other things while iterating.

        :raises StoreError: the stream was cut or the server said reading failed.
        """
        return self._records(schema)

    def _records(self, schema: str | None, after: str | None = None) -> Iterator[Record]:
        spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115 - closed below
        try:
            with self.store.session.stream("GET", f"{API}/runs/{_quote(self.id)}/records",
                                           params={"schema": schema, "after": after}) as resp:
                while True:
                    block = resp.read(1 << 20)
                    if not block:
                        break
                    spool.write(block)
        except OSError as exc:
            spool.close()
            raise StoreError(f"{self.path}: reading the records was cut off ({exc})") from None
        except BaseException:
            spool.close()
            raise
        return self._parse(spool)

    def _parse(self, spool: IO[bytes]) -> Iterator[Record]:
        with spool:
            spool.seek(0)
            n = 0
            for line in spool:
                doc = orjson.loads(line)
                if "data" in doc:
                    n += 1
                    yield parse_record(doc)
                elif "end" in doc:
                    if doc["end"] != n:
                        raise StoreError(f"{self.path}: the server counted {doc['end']} records, {n} arrived")
                    return
                elif "error" in doc:
                    raise StoreError(f"{self.path}: the server could not read the run: {doc['error']}")
            raise StoreError(f"{self.path}: the records stream was cut off after {n} records")

    def dataframe(self, schema: str = "metrics", library: str = "pandas") -> Any:
        """The run's records of ``schema`` as a data frame (as :meth:`tracker.RunView.dataframe`)."""
        from tracker.read.frames import record_frame

        return record_frame(self, schema, library)


def open_remote_store(url: str, host: Any = None, *, config: Any = None, session: Any = None,
                      api_key: str | None = None) -> RemoteStore:
    """Open the ``tracker server`` at ``url`` for reading (the reading API of :func:`tracker.open_store`).

    :param api_key: the key (default: ``TRACKER_API_KEY``, else the one ``tracker login`` kept for the server).
    :raises TrackerError: a URL the key may not travel to (plain ``http://`` to another host), in one line.
    """
    return RemoteStore(url, host=host, session=session, config=config, api_key=api_key)


__all__ = ["RemoteEntry", "RemoteRunView", "RemoteStore", "open_remote_store"]
