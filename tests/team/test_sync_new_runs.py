"""A first sync copies new runs many to a transaction, and the database holds exactly what copying them one
segment at a time gives: events, writers, listings, derived columns and figures."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import tracker
from tracker.team import sync as sync_module
from tracker.team.postgres import sync

from ..childenv import child_environ
from .conftest import new_database

#: Every table a sync writes, with an order that makes their rows comparable.
TABLES = {
    "tracker_events": "SELECT run_id, writer, seq, kind, schema, step, time, data::text FROM tracker_events "
                      "ORDER BY 1, 2, 3",
    "tracker_writers": "SELECT run_id, writer, is_writer, host, started_at, ended_at, status, finish::text, "
                       "synced_bytes, synced_seq FROM tracker_writers ORDER BY 1, 2",
    "tracker_runs": "SELECT run_id, name, project, created_at, info::text, run_group, job_type FROM tracker_runs "
                    "ORDER BY 1",
    "tracker_writer_figures": "SELECT run_id, writer, metrics, max_time, figures::text, schemas::text "
                              "FROM tracker_writer_figures ORDER BY 1, 2",
    "tracker_metric_chunks": "SELECT run_id, writer, start, n, last_seq, names, step0, step_by, steps, times "
                             "FROM tracker_metric_chunks ORDER BY 1, 2, 3",
    "tracker_metric_values": "SELECT run_id, name, writer, start, vals FROM tracker_metric_values ORDER BY 1, 2, 3, 4",
    "tracker_changes": "SELECT run_id FROM tracker_changes ORDER BY 1",
}


def tables(url: str) -> dict[str, list[Any]]:
    import psycopg

    out = {}
    with psycopg.connect(url) as conn:
        for name, sql in TABLES.items():
            rows = conn.execute(sql).fetchall()
            # JSON texts compared as values (the order of keys in jsonb is the database's).
            out[name] = [tuple(json.loads(v) if isinstance(v, str) and v[:1] in "{[" else v for v in row)
                         for row in rows]
    return out


def test_new_runs_in_batches_give_what_one_segment_at_a_time_gives(pair: tuple[Path, str, dict[str, str]],
                                                                   pg_server: object,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store, _url, _ids = pair
    batched, careful = new_database(pg_server), new_database(pg_server)
    used: list[int] = []
    prepare = sync_module.Syncer._prepare_new

    def counting(self: Any, runs: list[Any]) -> Any:
        used.append(len(runs))
        return prepare(self, runs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with monkeypatch.context() as m:
            m.setattr(sync_module.Syncer, "_prepare_new", counting)
            m.setattr(sync_module, "NEW_RUNS", 3)  # several batches, each copied while the next is read
            first = sync(tracker.open_store(store), batched)
        with monkeypatch.context() as m:
            m.setattr(sync_module.Syncer, "_is_new", lambda self, rid: False)
            sync(tracker.open_store(store), careful)
    assert len(used) > 2 and max(used) > 1, f"no batches of new runs were copied ({used})"
    assert first.runs == len(tracker.open_store(store).run_ids())
    got, want = tables(batched), tables(careful)
    for name in TABLES:
        assert got[name] == want[name], f"{name} differs between a batched and a careful first sync"
    # And a second sync of either finds nothing new.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = sync(tracker.open_store(store), batched)
    assert again.events_new == 0 and tables(batched) == got


def race_store(store: Path, runs: int, steps: int) -> Path:
    """A store of ``runs`` finished runs ``race00``, ``race01``... of ``steps`` losses each, for two syncs to race."""
    for i in range(runs):
        with tracker.start_run("race", f"r{i}", store=store, run_id=f"race{i:02d}", system_metrics=False) as run:
            for step in range(steps):
                run.log({"loss": 1.0 / (step + 1 + i)}, step=step)
    return store


def test_two_first_syncs_at_once_store_each_event_and_derived_row_once(tmp_path: Path, pg_server: object) -> None:
    # Two processes copying the same new runs: one transaction of new runs fails on the other's writers, and
    # its runs are copied the careful way from what the database holds by then.
    store = race_store(tmp_path / "store", runs=40, steps=5)
    url = new_database(pg_server)
    procs = [subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "sync", url],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_environ())
             for _ in range(2)]
    for p in procs:
        _out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    got = tables(url)
    assert len(got["tracker_runs"]) == 40
    assert len(got["tracker_events"]) == len({r[:3] for r in got["tracker_events"]}) == 40 * 7
    assert len(got["tracker_writer_figures"]) == 40
    assert len(got["tracker_metric_values"]) == 40
    chunks = got["tracker_metric_chunks"]
    assert len(chunks) == 40 and all(c[3] == 5 for c in chunks), chunks[:3]


def test_a_failed_batch_copy_stops_the_sync_with_its_error_and_loses_nothing(
        pair: tuple[Path, str, dict[str, str]], pg_server: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # The worker thread's error is the sync's, in one line, and what committed before it stays; the next sync
    # copies the rest and the database ends as a sync without the failure leaves it.
    import psycopg

    from tracker.core.errors import TrackerError

    store, _url, _ids = pair
    url, whole = new_database(pg_server), new_database(pg_server)
    copy = sync_module.Syncer._copy_new
    calls: list[set[str]] = []

    def failing(self: Any, batch: Any) -> Any:
        calls.append({run.rid for run in batch.runs})
        if len(calls) == 2:
            raise psycopg.OperationalError("the server closed the connection (a test)")
        return copy(self, batch)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with monkeypatch.context() as m:
            m.setattr(sync_module.Syncer, "_copy_new", failing)
            m.setattr(sync_module, "NEW_RUNS", 2)
            with pytest.raises(TrackerError, match=r"^sync to .* stopped: the server closed the connection \(a test\) "
                                                   r"\(nothing is lost: run `tracker sync` again to resume\)$"):
                sync(tracker.open_store(store), url)
        assert len(calls) == 2
        listed = {row[0] for row in tables(url)["tracker_runs"]}
        assert calls[0] <= listed and not calls[1] & listed  # the batch before the failure is in, the failed one not
        sync(tracker.open_store(store), url)
        sync(tracker.open_store(store), whole)
    assert tables(url) == tables(whole)


def test_two_syncs_in_threads_with_batches_in_flight_store_each_event_once(tmp_path: Path, pg_server: object,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # As above with small batches, each written by its sync's worker while the next is read: a batch that meets
    # the other sync's rows is copied the careful way, and the batches after it go on.
    import threading

    store = race_store(tmp_path / "store", runs=24, steps=3)
    url = new_database(pg_server)
    monkeypatch.setattr(sync_module, "NEW_RUNS", 4)
    errors: list[BaseException] = []

    def one() -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sync(tracker.open_store(store), url)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    got = tables(url)
    assert len(got["tracker_runs"]) == len(got["tracker_writer_figures"]) == 24
    assert len(got["tracker_events"]) == len({r[:3] for r in got["tracker_events"]}) == 24 * 5
    assert [c[3] for c in got["tracker_metric_chunks"]] == [3] * 24
