"""The writing side of the fault-injection tests, run as a real child process.

``python child.py MODE [options]``. Every mode that logs prints one line per
record to stdout *after* ``log`` has returned; those lines are what the parent
counts as acknowledged. stdout is a file the parent reads after the child has
died, so printing never blocks the child.

Modes:

- ``loop``: print ``pre``, start (or join) a run, print ``ready``, then log
  ``{"c": child, "k": k, "x": k / 7}`` forever with automatic steps (the
  parent SIGKILLs it). With ``--fsync-probe`` every ``os.fsync`` is
  counted and each acknowledgement also carries the count and the size of the
  file at its last fsync.
- ``burst``: start (or join) a run, print ``ready``, wait for the ``--go`` file (if given),
  then log ``{"c": child, "k": k, "x": k / 7}`` in a tight loop forever, printing the
  number of records logged so far after every 500th (fewer lines than ``loop``, so the
  loop runs at full speed).
- ``write``: attach to (or create) a run, log ``--count`` records, finish.
- ``rank``: one data-parallel rank: attach through ``TRACKER_RUN_ID``, wait for
  the parent's go file, log ``--count`` records, finish.
- ``fill``: log until the store refuses (a full disk), then try a few more times.
- ``readonly``: (with ``--uid``, as root: become that user,) then read the store and try to write to it.
- ``heartbeat``: pose as another host, log one record, then sleep (the parent
  watches the heartbeat and kills it).
- ``plugins``: log with whatever plugins are installed (broken ones included)
  and print what the process knows of them as JSON.
- ``clock``: a writer whose wall clock steps: ``time.time`` is replaced before
  tracker is imported. ``--child 0`` starts the run, logs steps 0-4, steps
  its clock back 0.4 s, logs 5-9, jumps to 1000 s after the epoch (a reset
  real-time clock), logs 10-14 and finishes (earlier than it started);
  ``--child 1`` resumes the run with a true clock and logs steps 15-19.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import warnings
from pathlib import Path


def ack(*fields: object) -> None:
    sys.stdout.write(" ".join(str(f) for f in fields) + "\n")
    sys.stdout.flush()


def mode_loop(args: argparse.Namespace) -> None:
    import tracker

    fsyncs = [0, 0]  # count, file size at the last fsync of the segment
    if args.fsync_probe:
        real_fsync = os.fsync

        def counting_fsync(fd: int) -> None:
            real_fsync(fd)
            fsyncs[0] += 1
            fsyncs[1] = os.fstat(fd).st_size

        os.fsync = counting_fsync
    tracker.get_host()
    ack("pre")  # imports done: start_run comes next
    run = tracker.start_run(project="kill", store=args.store, run_id=args.run_id, resume=True)
    ack("ready", run.writer_id)
    k = 0
    while True:
        run.log({"c": args.child, "k": k, "x": k / 7})
        if args.fsync_probe:
            ack(k, fsyncs[0], fsyncs[1])
        else:
            ack(k)
        k += 1


def mode_burst(args: argparse.Namespace) -> None:
    import tracker

    run = tracker.start_run(project="burst", store=args.store, run_id=args.run_id, resume=True)
    ack("ready", run.writer_id)
    while args.go and not os.path.exists(args.go):
        time.sleep(0.001)
    log = run.log
    k = 0
    while True:
        for _ in range(500):
            log({"c": args.child, "k": k, "x": k / 7})
            k += 1
        ack(k)


def mode_write(args: argparse.Namespace) -> None:
    import tracker

    with tracker.start_run(name="n", project="p", store=args.store, run_id=args.run_id, resume=True) as run:
        for k in range(args.count):
            run.log({"c": args.child, "k": k, "x": k * 0.25}, step=k)
    ack("done", run.writer_id)


def mode_rank(args: argparse.Namespace) -> None:
    import tracker

    run = tracker.start_run(store=args.store)  # TRACKER_RUN_ID in the environment: attach
    Path(args.go).with_name(f"ready-{args.child}").touch()
    while not os.path.exists(args.go):
        time.sleep(0.001)
    for i in range(args.count):
        run.log({"rank": args.child, "i": i, "x": i * 0.5}, step=i)
    run.finish()
    ack("done", run.writer_id)


def mode_fill(args: argparse.Namespace) -> None:
    import tracker

    if args.fsize_limit:
        # Python ignores SIGXFSZ, so a write past the limit fails with EFBIG.
        resource.setrlimit(resource.RLIMIT_FSIZE, (args.fsize_limit, args.fsize_limit))
    run = tracker.start_run(store=args.store, run_id=args.run_id)
    ack("ready", run.writer_id)
    k = 0
    errors = []
    while len(errors) < 3:
        try:
            run.log({"k": k, "pad": k * 1.5}, step=k)
        except tracker.StoreError as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            continue
        ack(k)
        k += 1
    print(json.dumps({"errors": errors}), file=sys.stderr)
    try:
        run.finish()
    except tracker.StoreError as exc:
        print(json.dumps({"finish_error": str(exc)}), file=sys.stderr)


def _readonly_warm_up(store: str, run_id: str) -> None:
    """Do, as root, what the other user will do, on a writable copy and on a path that cannot be a store.

    After the privileges are dropped, nothing more can be imported when the checkout (or its
    virtual environment) sits in a folder only its owner can enter, as ``mktemp -d`` makes; so every
    module the reading, the writing and the refusal need is imported here, not guessed in a list.
    """
    import shutil
    import tempfile

    import tracker

    with tempfile.TemporaryDirectory(prefix="tracker-warm-") as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(store, copy)
        view = tracker.open_store(copy).run(run_id)
        _ = (view.info.status, [r.data for r in view.records()], tracker.open_store(copy).runs())
        tracker.start_run(store=copy, run_id="warm").finish()
        tracker.start_run(store=copy, run_id=run_id, resume=True).finish()
        (Path(tmp) / "file").write_text("")
        try:  # a store under a regular file: the same refusal path as a read-only folder
            tracker.start_run(store=Path(tmp) / "file" / "store", run_id="warm").finish()
        except tracker.TrackerError:
            pass


def mode_readonly(args: argparse.Namespace) -> None:
    import tracker

    tracker.get_host()
    if args.uid is not None:  # as root: become another user, so that permission bits apply
        _readonly_warm_up(args.store, args.run_id)
        os.setgroups([])
        os.setgid(args.uid)
        os.setuid(args.uid)
        assert os.geteuid() == args.uid
    before = set(sys.modules)
    out: dict[str, object] = {"uid": os.geteuid()}
    store = tracker.open_store(args.store)
    view = store.run(args.run_id)
    out["status"] = view.info.status
    out["values"] = [r.data["k"] for r in view.records()]
    out["runs"] = [i.id for i in store.runs()]
    for what, call in (
        ("new_run", lambda: tracker.start_run(store=args.store, run_id="fresh")),
        ("resume", lambda: tracker.start_run(store=args.store, run_id=args.run_id, resume=True)),
    ):
        try:
            run = call()
        except tracker.TrackerError as exc:
            out[what] = f"{type(exc).__name__}: {exc}"
        else:
            run.finish()
            out[what] = "wrote"
    out["imported_late"] = _from_files(set(sys.modules) - before)
    print(json.dumps(out))


def _from_files(names: set[str]) -> list[str]:
    """The modules of ``names`` read from a file (not built into the interpreter)."""
    return sorted(n for n in names if getattr(sys.modules.get(n), "__file__", None))


def mode_heartbeat(args: argparse.Namespace) -> None:
    import tracker
    import tracker.write.writer

    tracker.write.writer.hostname = lambda: "other-host.example"  # as if this writer ran elsewhere
    run = tracker.start_run(store=args.store, run_id=args.run_id)
    run.log({"k": 0})
    ack("ready", run.writer_id)
    time.sleep(600)


def mode_plugins(args: argparse.Namespace) -> None:
    warnings.simplefilter("always")
    import tracker

    lost = []
    with tracker.start_run(store=args.store, run_id=args.run_id) as run:
        start = time.perf_counter()
        for k in range(args.count):
            run.log({"k": k}, step=k)
            ack(k)
        elapsed = time.perf_counter() - start
        for name in ("good.point", "dup.point"):
            try:
                run.log_record(name, step=0, value=1.5)
            except tracker.SchemaError as exc:
                lost.append(f"{name}: {exc}")
    infos = [p.to_dict() for p in tracker.list_plugins()]
    import plug_good  # the test's well-behaved plugin: what its handler saw

    seen = [e.kind for e in plug_good.SEEN]
    print(json.dumps({"plugins": infos, "elapsed": elapsed, "refused": lost, "seen": seen}), file=sys.stderr)


def mode_clock(args: argparse.Namespace) -> None:
    real = time.time
    shift = [0.0]
    time.time = lambda: real() + shift[0]  # before tracker is imported: the writer's only clock
    import tracker

    run = tracker.start_run(project="clock", name=f"clock-{args.child}", store=args.store, run_id=args.run_id,
                            resume=True)
    steps = range(15, 20) if args.child else range(15)
    for step in steps:
        if args.child == 0 and step == 5:
            shift[0] = -0.4  # an NTP correction
        elif args.child == 0 and step == 10:
            shift[0] = 1000.0 - real()  # a virtual machine resumed with its clock at the epoch
        run.log({"c": args.child, "k": step}, step=step)
        ack(step, time.time())
    run.finish()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--store", required=True)
    parser.add_argument("--run-id")
    parser.add_argument("--child", type=int, default=0)
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--go")
    parser.add_argument("--fsync-probe", action="store_true")
    parser.add_argument("--fsize-limit", type=int, default=0)
    parser.add_argument("--uid", type=int, default=None)
    args = parser.parse_args()
    {"loop": mode_loop, "burst": mode_burst, "write": mode_write, "rank": mode_rank, "fill": mode_fill,
     "readonly": mode_readonly, "heartbeat": mode_heartbeat, "plugins": mode_plugins,
     "clock": mode_clock}[args.mode](args)


if __name__ == "__main__":
    main()
