"""Helpers shared by the fault-injection tests: child processes, hashes, strict reads."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
import textwrap
import time
import warnings
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracker.config import Config

import tracker
from tracker.testing import make_host

from ..childenv import child_environ

CHILD = Path(__file__).with_name("child.py")
REPO = Path(__file__).resolve().parents[2]


def child_env(work: Path, toml: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a child: no inherited tracker settings, an optional tracker.toml."""
    env = child_environ()
    if toml is not None:
        cfg = work / "tracker.toml"
        cfg.write_text(toml)
        env["TRACKER_CONFIG"] = str(cfg)
    env.update(extra)
    return env


def spawn(mode: str, work: Path, out: Path, env: dict[str, str], *args: str,
          stderr: Path | None = None) -> subprocess.Popen:
    """Start ``child.py MODE`` with stdout (the acknowledgements) going to the file ``out``."""
    with open(out, "wb") as so, open(stderr or out.with_suffix(".err"), "wb") as se:
        return subprocess.Popen([sys.executable, str(CHILD), mode, *args], stdout=so, stderr=se,
                                cwd=work, env=env)


def ack_lines(out: Path) -> list[list[str]]:
    """The complete lines a child printed (a line cut by the kill is not an acknowledgement)."""
    data = out.read_bytes()
    return [line.split() for line in data.decode().split("\n")[:-1]]


def wait_for_line(out: Path, proc: subprocess.Popen, timeout: float = 60.0, word: str = "ready") -> None:
    """Wait until the child has printed a line that starts with ``word``."""
    deadline = time.monotonic() + timeout
    mark = word.encode()
    while not any(line.startswith(mark) for line in out.read_bytes().split(b"\n")[:-1]):
        if proc.poll() is not None:
            err = out.with_suffix(".err").read_text(errors="replace")
            raise AssertionError(f"child exited with {proc.returncode} before its first line:\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("child printed nothing in time")
        time.sleep(0.002)


def derived(rel: Path) -> bool:
    """Whether a path lies in a store's derived data (``<store>/index/``), which readers keep up to date.

    Derived data is rebuilt from the segments whenever they change; what must
    stay byte-identical is everything else, the user's data.
    """
    parts = rel.parts
    return any(p == "index" and (i == 0 or parts[i - 1] != "runs") for i, p in enumerate(parts))


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (and the set of folders) but derived data, to prove nothing was changed."""
    out = {}
    for p in sorted(root.rglob("*")):
        if derived(p.relative_to(root)):
            continue
        rel = str(p.relative_to(root))
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def snapshot(root: Path) -> set[str]:
    """Every path under ``root`` but derived data, relative, for before/after comparisons."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if not derived(p.relative_to(root))}


def read_run(store: Path, run_id: str,
             host: tracker.Host | None = None) -> tuple[tracker.RunView, list[tracker.Record]]:
    """A fresh view of a run and all its records, warnings collected in ``view.problems``."""
    view = tracker.RunView(store, run_id, host=host)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tracker.TrackerWarning)
        records = list(view.records())
    return view, records


def assert_at_most_torn_tails(view: tracker.RunView) -> None:
    """Every problem a reader found is a torn last line, at most one per segment."""
    per_segment: dict[str, int] = {}
    for p in view.problems:
        assert p.kind == "torn", f"unexpected problem {p}"
        lines = Path(p.path).read_bytes().count(b"\n")
        assert p.line == lines + 1, f"torn line is not the last line: {p}"
        per_segment[p.path] = per_segment.get(p.path, 0) + 1
    assert all(n == 1 for n in per_segment.values()), view.problems


def strict_json_lines(paths: Iterable[Path]) -> int:
    """Parse every complete line with a strict RFC 8259 parser; returns how many."""

    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON constant {token}")

    n = 0
    for path in paths:
        for line in path.read_bytes().split(b"\n")[:-1]:
            json.loads(line, parse_constant=refuse)
            n += 1
    return n


def same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN, the sign of zero kept, and bool/int/float kept apart."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def local_host(*plugins: object, names: list[str] | None = None, **config: Any) -> tracker.Host:
    """A host with the built-in metrics plugin and ``plugins``, no entry points loaded."""
    return make_host(*plugins, config=Config(**config), names=names)


def cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """Run the ``tracker`` command line in a child process."""
    return subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def verify(store: Path, *run_ids: str, work: Path) -> tuple[int, dict]:
    """``tracker verify --format json`` on the store, in a child process: its exit status and report."""
    res = cli("--store", str(store), "verify", *run_ids, "--format", "json", env=child_env(work), cwd=work)
    assert res.stdout, res.stderr
    return res.returncode, json.loads(res.stdout)


def assert_verify_finds_at_most_torn_tails(store: Path, *run_ids: str, work: Path) -> dict:
    """``tracker verify`` finds nothing but torn last lines, at most one per segment; returns its report."""
    code, report = verify(store, *run_ids, work=work)
    per_segment: dict[str, int] = {}
    for p in report["problems"]:
        assert p["kind"] == "torn", p
        assert p["line"] == Path(p["path"]).read_bytes().count(b"\n") + 1, p
        per_segment[p["path"]] = per_segment.get(p["path"], 0) + 1
    assert all(n == 1 for n in per_segment.values()), report["problems"]
    assert code == (1 if report["problems"] else 0)
    return report


def event_line(event: dict[str, Any]) -> bytes:
    """One store line for ``event``, written by hand after docs/format.md (keys in order, CRC-32 tail).

    The tests build odd lines with it (valid checksums around the wrong shape),
    independently of the store's own encoder.
    """
    body = json.dumps(event, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    head = body[:-1]
    return b'%b,"crc":"%08x"}\n' % (head, zlib.crc32(head))


def event(kind: str, seq: int, *, writer: str, time: Any = 1.7e9, schema: str | None = None,
          step: Any = None, data: Any = None) -> dict[str, Any]:
    """An event with the keys of docs/format.md, in their order."""
    return {"v": 1, "kind": kind, "schema": schema, "step": step, "time": time, "w": writer, "seq": seq,
            "data": {} if data is None else data}


def install(site: Path, dist: str, modules: dict[str, str]) -> None:
    """A distribution as pip leaves it: a .dist-info with METADATA and entry_points.txt, and its modules."""
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    info.joinpath("METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    eps = "".join(f"{name} = plug_{name}\n" for name in modules)
    info.joinpath("entry_points.txt").write_text(f"[tracker]\n{eps}")
    for name, source in modules.items():
        site.joinpath(f"plug_{name}.py").write_text(textwrap.dedent(source))
