"""The run table (``index/runs.idx``): the first page of the newest runs without listing the runs folder.

Counted, not timed: while the runs folder is as the last whole listing saw it, a page of the newest runs
lists no folder and parses only the page's entries; a run added, edited, resumed or removed, a damaged
table, or a catalog written by another reader gives the same answer as a listing of every run.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import tracker
from tracker.read.index import catalog, container
from tracker.read.index.runtable import RunTable, runtable_file
from tracker.read.reader import Store


def add_run(store: Path, name: str, created: float, run_id: str | None = None, resume: bool = False,
            loss: float = 1.0) -> str:
    with tracker.start_run(project="p", name=name, store=store, run_id=run_id, resume=resume, created_at=created,
                           system_metrics=False, console=False, environment=False) as run:
        run.log({"loss": loss})
        return run.id


def settle(store: Path) -> None:
    """The runs folder's time set a minute back (as a folder nobody added to lately), then a whole listing."""
    old = time.time() - 60
    os.utime(store / "runs", (old, old))
    tracker.open_store(store).runs()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s"
    for i in range(12):
        add_run(path, f"r{i}", 1.7e9 + 60 * (i % 7), loss=float(i))  # equal start times among them
    settle(path)
    return path


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the runs folder is listed and a catalog entry parsed."""
    seen = {"listed": 0, "parsed": 0, "catalogs": 0}
    run_ids, decode, whole = Store.run_ids, catalog.decode_info, Store.catalog

    me = threading.current_thread()  # (a dashboard's reading thread left by another test is not counted)

    def counting_run_ids(self: Store) -> list[str]:
        seen["listed"] += threading.current_thread() is me
        return run_ids(self)

    def counting_decode(*args: object, **kwargs: object) -> object:
        seen["parsed"] += threading.current_thread() is me
        return decode(*args, **kwargs)

    def counting_catalog(self: Store, *args: object, **kwargs: object) -> object:
        seen["catalogs"] += threading.current_thread() is me
        return whole(self, *args, **kwargs)

    monkeypatch.setattr(Store, "run_ids", counting_run_ids)
    monkeypatch.setattr(Store, "catalog", counting_catalog)
    monkeypatch.setattr(catalog, "decode_info", counting_decode)
    return seen


def pages(store: Path, sort: str, limit: int) -> list[str]:
    s = tracker.open_store(store)
    ids, cursor = [], None
    while True:
        page = s.runs(sort=sort, limit=limit, cursor=cursor)
        ids += [i.id for i in page]
        if page.next is None:
            return ids
        cursor = page.next


def whole(store: Path, sort: str) -> list[str]:
    return [i.id for i in tracker.open_store(store).runs(sort=sort)]


def test_the_newest_page_lists_no_folder_and_parses_only_its_runs(store: Path, counted: dict[str, int]) -> None:
    page = tracker.open_store(store).runs(limit=4)
    assert counted == {"listed": 0, "parsed": 4, "catalogs": 0}
    assert page.total == 12 and page.run_ids == sorted(os.listdir(store / "runs"))
    for sort in ("-created_at", "created_at"):
        assert pages(store, sort, 5) == whole(store, sort)


def test_a_run_added_edited_resumed_or_removed_is_seen_by_the_next_page(store: Path, counted: dict[str, int]) -> None:
    first = whole(store, "-created_at")
    new = add_run(store, "new", 1.7e9 + 10_000)  # the newest of all: a folder the table does not list
    old = add_run(store, "old", 1.0)  # the oldest of all
    gone = first[5]
    import shutil

    shutil.rmtree(store / "runs" / gone)  # and one removed
    counted.update(listed=0, parsed=0, catalogs=0)
    page = tracker.open_store(store).runs(limit=3)
    # The runs folder listed, the two new runs derived and placed, the removed one left out: no whole listing.
    assert counted == {"listed": 1, "parsed": 2, "catalogs": 0}
    assert [i.id for i in page] == [new, *first[:2]] and page.total == 13
    assert pages(store, "created_at", 4) == [old, *[r for r in reversed(first) if r != gone], new]
    assert pages(store, "-created_at", 5) == [new, *[r for r in first if r != gone], old]
    assert counted["catalogs"] == 0
    assert pages(store, "-created_at", 5) == whole(store, "-created_at")
    shutil.rmtree(store / "runs" / old)
    settle(store)
    tracker.open_store(store).rename(first[0], "renamed")  # an edit of a run on the first page
    page = tracker.open_store(store).runs(limit=3)
    assert [i.id for i in page] == [new, *first[:2]] and page[1].name == "renamed"
    add_run(store, "ignored", 0, run_id=first[1], resume=True, loss=-5.0)  # resumed: a segment added
    page = tracker.open_store(store).runs(limit=3)
    assert page[2].id == first[1] and page[2].records == 2
    settle(store)
    shutil.rmtree(store / "runs" / new)  # removed
    assert [i.id for i in tracker.open_store(store).runs(limit=3)] == first[:3]  # (gone is first[5])
    assert pages(store, "-created_at", 4) == whole(store, "-created_at") == [r for r in first if r != gone]


def test_a_damaged_or_stale_run_table_changes_no_answer(store: Path, counted: dict[str, int]) -> None:
    want = whole(store, "-created_at")[:5]
    path = runtable_file(store)
    with container.Reader(path) as reader:
        ids_at, names_at = reader.base + reader.arrays["ids"][0], reader.base + reader.arrays["names"][0]
    for at, opens in ((names_at + 2, True), (ids_at, False)):  # a file name of a run, then its ids
        data = bytearray(path.read_bytes())
        data[at] ^= 0x01
        path.write_bytes(bytes(data))
        assert (RunTable.open(store) is not None) is opens  # (the ids are checked by their CRC when read)
        assert [i.id for i in tracker.open_store(store).runs(limit=5)] == want
    settle(store)  # written again by the whole listing
    assert RunTable.open(store) is not None
    assert tracker.open_store(store).runs(limit=5).run_ids is not None
    # A catalog written again (another reader, another layout of its arrays): the table describes it no more.
    cat = catalog.catalog_file(store)
    os.utime(cat, ns=(cat.stat().st_atime_ns, cat.stat().st_mtime_ns + 1))
    assert RunTable.open(store) is None
    assert [i.id for i in tracker.open_store(store).runs(limit=5)] == want
