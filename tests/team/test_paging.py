"""The runs list's pages, sorts and filters: the same rows over a folder and over the database it was synced to.

Random small stores (runs written as real segment lines: ties, missing values, mixed types, NaN, failed runs)
are synced into PostgreSQL once each; hypothesis then draws queries (a sort on a field, a config key or a
metric's figure, filters, a page size) and walks every page with the cursor on both stores.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracker
from tracker.read.listing import ListingError

from ..runsgen import Adder, write_store
from .conftest import new_database

SORTS = ["created_at", "-created_at", "name", "-name", "project", "-project", "status", "-status", "id", "-id",
         "group", "-group", "records", "-last_step", "ended_at", "-duration", "config.lr", "-config.lr",
         "config.opt.name", "-config.opt.name", "config.flag", "config.nope", "metric.loss.min", "-metric.loss.max",
         "metric.acc.last", "-metric.acc.last", "-metric.loss.last", "metric.nope.min"]


@pytest.fixture(scope="module")
def stores(pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Any, Any]]:  # noqa: F811
    """Three random stores, each as a folder and as the database it was synced to."""
    from tracker.team.postgres import TeamStore, sync

    root = tmp_path_factory.mktemp("paging")
    out = []
    for seed, n in ((1, 9), (2, 17), (3, 30)):
        path = write_store(root, seed, n)
        url = new_database(pg_server)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sync(tracker.open_store(path), url)
        out.append((tracker.open_store(path), TeamStore(url)))
    yield out
    for _, team in out:
        team.conn.close()


def walk(store: Any, limit: int, **query: Any) -> tuple[list[str], int]:
    """Every page of a query, cursor after cursor: the ids in order and the total each page said."""
    ids: list[str] = []
    totals = set()
    cursor = None
    for _ in range(1000):
        page = store.runs(limit=limit, cursor=cursor, **query)
        assert len(page) <= limit
        ids += [i.id for i in page]
        totals.add(page.total)
        cursor = page.next
        if cursor is None:
            break
    assert len(totals) == 1
    return ids, totals.pop()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 2), sort=st.sampled_from(SORTS), limit=st.integers(1, 7),
       project=st.sampled_from([None, "p", "Q"]), status=st.sampled_from([None, "finished", "failed"]),
       tag=st.sampled_from([None, "t1", ["t1", "t2"]]),
       q=st.sampled_from([None, "b", "R", "T2", "n-1", "n_1", "%1", "\x01b"]),
       group=st.sampled_from([None, "g1"]), offset=st.integers(0, 12))
def test_pages_sorts_and_filters_are_the_same_over_a_folder_and_postgresql(
        stores, which, sort, limit, project, status, tag, q, group, offset) -> None:
    folder, team = stores[which]
    query = {"project": project, "status": status, "tag": tag, "q": q, "group": group, "sort": sort}
    whole_f = folder.runs(**query)
    whole_t = team.runs(**query)
    assert [i.id for i in whole_f] == [i.id for i in whole_t]
    assert whole_f.total == whole_t.total == len(whole_f)
    ids_f, total_f = walk(folder, limit, **query)
    ids_t, total_t = walk(team, limit, **query)
    # Pages walked by cursor are the whole list, in order, no run twice or missing, on both stores.
    assert ids_f == ids_t == [i.id for i in whole_f]
    assert total_f == total_t == len(whole_f)
    # An offset jumps to the same rows.
    assert [i.id for i in folder.runs(limit=limit, offset=offset, **query)] == \
        [i.id for i in team.runs(limit=limit, offset=offset, **query)] == ids_f[offset:offset + limit]


def test_the_order_is_the_documented_one(stores) -> None:
    folder, _ = stores[2]
    runs = folder.runs(sort="config.lr")
    ranks = []
    for info in runs:
        v = info.config.get("lr")
        ranks.append(3 if v is None else 0 if isinstance(v, (int, float)) else 1 if isinstance(v, str) else 2)
    assert ranks == sorted(ranks)  # numbers, text, others, missing
    nums = [info.config["lr"] for info, r in zip(runs, ranks, strict=True) if r == 0]
    assert nums == sorted(nums)
    down = folder.runs(sort="-config.lr")
    assert [float(i.config["lr"]) for i in down if isinstance(i.config.get("lr"), (int, float))] == sorted(
        (float(n) for n in nums), reverse=True)
    assert "lr" not in down[-1].config  # missing last in either direction
    newest = folder.runs()
    assert [i.created_at for i in newest] == sorted((i.created_at for i in newest), reverse=True)


@pytest.mark.parametrize("bad", ["sort=bogus", "sort=metric.loss", "cursor=%%%", "limit=0", "offset=-1",
                                 "cursor_other_sort"])
def test_bad_queries_name_what_is_wrong(stores, bad: str) -> None:
    folder, team = stores[0]
    for store in (folder, team):
        kwargs: dict[str, Any] = {}
        if bad == "cursor_other_sort":
            kwargs = {"sort": "name", "cursor": store.runs(limit=1).next}
        else:
            k, v = bad.split("=")
            kwargs[k] = int(v) if k in ("limit", "offset") else v
        with pytest.raises(ListingError) as err:
            store.runs(**({"limit": 2} if "limit" not in kwargs else {}), **kwargs)
        assert bad.split("=")[0].split("_")[0] in str(err.value)


def test_choices_are_the_same_over_a_folder_and_postgresql(stores) -> None:
    for folder, team in stores:
        a, b = folder.run_choices(), team.run_choices()
        for k in ("projects", "tags", "statuses", "groups", "job_types", "metric_names", "largest_project"):
            assert a[k] == b[k], k
        assert sorted(a["config_keys"]) == sorted(b["config_keys"])


def test_a_page_never_repeats_or_skips_a_run_while_runs_are_synced_in(pg_url, tmp_path) -> None:
    """A writer process adds runs to the folder and a sync brings them in between page fetches."""
    from tracker.team.postgres import TeamStore, sync

    path = write_store(tmp_path, seed=21, n=20)

    def synced() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sync(tracker.open_store(path), pg_url)

    synced()
    team = TeamStore(pg_url)
    before = {i.id for i in team.runs()}
    adder = Adder(path)
    try:
        for sort in ("-created_at", "name", "config.lr", "-metric.loss.min"):
            ids: list[str] = []
            cursor = None
            while True:
                page = team.runs(sort=sort, limit=3, cursor=cursor)
                ids += [i.id for i in page]
                adder.add(1)
                synced()
                if page.next is None:
                    break
                cursor = page.next
            assert len(ids) == len(set(ids)), sort
            assert before <= set(ids), sort
    finally:
        adder.close()
        team.conn.close()


def test_every_sort_walks_the_same_pages_over_both(stores) -> None:
    folder, team = stores[2]
    for sort in SORTS:
        ids_f, total_f = walk(folder, 4, sort=sort)
        ids_t, total_t = walk(team, 4, sort=sort)
        assert ids_f == ids_t, sort
        assert total_f == total_t == 30
