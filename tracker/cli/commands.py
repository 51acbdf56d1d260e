"""The core commands of DESIGN.md, one module per command, named after it, each imported when used.

:data:`CORE_COMMANDS` lists them with the first sentence of their help, so that
``tracker --help`` prints the list without importing a single command module
(a test keeps those sentences and the commands' own help in step).
"""

from __future__ import annotations

import importlib

import click

#: Command name -> (module under tracker.cli, click command in it, first sentence of its help).
CORE_COMMANDS: dict[str, tuple[str, str, str]] = {
    "runs": ("runs", "runs_cmd",
             "List runs, newest first: id, name, project, status, start, duration, last step, records, key "
             "metrics."),
    "show": ("show", "show_cmd",
             "Show a run: info, tags, notes, config, summary values, the error of a failed run, every summary."),
    "summary": ("summary", "summary_cmd", "Print the summaries of a run (every schema it holds, or one)."),
    "compare": ("compare", "compare_cmd",
                "Compare runs: their info, config and summaries side by side, one column per run."),
    "tail": ("tail", "tail_cmd", "Print a run's records in log order; with -f, follow new ones from every writer."),
    "plugins": ("plugins", "plugins_cmd",
                "List plugins: distribution, version, status, schemas, summarizers, and broken ones with their "
                "error."),
    "schemas": ("schemas", "schemas_cmd",
                "List record schemas, or show one: fields with types, defaults, constraints and descriptions."),
    "verify": ("verify", "verify_cmd",
               "Check runs (default: all): torn, corrupt or changed lines, gaps and duplicates, missing starts."),
    "export": ("export", "export_cmd",
               "Export one schema's records of a run, one row per record: step, time, then the fields."),
    "artifacts": ("artifacts", "artifacts_cmd",
                  "List a run's artifacts in log order: name, kind, size, sha256, step, where the bytes are."),
    "get": ("get", "get_cmd", "Copy artifact NAME of RUN (its latest version) to PATH, checking every sha256."),
    "artifact": ("artifact", "artifact_group",
                 "List named artifacts, show their versions, move aliases and copy a version out (checked)."),
    "lineage": ("lineage", "lineage_cmd",
                "Show a run's inputs and outputs (or a version's producer and consumers), as far as --depth."),
    "bench": ("bench", "bench_cmd",
              "Measure what logging costs on this machine, next to the floor (one dumps + one write per line)."),
    "ui": ("ui", "ui_cmd", "Serve the dashboard: runs, charts (live while runs go), comparisons, plugin panels."),
    "server": ("server", "server_cmd",
               "Serve a lab: the dashboard, and logging and reading over HTTP(S) for holders of an API key."),
    "keys": ("keys", "keys_group",
             "Make, list and revoke the API keys of `tracker server` (on its store, or over HTTPS with an admin "
             "key)."),
    "import": ("importer", "import_group",
               "Import runs from TensorBoard logs or an MLflow mlruns folder (again: adds nothing)."),
    "query": ("query", "query_cmd",
              "Run SQL over the store: views runs, metrics, records, metric_stats and one per schema (needs DuckDB)."),
    "index": ("index", "index_cmd",
              "Build every run's derived columns and the run catalog ahead of time, with a progress bar."),
    "sync": ("sync", "sync_cmd",
             "Copy every run of the store into a PostgreSQL database, or ship it to a tracker server (idempotent)."),
    "login": ("login", "login_cmd",
              "Check a key with a tracker server and keep it for that server (a file of mode 0600)."),
    "tag": ("tag", "tag_cmd", "Add or remove tags of runs; without --add or --remove, print their tags."),
    "rename": ("rename", "rename_cmd", "Rename a run (NAME: free text on one line, not empty)."),
    "note": ("note", "note_cmd",
             'Set a run\'s notes to TEXT ("-" reads it from stdin); --append adds a line.'),
    "rm": ("rm", "rm_cmd",
           "Move runs to the trash (<store>/trash), by id or by selection; `tracker restore` brings them back."),
    "restore": ("restore", "restore_cmd", "Move runs back from the trash (see `tracker runs --trash`)."),
    "gc": ("gc", "gc_cmd", "Empty the trash for good, then remove blobs that no run in the store references."),
    "sweep": ("sweep", "sweep_group",
              "Create, show, list and stop hyperparameter sweeps (W&B's sweep files, run on Optuna)."),
    "agent": ("sweep", "agent_cmd",
              "Run trials of a sweep until it is done (or --count trials ran); start one per GPU or machine."),
    "alerts": ("alerts", "alerts_cmd",
               "List alerts (of one run, or of every run): time, run, level, title, sent or suppressed, "
               "condition."),
    "watch": ("alerts", "watch_cmd",
              "Check the alert rules of tracker.toml against the store's runs and deliver what fires, until "
              "Ctrl-C."),
    "mcp": ("mcp", "mcp_cmd",
            "Serve the store to assistants over the Model Context Protocol (stdio, or --http on loopback)."),
    "logs": ("logs", "logs_cmd",
             "Print what a run printed to stdout and stderr, in order; with -f, follow it while it runs."),
    "env": ("env", "env_cmd",
            "Show what a run ran on: Python, platform, CPU, memory, GPUs, CUDA, packages, git and command."),
    "diff": ("diff", "diff_cmd",
             "Say why two runs differ: config, packages, git commit and diff, Python, platform, GPU, host, command."),
    "report": ("report", "report_cmd",
               "Write one HTML file of runs: notes, runs or groups, zoomable charts, config that differs, "
               "summaries."),
    "doctor": ("doctor", "doctor_cmd",
               "Say what is installed and working: versions, fast paths, extras, plugins, store, team URL, "
               "Chromium."),
    "du": ("du", "du_cmd",
           "Show the bytes each run and each project takes: JSONL, blobs, index; largest first; the total."),
}


def load_command(name: str) -> click.Command:
    """Import the module of core command ``name`` and return its click command."""
    module, attr, _ = CORE_COMMANDS[name]
    return getattr(importlib.import_module(f"{__package__}.{module}"), attr)


def add_core_commands(cli: click.Group) -> None:
    """Add every core command to ``cli`` now (importing each module); ``tracker`` itself adds them lazily."""
    for name in CORE_COMMANDS:
        cli.add_command(load_command(name), name)
