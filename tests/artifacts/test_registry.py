"""Versions, aliases and consumers derived from runs' figures: numbering by write order, whatever the order
the runs are read in; the same content is the same version; aliases move; refs resolve or name what exists."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracker import TrackerError
from tracker.read.registry import Registry, split_ref


def sha(n: int) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()


def out(name: str, content: int, t: float, seq: int, aliases: list[str] | None = None, type_: str = "model",
        w: str = "w") -> list:
    return [name, type_, sha(content), 10 + content, t, w, seq, 0, "file", False, 1, None, aliases or [], None,
            None, None]


def use(project: str, name: str, content: int, t: float, seq: int, alias: str | None = "latest") -> list:
    return [project, name, "v?", sha(content), alias, t, "w", seq, 0, "model"]


def edit(project: str, name: str, alias: str, content: int, t: float, op: str = "set") -> list:
    return [project, name, alias, sha(content), "v?", op, t, "me", "edits-x", 1]


# A log: (run, time, name, content) -- times collide on purpose (ties go to run id, writer, seq).
logs = st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3", "r4"]), st.integers(0, 5),
                          st.sampled_from(["a", "b"]), st.integers(0, 6)), min_size=1, max_size=30)


def figures_of(entries: list[tuple[str, int, str, int]]) -> dict[str, dict]:
    figs: dict[str, dict] = {}
    for seq, (run, t, name, content) in enumerate(entries):
        figs.setdefault(run, {"p": "proj", "o": [], "u": [], "e": []})["o"].append(out(name, content, float(t), seq))
    return figs


@settings(max_examples=200, deadline=None)
@given(logs, st.randoms(use_true_random=False))
def test_numbering_is_write_order_and_independent_of_read_order(entries, rnd) -> None:
    figs = figures_of(entries)
    shuffled = list(figs.items())
    rnd.shuffle(shuffled)
    a, b = Registry(figs), Registry(dict(shuffled))
    for key, c in a.collections.items():
        other = b.collections[key]
        assert [(v.number, v.sha256, v.producer) for v in c.versions] == \
            [(v.number, v.sha256, v.producer) for v in other.versions]
    # The oracle: every record in (time, run, writer, seq) order; a content's first record makes its version.
    order = sorted(((t, run, seq, name, content) for seq, (run, t, name, content) in enumerate(entries)))
    expect: dict[str, list[tuple[str, str]]] = {}
    for _t, run, _seq, name, content in order:
        seen = expect.setdefault(name, [])
        if sha(content) not in [s for s, _ in seen]:
            seen.append((sha(content), run))
    for name, versions in expect.items():
        c = a.collections[("proj", name)]
        assert [(v.sha256, v.producer) for v in c.versions] == versions
        assert c.aliases["latest"] == len(versions) - 1
        assert len({v.sha256 for v in c.versions}) == len(c.versions)  # the same content is one version


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["prod", "best"]), st.integers(0, 3), st.sampled_from(["set", "remove"]),
                          st.integers(0, 50)), max_size=15))
def test_an_alias_names_one_version_the_last_change_wins(changes) -> None:
    figs = {"r1": {"p": None, "o": [out("m", i, float(i), i) for i in range(4)], "u": [],
                   "e": [edit(None, "m", alias, content, 100.0 + t, op) for alias, content, op, t in changes]}}
    c = Registry(figs).collections[(None, "m")]
    for alias in ("prod", "best"):
        mine = sorted(((t, op, content) for a, content, op, t in changes if a == alias), key=lambda x: x[0])
        # Ties of time keep the figures' order (seq is 1 for every edit here), so take a stable sort's last.
        if not mine:
            assert alias not in c.aliases
            continue
        _, op, content = mine[-1]
        if op == "remove":
            assert alias not in c.aliases
        else:
            assert c.aliases[alias] == content
    assert c.aliases["latest"] == 3
    assert len(c.history) == len(changes)


def test_aliases_at_log_time_move_and_history_is_kept() -> None:
    figs = {"r1": {"p": "p", "o": [out("m", 1, 1.0, 1, ["best"]), out("m", 2, 2.0, 2, ["best"])], "u": [], "e": []},
            "r2": {"p": "p", "o": [out("m", 1, 3.0, 1, ["best"])], "u": [use("p", "m", 2, 4.0, 2, "latest")],
                   "e": []}}
    reg = Registry(figs)
    c = reg.collections[("p", "m")]
    assert [v.version for v in c.versions] == ["v0", "v1"]
    assert c.aliases == {"best": 0, "latest": 1}  # r2 logged v0's content again with "best": it moved back
    assert [(h.alias, h.version, h.how) for h in c.history] == [("best", "v0", "log"), ("best", "v1", "log"),
                                                                 ("best", "v0", "log")]
    assert c.loggers[sha(1)] == ["r1", "r2"] and c.versions[0].producer == "r1"
    assert c.consumers == {sha(2): ["r2"]}
    assert list(reg.outputs["r2"]) == [(("p", "m"), sha(1))] and reg.inputs["r2"] == [(("p", "m"), sha(2), "latest")]


def test_refs_resolve_by_name_version_alias_and_project() -> None:
    figs = {"r1": {"p": "a", "o": [out("m", 1, 1.0, 1), out("m", 2, 2.0, 2, ["prod"])], "u": [], "e": []},
            "r2": {"p": "b", "o": [out("m", 3, 3.0, 1), out("d/x", 4, 4.0, 2, type_="dataset")], "u": [], "e": []}}
    reg = Registry(figs)
    assert reg.find("a/m:v0")[1].sha256 == sha(1)
    assert reg.find("a/m:prod")[1].sha256 == sha(2)
    assert reg.find("ent/a/m:latest")[1].sha256 == sha(2)  # W&B's entity/project/name: entity ignored
    assert reg.find("m", project="b")[1].sha256 == sha(3)  # a name alone: the run's project first
    assert reg.find("d/x")[1].sha256 == sha(4)  # a name with a slash is a name first
    assert reg.find("b/d/x:v0")[1].sha256 == sha(4)
    with pytest.raises(TrackerError, match=r"'m' is a name in several projects \(a/m, b/m\)"):
        reg.find("m")
    with pytest.raises(TrackerError, match=r"no artifact named 'nope' \(artifacts: a/m, b/d/x, b/m\)"):
        reg.find("nope")
    with pytest.raises(TrackerError,
                       match=r"'a/m' has no version or alias 'v7' \(versions v0-v1; aliases: latest, prod\)"):
        reg.find("a/m:v7")
    with pytest.raises(TrackerError, match="expected NAME"):
        split_ref("m:")
    assert [c.qualified for c in reg.names(type="dataset")] == ["b/d/x"]
    assert [c.qualified for c in reg.names(project="a")] == ["a/m"]


def test_an_edit_naming_content_that_is_gone_changes_nothing() -> None:
    figs = {"r1": {"p": None, "o": [out("m", 1, 1.0, 1)], "u": [use(None, "m", 9, 2.0, 2)],
                   "e": [edit(None, "m", "prod", 9, 3.0)]}}
    c = Registry(figs).collections[(None, "m")]
    assert c.aliases == {"latest": 0} and c.consumers == {}
    assert c.history[0].version is None  # shown in the history, naming no version



def _answers(reg: Registry) -> list:
    out = []
    for c in reg.names():
        out.append((c.qualified, c.type, c.count, c.latest_summary(), c.aliases, c.last_logged,
                    [(v.version, v.sha256, v.size, v.producer, v.time, v.type, v.reference) for v in c.versions],
                    [(h.alias, h.op, h.version, h.run, h.how) for h in c.history], c.consumers, c.loggers))
    return out + [reg.outputs, reg.inputs]


@settings(max_examples=100, deadline=None)
@given(logs, st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 6), st.sampled_from(["prod", "x"]),
                                st.sampled_from(["set", "remove"])), max_size=6))
def test_a_registry_read_back_from_its_parts_answers_the_same(entries, edits) -> None:
    figs = figures_of(entries)
    for i, (name, content, alias, op) in enumerate(edits):
        figs.setdefault("r9", {"p": "proj", "o": [], "u": [], "e": []})["e"].append(
            edit("proj", name, alias, content, 50.0 + i, op))
        figs["r9"]["u"].append(use("proj", name, content, 60.0 + i, i))
    reg = Registry(figs)
    back = Registry.loaded(*reg.to_parts())
    assert _answers(back) == _answers(reg)
    for key in reg.collections:
        ref = f"{key[0]}/{key[1]}:latest"
        assert back.find(ref)[1] == reg.find(ref)[1]
