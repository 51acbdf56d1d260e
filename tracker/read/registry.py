"""Artifact versions, aliases and consumers: derived at read time from append-only records.

Nothing numbers a version when it is written, so nothing needs a lock: each
run keeps what it logged (``artifact`` records), what it used
(``artifact_use`` records) and the alias edits in its edit segments, and
these *figures* (kept per run in the run catalog) are combined here. Per name
(per project), the records are taken in the order they were written (time,
then run id, writer id and sequence number): the first distinct content is
``v0``, the next new one ``v1``, and the same content again is the same
version. Alias changes (aliases given at log time, and alias edits) apply in
the same order; ``latest`` always names the newest version. Every reader,
the team database included, gets the same numbers from the same records.
See docs/artifacts.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from operator import itemgetter
from typing import Any

import attrs
import orjson

from tracker.core.errors import ArtifactNotFound, TrackerError
from tracker.core.format import decode_nonfinite, encode_nonfinite
from tracker.core.rules import LATEST, VERSION_RE
from tracker.read.index.build import gc_paused

#: The schemas of what a run logged and what it used.
ARTIFACT, ARTIFACT_USE = "artifact", "artifact_use"
#: The key of an edit event's data that holds an alias change.
ALIAS_EDIT = "alias"
#: The type of an artifact logged without one.
UNSPECIFIED = "unspecified"
_SHA = re.compile(r"[0-9a-f]{64}")

# Rows of a run's figures (lists, so that the catalog keeps them as short JSON).
_O_NAME, _O_TYPE, _O_SHA, _O_SIZE, _O_TIME, _O_W, _O_SEQ, _O_STEP, _O_KIND, _O_FOLDER, _O_FILES, _O_REF, \
    _O_ALIASES, _O_FILENAME, _O_DESC, _O_META = range(16)
_U_PROJECT, _U_NAME, _U_VERSION, _U_SHA, _U_ALIAS, _U_TIME, _U_W, _U_SEQ, _U_STEP, _U_TYPE = range(10)
_E_PROJECT, _E_NAME, _E_ALIAS, _E_SHA, _E_VERSION, _E_OP, _E_TIME, _E_USER, _E_W, _E_SEQ = range(10)


# --- one run's figures ------------------------------------------------------------------------------

def figures(project: str | None, outs: Iterable[Any], uses: Iterable[Any],
            edits: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """What one run adds to the registry, as plain JSON (``None`` when nothing).

    :param project: the run's project (its artifacts are named in it).
    :param outs: its ``artifact`` records (:class:`tracker.Record`), in log order.
    :param uses: its ``artifact_use`` records.
    :param edits: its edit events (the ``alias`` ones are taken).
    """
    o = []
    for r in outs:
        d = r.data
        sha = d.get("sha256")
        if not isinstance(d.get("name"), str) or not isinstance(sha, str) or not _SHA.fullmatch(sha):
            continue
        meta = d.get("metadata")
        o.append([d["name"], d.get("type"), sha, int(d.get("size") or 0), r.time, r.writer, r.seq, r.step,
                  d.get("kind") or "file", bool(d.get("folder")), int(d.get("files") or 1), d.get("reference"),
                  [a for a in d.get("aliases") or () if isinstance(a, str)], d.get("filename"),
                  d.get("description"), encode_nonfinite(meta) if isinstance(meta, dict) else None])
    u = []
    for r in uses:
        d = r.data
        sha = d.get("sha256")
        if not isinstance(d.get("name"), str) or not isinstance(sha, str) or not _SHA.fullmatch(sha):
            continue
        u.append([d.get("project"), d["name"], d.get("version"), sha, d.get("alias"), r.time, r.writer, r.seq,
                  r.step, d.get("type")])
    e = []
    for ev in edits:
        a = (ev.get("data") or {}).get(ALIAS_EDIT)
        if not isinstance(a, dict) or not isinstance(a.get("name"), str) or not isinstance(a.get("alias"), str):
            continue
        e.append([a.get("project"), a["name"], a["alias"], a.get("sha256"), a.get("version"),
                  "remove" if a.get("op") == "remove" else "set", float(ev.get("time") or 0.0),
                  a.get("user"), str(ev.get("w") or ""), int(ev.get("seq") or 0)])
    if not (o or u or e):
        return None
    return {"p": project, "o": o, "u": u, "e": e}


def run_figures(view: Any, project: str | None, schemas: Iterable[str], edits: Iterable[Mapping[str, Any]] = ()
                ) -> dict[str, Any] | None:
    """The figures of run ``view`` (a reader's run view) from its records and edit events."""
    have = set(schemas)
    outs = view.records(ARTIFACT) if ARTIFACT in have else ()
    uses = view.records(ARTIFACT_USE) if ARTIFACT_USE in have else ()
    return figures(project, outs, uses, edits)


# --- what the registry answers with ------------------------------------------------------------------

@attrs.frozen(kw_only=True)
class Version:
    """One version of a named artifact: a distinct content logged under the name.

    :ivar number: 0 for ``v0``.
    :ivar producer: the run that logged this content first under the name.
    :ivar time: when the producer logged it.
    :ivar reference: the referenced path when no run stored a copy (``copy=False``), else ``None``.
    """

    project: str | None
    name: str
    number: int
    sha256: str
    size: int
    type: str
    kind: str
    folder: bool
    files: int
    reference: str | None
    filename: str | None
    description: str | None
    metadata: dict[str, Any] | None
    producer: str
    time: float
    step: int

    @property
    def version(self) -> str:
        """``"v3"``."""
        return f"v{self.number}"

    @property
    def qualified(self) -> str:
        """``project/name:v3`` (``name:v3`` without a project)."""
        return f"{qualified_name(self.project, self.name)}:{self.version}"


@attrs.frozen(kw_only=True)
class AliasChange:
    """One change of an alias: set on a version (``op="set"``) or removed (``op="remove"``).

    :ivar version: the version it named then (``None`` when its content is not a version any more).
    :ivar how: ``"log"`` (``aliases=`` of ``log_artifact``) or ``"edit"`` (``tracker.set_alias``, ``tracker
        artifact alias``).
    """

    alias: str
    op: str
    version: str | None
    sha256: str | None
    time: float
    user: str | None
    run: str
    how: str


def qualified_name(project: str | None, name: str) -> str:
    """``project/name``, or ``name`` without a project."""
    return f"{project}/{name}" if project else name


class Collection:
    """Every version of one name in one project, its aliases and their history.

    :ivar aliases: alias -> version number, ``latest`` included.
    :ivar history: every alias change, in the order they apply.
    :ivar consumers: sha256 -> the runs that used that content, in the order they first did.
    :ivar loggers: sha256 -> the runs that logged that content under the name, first the producer.
    :ivar type: the type of the newest record logged under the name with one.

    Its :class:`Version` objects are made when asked for (``versions``, ``latest``, ``pick``):
    a registry of 100,000 records answers one name without making the others'.
    """

    __slots__ = ("project", "name", "type", "aliases", "history", "consumers", "loggers", "last_logged", "_rows",
                 "_index", "_copied", "_made")

    def __init__(self, project: str | None, name: str) -> None:
        self.project = project
        self.name = name
        self.type = UNSPECIFIED
        self.aliases: dict[str, int] = {}
        self.history: list[AliasChange] = []
        self.consumers: dict[str, list[str]] = {}
        self.loggers: dict[str, list[str]] = {}
        #: When the newest record under the name was logged (a version, or a content logged again).
        self.last_logged = 0.0
        #: Per version: (its first record's figures row, the producer, the time).
        self._rows: list[tuple[list[Any], str, float]] = []
        self._index: dict[str, int] = {}
        self._copied: set[str] = set()
        self._made: dict[int, Version] = {}

    @property
    def qualified(self) -> str:
        """``project/name`` (``name`` without a project)."""
        return qualified_name(self.project, self.name)

    @property
    def count(self) -> int:
        """How many versions."""
        return len(self._rows)

    def version(self, number: int) -> Version:
        """Version ``number`` (``IndexError`` beyond the last)."""
        v = self._made.get(number)
        if v is None:
            o, producer, t = self._rows[number]
            meta = o[_O_META]
            v = self._made[number] = Version(
                project=self.project, name=self.name, number=number, sha256=o[_O_SHA], size=o[_O_SIZE],
                type=o[_O_TYPE] or self.type, kind=o[_O_KIND], folder=o[_O_FOLDER], files=o[_O_FILES],
                reference=None if o[_O_SHA] in self._copied else o[_O_REF], filename=o[_O_FILENAME],
                description=o[_O_DESC], metadata=decode_nonfinite(meta) if isinstance(meta, dict) else None,
                producer=producer, time=t, step=o[_O_STEP])
        return v

    @property
    def versions(self) -> list[Version]:
        """Every version, ``v0`` first."""
        return [self.version(n) for n in range(len(self._rows))]

    @property
    def latest(self) -> Version:
        """The newest version."""
        return self.version(len(self._rows) - 1)

    def sizes(self) -> set[int]:
        """The sizes of the versions."""
        return {o[_O_SIZE] for o, _, _ in self._rows}

    def latest_summary(self) -> tuple[str, int, str, float]:
        """The newest version's ``(version, size, producer, time)``, without making its :class:`Version`."""
        o, producer, t = self._rows[-1]
        return f"v{len(self._rows) - 1}", o[_O_SIZE], producer, t

    def to_json(self) -> bytes:
        """Everything of the collection but its name, as JSON (what :class:`LazyCollection` decodes)."""
        history = [[h.alias, h.op, h.version, h.sha256, h.time, h.user, h.run, h.how] for h in self.history]
        return orjson.dumps([self.type, self.last_logged, self.aliases, [list(r) for r in self._rows],
                             sorted(self._copied), self.consumers, self.loggers, history])

    def aliases_of(self, number: int) -> list[str]:
        """The aliases naming version ``number``: ``latest`` first, then the others sorted."""
        names = sorted(a for a, n in self.aliases.items() if n == number and a != LATEST)
        return ([LATEST] if self._rows and len(self._rows) - 1 == number else []) + names

    def version_of(self, sha: str) -> Version | None:
        """The version whose content is ``sha``."""
        n = self._index.get(sha)
        return None if n is None else self.version(n)

    def pick(self, spec: str | None) -> Version:
        """The version ``spec`` names: ``None`` or ``latest``, ``v3``, or an alias.

        :raises ArtifactNotFound: naming the versions and aliases there are.
        """
        if spec is None or spec == LATEST:
            return self.latest
        if VERSION_RE.fullmatch(spec):
            n = int(spec[1:])
            if n < len(self._rows):
                return self.version(n)
        elif spec in self.aliases:
            return self.version(self.aliases[spec])
        raise ArtifactNotFound(f"artifact {self.qualified!r} has no version or alias {spec!r} ({self.describe()})")

    def describe(self) -> str:
        """``versions v0-v3; aliases: best, latest, prod``."""
        n = len(self._rows)
        vs = "version v0" if n == 1 else f"versions v0-v{n - 1}"
        return f"{vs}; aliases: {', '.join(sorted(self.aliases))}"

    def __repr__(self) -> str:
        return f"<Collection {self.qualified} ({self.type}) {len(self._rows)} versions>"


class LazyCollection(Collection):
    """A collection of a registry read back from derived data: its summary at once, the rest (versions,
    history, consumers) decoded from its JSON when first asked for."""

    __slots__ = ("_text", "_summary")
    _LAZY = frozenset({"_rows", "_index", "_copied", "history", "consumers", "loggers"})

    def __init__(self, project: str | None, name: str, summary: list[Any], text: bytes) -> None:
        # Only what a listing needs is set here; __getattr__ fills the other slots on first use.
        self.project, self.name = project, name
        self.type, self.last_logged, self.aliases = summary[0], summary[1], dict(summary[2])
        self._summary, self._text = summary, text
        self._made = {}

    def __getattr__(self, attr: str) -> Any:
        if attr not in LazyCollection._LAZY:
            raise AttributeError(attr)
        (_t, _ll, _al, rows, copied, consumers, loggers, history) = orjson.loads(self._text)
        self._rows = [(r[0], r[1], r[2]) for r in rows]
        self._index = {r[0][_O_SHA]: i for i, r in enumerate(rows)}
        self._copied = set(copied)
        self.consumers, self.loggers = consumers, loggers
        self.history = [AliasChange(alias=h[0], op=h[1], version=h[2], sha256=h[3], time=h[4], user=h[5], run=h[6],
                                    how=h[7]) for h in history]
        return object.__getattribute__(self, attr)

    @property
    def count(self) -> int:
        """How many versions."""
        return self._summary[3]

    def latest_summary(self) -> tuple[str, int, str, float]:
        """The newest version's ``(version, size, producer, time)``, from the summary."""
        return self._summary[4], self._summary[5], self._summary[6], self._summary[7]


def split_ref(ref: str) -> tuple[str, str | None]:
    """``"name:v3"`` -> ``("name", "v3")``; ``"name"`` -> ``("name", None)``.

    :raises TrackerError: an empty name or version.
    """
    if not isinstance(ref, str) or not ref.strip():
        raise TrackerError(f"artifact: expected a name such as 'mnist-cnn' or 'mnist-cnn:v3', given {ref!r}")
    base, sep, spec = ref.rpartition(":")
    if not sep:
        return ref, None
    if not base or not spec:
        raise TrackerError(f"artifact {ref!r}: expected NAME, NAME:VERSION or NAME:ALIAS (e.g. 'mnist-cnn:v3')")
    return base, spec


class Registry:
    """Every named artifact of a store, derived from the runs' figures.

    :param figs: run id -> its figures (see :func:`figures`).
    """

    def __init__(self, figs: Mapping[str, Mapping[str, Any]]) -> None:
        self.collections: dict[tuple[str | None, str], Collection] = {}
        #: run id -> RunInfo, when the store that made the registry knows them (for lineage and pages).
        self.infos: dict[str, Any] | None = None
        self._figs = figs
        self._io: bytes | None = None
        self._outputs: dict[str, dict[tuple[tuple[str | None, str], str], None]] | None = None
        self._inputs: dict[str, list[tuple[tuple[str | None, str], str, str | None]]] | None = None
        with gc_paused():
            self._build(figs)

    def _build(self, figs: Mapping[str, Mapping[str, Any]]) -> None:
        # The hot loop (100,000 records of 10,000 runs in a fraction of a second): records grouped by
        # name first, each group sorted by (time, run, writer, seq) in C, one dict lookup per record.
        groups: dict[tuple[str | None, str], list[tuple[Any, ...]]] = {}
        changes: list[tuple[Any, ...]] = []
        uses: list[tuple[Any, ...]] = []
        for run, f in figs.items():
            project = f.get("p")
            for o in f.get("o") or ():
                key = (project, o[_O_NAME])
                g = groups.get(key)
                if g is None:
                    g = groups[key] = []
                g.append((o[_O_TIME], run, o[_O_W], o[_O_SEQ], o))  # types as figures() made them
            for u in f.get("u") or ():
                uses.append((float(u[_U_TIME]), run, u[_U_W] or "", int(u[_U_SEQ] or 0), (u[_U_PROJECT], u[_U_NAME]),
                             u))
            for e in f.get("e") or ():
                changes.append((float(e[_E_TIME]), run, e[_E_W] or "", int(e[_E_SEQ] or 0),
                                (e[_E_PROJECT], e[_E_NAME]), e))
        for key, g in groups.items():
            g.sort(key=_ORDER)
            c = self.collections[key] = Collection(key[0], key[1])
            index, rows, loggers, copied = c._index, c._rows, c.loggers, c._copied
            for t, run, w, seq, o in g:
                sha = o[_O_SHA]
                if sha not in index:
                    index[sha] = len(rows)
                    rows.append((o, run, t))
                    loggers[sha] = [run]
                elif run not in loggers[sha]:
                    loggers[sha].append(run)
                if o[_O_TYPE]:
                    c.type = o[_O_TYPE]
                if not o[_O_REF]:
                    copied.add(sha)
                c.last_logged = t
                if o[_O_ALIASES]:
                    for alias in o[_O_ALIASES]:
                        changes.append((t, run, w, seq, key, [key[0], key[1], alias, sha, None, "set", t, None, w,
                                                              seq, "log"]))
        changes.sort(key=_ORDER)
        for t, run, _w, _seq, key, e in changes:
            c = self.collections.get(key)
            if c is None:
                continue  # an alias of a name that has no version (any more): nothing to show it on
            alias, sha = e[_E_ALIAS], e[_E_SHA]
            number = c._index.get(sha) if isinstance(sha, str) else None
            op = e[_E_OP]
            if op == "set" and number is not None:
                c.aliases[alias] = number
            elif op == "remove":
                c.aliases.pop(alias, None)
            how = e[10] if len(e) > 10 else "edit"
            c.history.append(AliasChange(alias=alias, op=op, version=None if number is None else f"v{number}",
                                         sha256=sha, time=t, user=e[_E_USER], run=run, how=how))
        for c in self.collections.values():
            c.aliases[LATEST] = len(c._rows) - 1
        uses.sort(key=_ORDER)
        for _t, run, _w, _seq, key, u in uses:
            sha = u[_U_SHA]
            c = self.collections.get(key)
            if c is not None and sha in c._index:
                runs = c.consumers.setdefault(sha, [])
                if run not in runs:
                    runs.append(run)

    @property
    def outputs(self) -> dict[str, dict[tuple[tuple[str | None, str], str], None]]:
        """run id -> {(collection key, sha256): None} of what it logged, in log order (made when first asked)."""
        if self._outputs is None and getattr(self, "_io", None) is not None:
            self._load_io()
        if self._outputs is None:
            out: dict[str, dict[tuple[tuple[str | None, str], str], None]] = {}
            for run, f in self._figs.items():
                project = f.get("p")
                rows = f.get("o")
                if rows:
                    out[run] = {((project, o[_O_NAME]), o[_O_SHA]): None for o in rows}
            self._outputs = out
        return self._outputs

    @property
    def inputs(self) -> dict[str, list[tuple[tuple[str | None, str], str, str | None]]]:
        """run id -> [(collection key, sha256, alias used)] of what it used, in log order, each once."""
        if self._inputs is None and getattr(self, "_io", None) is not None:
            self._load_io()
        if self._inputs is None:
            out: dict[str, list[tuple[tuple[str | None, str], str, str | None]]] = {}
            for run, f in self._figs.items():
                mine: list[tuple[tuple[str | None, str], str, str | None]] = []
                for u in f.get("u") or ():
                    key, sha = (u[_U_PROJECT], u[_U_NAME]), u[_U_SHA]
                    if not any(k == key and s == sha for k, s, _ in mine):
                        mine.append((key, sha, u[_U_ALIAS]))
                if mine:
                    out[run] = mine
            self._inputs = out
        return self._inputs

    def to_parts(self) -> tuple[bytes, list[bytes], bytes]:
        """The registry as derived data: a summary of every collection (one JSON text), each collection's
        JSON, and the runs' outputs and inputs (one JSON text). :meth:`loaded` reads them back."""
        keys = sorted(self.collections, key=lambda k: (k[0] or "", k[1]))
        summary, texts = [], []
        for k in keys:
            c = self.collections[k]
            summary.append([k[0], k[1], c.type, c.last_logged, c.aliases, c.count, *c.latest_summary()])
            texts.append(c.to_json())
        io = orjson.dumps([{r: [[k[0], k[1], sha] for k, sha in outs] for r, outs in self.outputs.items()},
                           {r: [[k[0], k[1], sha, alias] for k, sha, alias in ins] for r, ins in self.inputs.items()}])
        return orjson.dumps(summary), texts, io

    @classmethod
    def loaded(cls, summary: bytes, texts: list[bytes], io: bytes) -> Registry:
        """A registry from :meth:`to_parts`' output, each collection decoded only when used.

        :raises ValueError: parts that do not fit together.
        """
        reg = cls.__new__(cls)
        reg.infos = None
        reg._figs = {}
        reg._io = io
        reg._outputs = reg._inputs = None
        rows = orjson.loads(summary)
        if len(rows) != len(texts):
            raise ValueError("a collection without its text")
        reg.collections = {}
        for row, text in zip(rows, texts, strict=True):
            project, name = row[0], row[1]
            reg.collections[(project, name)] = LazyCollection(project, name, row[2:], text)
        return reg

    def _load_io(self) -> None:
        outs, ins = orjson.loads(self._io)
        self._outputs = {r: {((p, n), sha): None for p, n, sha in rows} for r, rows in outs.items()}
        self._inputs = {r: [((p, n), sha, alias) for p, n, sha, alias in rows] for r, rows in ins.items()}

    def names(self, type: str | None = None, project: str | None = None) -> list[Collection]:
        """Every named artifact (of one type, of one project), by project and name."""
        out = [c for c in self.collections.values()
               if (type is None or c.type == type) and (project is None or c.project == project)]
        out.sort(key=lambda c: (c.project or "", c.name))
        return out

    def collection(self, ref: str, project: str | None = None) -> Collection:
        """The named artifact ``ref`` names (``name``, ``project/name``, ``entity/project/name``).

        A name alone is looked for in ``project`` first, then in any project where it is the only one
        of that name.

        :raises ArtifactNotFound: no such name (the message lists names there are); :class:`TrackerError`: a
            name in several projects.
        """
        for key in _candidates(ref):
            c = self._lookup(key, project)
            if c is not None:
                return c
        raise ArtifactNotFound(self._unknown(ref))

    def find(self, ref: str, project: str | None = None) -> tuple[Collection, Version, str | None]:
        """The version ``ref`` names (``name``, ``name:v3``, ``name:prod``, with an optional ``project/``).

        :returns: the collection, the version and the alias or version asked for (``None``: none given).
        :raises ArtifactNotFound: naming what exists when nothing matches.
        """
        base, spec = split_ref(ref)
        c = self.collection(base, project)
        return c, c.pick(spec), spec

    def _lookup(self, key: tuple[str | None, str], project: str | None) -> Collection | None:
        want_project, name = key
        if want_project is not None:
            return self.collections.get((want_project, name))
        if (project, name) in self.collections:
            return self.collections[(project, name)]
        found = [c for (_, n), c in self.collections.items() if n == name]
        if len(found) > 1:
            where = ", ".join(sorted(c.qualified for c in found))
            raise TrackerError(f"artifact {name!r} is a name in several projects ({where}): "
                               "say which, as PROJECT/NAME")
        return found[0] if found else None

    def _unknown(self, ref: str) -> str:
        names = sorted(c.qualified for c in self.collections.values())
        if not names:
            return f"no artifact named {ref!r}: the store holds no artifacts yet (log one with " \
                   "run.log_artifact(path, name=..., type=...))"
        shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
        return f"no artifact named {ref!r} (artifacts: {shown})"

    def version_of(self, key: tuple[str | None, str], sha: str) -> Version | None:
        """The version of content ``sha`` under the name ``key``."""
        c = self.collections.get(key)
        return c.version_of(sha) if c is not None else None


#: The order records apply in: time, run id, writer id, sequence number (the first four of a row).
_ORDER = itemgetter(0, 1, 2, 3)


def _candidates(ref: str) -> list[tuple[str | None, str]]:
    """The (project, name) pairs ``ref`` may mean: the whole text as a name (names may hold ``/``),
    then ``project/name``, then W&B's ``entity/project/name``."""
    out: list[tuple[str | None, str]] = [(None, ref)]
    parts = ref.split("/")
    if len(parts) >= 2 and parts[0] and parts[1]:
        out.append((parts[0], "/".join(parts[1:])))
    if len(parts) >= 3 and parts[1] and parts[2]:
        out.append((parts[1], "/".join(parts[2:])))
    return out


__all__ = ["ALIAS_EDIT", "ARTIFACT", "ARTIFACT_USE", "UNSPECIFIED", "AliasChange", "Collection", "LazyCollection",
           "Registry",
           "Version", "figures", "qualified_name", "run_figures", "split_ref"]

