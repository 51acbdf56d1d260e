"""The command line starts with only what it needs: no plugin, no numpy, no other command's module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import tracker

PROBE = textwrap.dedent("""
    import json, sys
    from tracker.cli import main
    from tracker.cli.commands import CORE_COMMANDS
    CORE_MODULES = {module for module, _, _ in CORE_COMMANDS.values()}
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
    heavy = sorted(m for m in sys.modules if m == "numpy" or m.startswith("tracker_") or m == "matplotlib")
    commands = sorted(m.rsplit(".", 1)[1] for m in sys.modules
                      if m.startswith("tracker.cli.") and m.rsplit(".", 1)[1] in CORE_MODULES)
    print(json.dumps({"code": code, "heavy": heavy, "commands": commands}), file=sys.stderr)
""")


def _probe(args: list[str], cwd: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TRACKER_STORE", "TRACKER_CONFIG", "TRACKER_RUN_ID")}
    env.setdefault("XDG_CACHE_HOME", str(cwd / "cache"))
    env.update(extra)
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=env)
    out = json.loads(proc.stderr.strip().splitlines()[-1])
    out["stdout"] = proc.stdout
    return out


def test_runs_imports_no_plugin_and_no_numpy(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with tracker.start_run(store=store, name="one") as run:
        run.log({"loss": 0.5})
    # The first listing after a run finished builds the store's run catalog (with numpy); the ones after read it.
    tracker.open_store(store).runs()
    out = _probe(["--store", str(store), "runs", "--format", "json"], tmp_path)
    assert (out["code"], out["heavy"], out["commands"]) == (0, [], ["runs"])


def test_summary_loads_the_plugins_it_needs(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with tracker.start_run(store=store) as run:
        run.log({"loss": 0.5})
    out = _probe(["--store", str(store), "summary", run.id, "--format", "json"], tmp_path)
    assert out["code"] == 0 and "numpy" in out["heavy"]


def test_help_lists_plugins_commands_without_importing_them(tmp_path: Path) -> None:
    first = _probe(["--help"], tmp_path)  # no cache yet: the plugins load once and their commands are noted
    assert first["code"] == 0 and "tracker_fft_study" in str(first["heavy"])
    again = _probe(["--help"], tmp_path)
    assert (again["code"], again["heavy"], again["commands"]) == (0, [], [])
    assert again["stdout"] == first["stdout"]
    listed = {line.split()[0] for line in again["stdout"].split("Commands:")[1].splitlines() if line.strip()}
    assert {"runs", "show", "query", "du", "import", "fft", "ptq"} <= listed
    # A plugin command runs from a cold start: resolving a name that is not a core one loads the plugins.
    fft = _probe(["fft", "--help"], tmp_path)
    assert fft["code"] == 0 and "report" in fft["stdout"]


def test_the_cache_follows_tracker_toml(tmp_path: Path) -> None:
    _probe(["--help"], tmp_path)
    (tmp_path / "tracker.toml").write_text('[plugins]\ndisable = ["ptq"]\n')
    changed = _probe(["--help"], tmp_path)
    listed = {line.split()[0] for line in changed["stdout"].split("Commands:")[1].splitlines() if line.strip()}
    assert "fft" in listed and "ptq" not in listed
    assert "tracker_ptq" not in str(changed["heavy"])
    cached = _probe(["--help"], tmp_path)
    assert cached["heavy"] == [] and cached["stdout"] == changed["stdout"]


def test_a_cache_that_cannot_be_read_or_written_is_not_used(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    out = _probe(["--help"], tmp_path, XDG_CACHE_HOME=str(blocked))
    assert out["code"] == 0 and "ptq" in out["stdout"]


def test_core_commands_help_sentences_match_the_commands() -> None:
    import click

    from tracker.cli.commands import CORE_COMMANDS, load_command

    for name, (_, _, sentence) in CORE_COMMANDS.items():
        cmd = load_command(name)
        assert cmd.name == name
        for limit in (40, 60, 1000):
            assert click.Command(name, help=sentence).get_short_help_str(limit) == cmd.get_short_help_str(limit), name


def test_import_tracker_loads_nothing_until_a_name_is_used() -> None:
    code = textwrap.dedent("""
        import sys, tracker
        loaded = sorted(m for m in sys.modules if m.startswith("tracker"))
        names = {n: type(getattr(tracker, n)).__name__ for n in tracker.__all__}
        import tracker.config, tracker.summary
        print(loaded, type(tracker.config).__name__, type(tracker.summary).__name__,
              tracker.core.config.load_config.__name__, sorted(set(tracker.__all__) - set(dir(tracker))))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["['tracker']", "ActiveProxy", "ActiveProxy", "load_config", "[]"]
