"""The runs list's pages, sorts and filters: the same rows over a folder and over the database it was synced to.

Random small stores (runs written as real segment lines: ties, missing values, mixed types, NaN, failed runs)
are synced into PostgreSQL once each; hypothesis then draws queries (a sort on a field, a config key or a
metric's figure, filters, a page size) and walks every page with the cursor on both stores.
"""

from __future__ import annotations

import math
import random
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracker
from tracker.core.format import RECORD, RUN_FINISHED, RUN_STARTED, encode_line, event
from tracker.read.listing import ListingError

from .conftest import new_database

SORTS = ["created_at", "-created_at", "name", "-name", "project", "-project", "status", "-status", "id", "-id",
         "group", "-group", "records", "-last_step", "ended_at", "-duration", "config.lr", "-config.lr",
         "config.opt.name", "-config.opt.name", "config.flag", "config.nope", "metric.loss.min", "-metric.loss.max",
         "metric.acc.last", "-metric.acc.last", "-metric.loss.last", "metric.nope.min"]


def write_store(root: Path, seed: int, n: int) -> Path:
    """A store of ``n`` finished or failed runs, written as a writer writes them, full of ties and gaps."""
    rng = random.Random(seed)
    store = root / f"store-{seed}"
    for i in range(n):
        run_id = f"{rng.getrandbits(40):010x}" if rng.random() < 0.8 else f"R{i}_{rng.choice('aZ-')}"
        writer = f"host-{100 + i}-{rng.getrandbits(24):06x}"
        config: dict[str, Any] = {}
        lr = rng.choice([0.1, 0.01, 1e-3, 3, "auto", True, None, [1, 2], "x", 0.1])
        if lr is not None:
            config["lr"] = lr
        if rng.random() < 0.7:
            config["opt"] = {"name": rng.choice(["adam", "sgd", "Adam", "é"])}
        if rng.random() < 0.5:
            config["flag"] = rng.choice([True, False])
        t0 = 1.7e9 + rng.choice([0, 0, 60, 120, 3600 * rng.random()])
        start = {"host": "host", "pid": 100 + i, "writer": writer, "name": rng.choice(["a", "b", "B", "run-1", "é"]),
                 "project": rng.choice(["p", "q", "Q"]), "config": config,
                 "tags": rng.sample(["t1", "t2", "t3"], rng.randint(0, 2)),
                 "group": rng.choice([None, "g1", "g2"]), "job_type": rng.choice([None, "train"]), "resumed": False}
        lines = [encode_line(event(RUN_STARTED, None, None, t0, writer, 1, start))]
        seq = 1
        last: dict[str, Any] = {}
        steps = rng.randint(0, 4)
        for step in range(steps):
            data: dict[str, Any] = {}
            if rng.random() < 0.8:
                data["loss"] = rng.choice([0.5, 0.25, rng.random(), math.nan])
            if rng.random() < 0.6:
                data["acc"] = rng.choice([0.9, rng.random(), math.nan])
            seq += 1
            lines.append(encode_line(event(RECORD, "metrics", step, t0 + 1 + step, writer, seq, data)))
            last.update(data)
        status = rng.choice(["finished", "finished", "failed"])
        error = {"type": "ValueError", "message": "x", "traceback": ""} if status == "failed" else None
        lines.append(encode_line(event(RUN_FINISHED, None, None, t0 + 10 + rng.choice([0, 5]), writer, seq + 1,
                                       {"status": status, "error": error, "records": steps,
                                        "max_step": steps - 1 if steps else None, "last": last})))
        folder = store / "runs" / run_id
        folder.mkdir(parents=True)
        (folder / f"{writer}.jsonl").write_bytes(b"".join(lines))
    return store


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
       tag=st.sampled_from([None, "t1", ["t1", "t2"]]), q=st.sampled_from([None, "b", "R", "T2"]),
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
