"""Console capture in real child processes: the terminal's bytes, kill -9, descriptors, threads, fork, limits."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tracker

from .conftest import child_env, killed_when_ready, only_run, run_py, script, states, texts


def _read_pty(master: int, proc: subprocess.Popen, timeout: float = 60) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed its side
                break
            if not data:
                break
            out += data
        elif proc.poll() is not None:
            # drain what is left
            try:
                while select.select([master], [], [], 0.1)[0]:
                    data = os.read(master, 65536)
                    if not data:
                        break
                    out += data
            except OSError:
                pass
            break
    proc.wait(10)
    return out


TERMINAL = """
import sys, tracker
run = tracker.start_run(project="p", console=sys.argv[1] if sys.argv[1] == "fd" else sys.argv[1] == "on")
print("isatty", sys.stdout.isatty(), sys.stderr.isatty())
print("\\x1b[32mgreen\\x1b[0m and plain")
for i in range(4):
    sys.stdout.write(f"\\r[{'#' * i}{'.' * (3 - i)}] {i}/3")
    sys.stdout.flush()
print()
print("to stderr", file=sys.stderr)
run.finish()
print("after finish")
"""


@pytest.mark.parametrize("mode", ["on", "fd"])
def test_a_terminal_gets_exactly_the_same_bytes_and_isatty_holds(tmp_path: Path, store: Path, mode: str) -> None:
    path = script(tmp_path, TERMINAL)
    got = {}
    for variant in ("off", mode):
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, str(path), variant], stdin=slave, stdout=slave, stderr=slave,
                                env=child_env(store), cwd=tmp_path)
        os.close(slave)
        try:
            got[variant] = _read_pty(master, proc)
        finally:
            os.close(master)
        assert proc.returncode == 0, got[variant]
    assert b"isatty True True" in got["off"]
    assert got[mode] == got["off"]
    runs = tracker.Store(store).runs()
    captured = next(r for r in runs if r.records)
    view = tracker.Store(store).run(captured.id)
    assert texts(view, "stdout") == ["isatty True True", "\x1b[32mgreen\x1b[0m and plain", "[###] 3/3"]
    assert texts(view, "stderr") == ["to stderr"]
    assert "after finish" not in texts(view)


KILLED = """
import sys, time, tracker
run = tracker.start_run(project="p")
print("the line before the kill")
sys.stdout.write("an unfinished line")
sys.stdout.flush()
time.sleep(1.0)  # lines are on disk within 0.5 s (benchmarks/bench_provenance.py measures it); twice that here
open(sys.argv[1], "w").close()
time.sleep(60)
"""


def test_kill_9_a_second_after_a_print_keeps_the_line(tmp_path: Path, store: Path) -> None:
    killed_when_ready(tmp_path, KILLED, store)
    view = only_run(store)
    assert view.info.status == "crashed"
    assert texts(view) == ["the line before the kill", "an unfinished line"]
    records = [r.data for r in view.records("console")]
    assert records[-1].get("partial") is True


FD = """
import os, subprocess, sys, tracker
run = tracker.start_run(project="p", console="fd")
print("from python", flush=True)
os.write(1, b"raw fd one\\n")
os.write(2, b"raw fd two\\n")
subprocess.run(["sh", "-c", "echo from the child; echo child error >&2"], check=True)
os.write(1, b"bad \\xff\\xfe bytes\\n")
run.finish()
print("after finish")
"""


def test_fd_capture_takes_c_level_writes_and_child_processes(tmp_path: Path, store: Path) -> None:
    proc = run_py(script(tmp_path, FD), store)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"from python\nraw fd one\nfrom the child\nbad \xff\xfe bytes\nafter finish\n"
    assert proc.stderr == b"raw fd two\nchild error\n"
    view = only_run(store)
    assert texts(view, "stdout") == ["from python", "raw fd one", "from the child", "bad \ufffd\ufffd bytes"]
    err = texts(view, "stderr")
    assert err[:2] == ["raw fd two", "child error"]
    notes = [t for t in err if t.startswith("tracker:")]
    assert len(notes) == 1 and "not valid UTF-8" in notes[0] and "stdout" in notes[0]


THREADS = """
import sys, threading, tracker
run = tracker.start_run(project="p")
def work(i):
    for j in range(400):
        sys.stdout.write(f"thread {i} line {j} " + "x" * (j % 50) + "\\n")
        if j % 50 == 0:
            sys.stderr.write(f"thread {i} warning {j}\\n")
ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in ts: t.start()
for t in ts: t.join()
run.finish()
"""


@pytest.mark.parametrize("pure", [False, True], ids=["c", "pure-python"])
def test_many_threads_lose_and_duplicate_nothing(tmp_path: Path, store: Path, pure: bool) -> None:
    env = child_env(store, **({"TRACKER_PURE_PYTHON": "1"} if pure else {}))
    proc = run_py(script(tmp_path, THREADS), store, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    view = only_run(store)
    # Every line written, exactly once, in each thread's order. (What the terminal gets is not compared:
    # CPython's TextIOWrapper itself can garble bytes when threads write to it at once, capture or not.)
    out, err = texts(view, "stdout"), texts(view, "stderr")
    assert sorted(out) == sorted(f"thread {i} line {j} " + "x" * (j % 50) for i in range(8) for j in range(400))
    assert sorted(err) == sorted(f"thread {i} warning {j}" for i in range(8) for j in range(0, 400, 50))
    for i in range(8):
        mine = [ln for ln in out if ln.startswith(f"thread {i} ")]
        assert mine == [f"thread {i} line {j} " + "x" * (j % 50) for j in range(400)]


SURROGATES = """
import sys, tracker
sys.stdout.reconfigure(errors="surrogateescape")
run = tracker.start_run(project="p")
print("caf\\udce9 au lait")
print("fine")
print("caf\\udce9 again")
sys.stdout.flush()
sys.stdout.close()
run.log({"after_close": 1.0})
run.finish()
"""


def test_undecodable_text_is_replaced_and_named_once_and_a_closed_stdout_breaks_nothing(tmp_path: Path,
                                                                                      store: Path) -> None:
    proc = run_py(script(tmp_path, SURROGATES), store)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"caf\xe9 au lait\nfine\ncaf\xe9 again\n"
    assert b"Traceback" not in proc.stderr
    view = only_run(store)
    assert view.info.status == "finished"
    assert texts(view, "stdout") == ["caf\ufffd au lait", "fine", "caf\ufffd again"]
    notes = texts(view, "stderr")
    assert len(notes) == 1 and "U+FFFD" in notes[0]
    assert view.metrics()["after_close"].tolist() == [1.0]


FORK = """
import os, sys, tracker
run = tracker.start_run(project="p")
print("parent before the fork")
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    print("from the child", flush=True)
    sys.stdout.write("child unfinished")
    sys.stdout.flush()
    print(" and finished", flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("parent after the fork")
run.finish()
"""


def test_a_forked_child_keeps_its_lines_apart_and_nothing_is_written_twice(tmp_path: Path, store: Path) -> None:
    proc = run_py(script(tmp_path, FORK), store)
    assert proc.returncode == 0, proc.stderr
    view = only_run(store)
    by_writer: dict[str, list[str]] = {}
    from tracker.read.console import console_lines

    for ln in console_lines(view):
        by_writer.setdefault(ln.writer, []).append(ln.text)
    assert sorted(by_writer.values()) == [["from the child", "child unfinished and finished"],
                                          ["parent before the fork", "parent after the fork"]]


LIMITS = """
import sys, time, tracker
run = tracker.start_run(project="p")
for i in range(6):
    sys.stdout.write(f"\\rprogress {i}/5")
    sys.stdout.flush()
    time.sleep(0.15)
print()
print("L" * 100_000 + "é" * 20_000)
for i in range(200):
    print(f"line {i:03d} " + "y" * 40)
run.finish()
"""


def test_progress_bars_collapse_long_lines_split_and_the_cap_stops_capture_with_one_line(tmp_path: Path,
                                                                                      store: Path) -> None:
    (tmp_path / "tracker.toml").write_text("[run]\nconsole_max_bytes = 145000\n")
    proc = run_py(script(tmp_path, LIMITS), store)
    assert proc.returncode == 0, proc.stderr
    view = only_run(store)
    records = states(view)
    progress = [d for d in records if d["text"].startswith("progress")]
    # Rewritten with \r for 0.9 s: its last state, and at most one earlier state per 0.4 s.
    assert progress[-1]["text"] == "progress 5/5" and not progress[-1].get("partial")
    assert 1 <= len(progress) <= 4 and all(d.get("partial") for d in progress[:-1])
    long = [d["text"] for d in records if d["text"][:1] in ("L", "é")]
    assert all(len(t.encode()) <= 64 * 1024 for t in long) and len(long) == 3
    assert "".join(long) == "L" * 100_000 + "é" * 20_000
    kept = sum(len(d["text"].encode()) for d in records if not d["text"].startswith("tracker:"))
    notes = [d["text"] for d in records if d["text"].startswith("tracker:")]
    assert kept <= 145_000 and len(notes) == 1 and "console_max_bytes" in notes[0]
    assert records[-1]["text"] == notes[0]
    assert any(d["text"].startswith("line 0") for d in records)
    assert not any(d["text"].startswith("line 199") for d in records)
    # the terminal got everything
    assert proc.stdout.count(b"\n") == 1 + 1 + 200


RANK = """
import sys, tracker
run = tracker.start_run(project="p", run_id="ranks", resume=True)
for i in range(100):
    print(f"rank {sys.argv[1]} line {i}")
run.finish()
"""


def test_ranks_of_one_run_keep_their_lines_apart(tmp_path: Path, store: Path) -> None:
    path = script(tmp_path, RANK)
    procs = [subprocess.Popen([sys.executable, str(path), str(r)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=child_env(store), cwd=tmp_path) for r in range(2)]
    for p in procs:
        assert p.wait(60) == 0
    from tracker.read.console import console_lines

    view = tracker.Store(store).run("ranks")
    by_writer: dict[str, list[str]] = {}
    for ln in console_lines(view):
        by_writer.setdefault(ln.writer, []).append(ln.text)
    assert len(by_writer) == 2
    for lines in by_writer.values():
        rank = lines[0].split()[1]
        assert lines == [f"rank {rank} line {i}" for i in range(100)]


SIGNALS = """
import atexit, signal, sys, tracker
run = tracker.start_run(project="p")
hits = []
def handler(signum, frame):
    hits.append(1)
    print(f"from the handler {len(hits)}")
signal.signal(signal.SIGALRM, handler)
signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
for i in range(30000):
    print(f"line {i} é")
    if i % 1000 == 0:
        print(f"warn {i}", file=sys.stderr)
signal.setitimer(signal.ITIMER_REAL, 0)
atexit.register(lambda: print("at exit"))
print("handler ran", len(hits), file=sys.stderr)
"""


def test_prints_from_a_signal_handler_and_at_exit_keep_their_place_among_both_streams(tmp_path: Path,
                                                                                       store: Path) -> None:
    proc = run_py(script(tmp_path, SIGNALS), store)
    assert proc.returncode == 0, proc.stderr
    view = only_run(store)
    # A handler's print can land inside a line of the loop (between its text and its newline), or fail in
    # the stream's own write (CPython's buffer refuses a reentrant call; text it took may then never reach
    # the terminal, with capture or without): the run keeps every print whose write returned.
    hits = int(proc.stderr.decode().split("handler ran ")[1].split()[0])
    handler = re.compile(r"from the handler (\d+)")
    kept = "\n".join(texts(view, "stdout")) + "\n"
    numbers = [int(k) for k in handler.findall(kept)]
    assert set(numbers) >= {int(k) for k in handler.findall(proc.stdout.decode(errors="replace"))}
    assert len(set(numbers)) == len(numbers) > 0 and max(numbers) <= hits, (numbers, hits)
    body = [ln for ln in handler.sub("", kept).split("\n") if ln]
    assert body == [*(f"line {i} é" for i in range(30000)), "at exit"]
    assert texts(view, "stderr") == [*(f"warn {i}" for i in range(0, 30000, 1000)), f"handler ran {hits}"]
    # and the two streams in the order they were written
    both = [ln for ln in (handler.sub("", t) for t in texts(view)) if ln]
    at = both.index("warn 1000")
    assert both[at - 1:at + 2] == ["line 1000 é", "warn 1000", "line 1001 é"]
    assert both[-2:] == [f"handler ran {hits}", "at exit"]


WRITER_LOCK = """
import sys, tracker
run = tracker.start_run(project="p")
with run._att.writer.lock:  # a handler that prints while a record is being written
    for i in range(20000):
        print(f"{i:05d} " + "x" * 100)  # 2 MB: past the tee's 1 MiB twice
print("after")
run.finish()
"""


def test_a_print_while_the_runs_writer_is_locked_leaves_the_work_to_the_flusher(tmp_path: Path,
                                                                               store: Path) -> None:
    proc = run_py(script(tmp_path, WRITER_LOCK), store, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert texts(only_run(store)) == [f"{i:05d} " + "x" * 100 for i in range(20000)] + ["after"]
