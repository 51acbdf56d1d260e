"""``tracker import tensorboard LOGDIR`` and ``tracker import mlflow MLRUNS``: other trackers' runs, once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import fail, handle_errors, one_line
from tracker.cli.terminal import progress

FORMATS = ("table", "json")


@click.group("import")
def import_group() -> None:
    """Import runs from TensorBoard logs or an MLflow mlruns folder (again: adds nothing).

    \b
    Examples:
      tracker import tensorboard runs/ --project resnet
      tracker import mlflow mlruns/ --experiment baseline
    """


@import_group.command("tensorboard")
@click.argument("logdir", type=click.Path(file_okay=False, path_type=str))
@click.option("--project", default=None, help="Project of the imported runs (default: LOGDIR's name).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.pass_obj
@handle_errors
def tensorboard_cmd(obj: CliContext, logdir: str, project: str | None, fmt: str) -> None:
    """Import every folder of LOGDIR that holds event files as a run.

    Scalars become metrics named as their tags (train/loss), with their steps
    and wall times; hparams become the config; the folder's path is the run's
    name. LOGDIR is only read.

    \b
    Example:
      tracker import tensorboard runs/ --project resnet
    """
    from tracker.integrations.importers.tensorboard import tensorboard_runs

    _run_import(obj, lambda report: tensorboard_runs(logdir, project=project, problem=report), fmt)


@import_group.command("mlflow")
@click.argument("mlruns", type=click.Path(path_type=str))
@click.option("--experiment", default=None, help="Only the runs of this experiment (by name).")
@click.option("--project", default=None, help="Project of the imported runs (default: the experiment's name).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.pass_obj
@handle_errors
def mlflow_cmd(obj: CliContext, mlruns: str, experiment: str | None, project: str | None, fmt: str) -> None:
    """Import every run of an MLflow store: an mlruns folder, or MLflow's SQLite database.

    MLRUNS is a file store's folder, an mlflow.db file (MLflow 3's default
    backend) or a sqlite:/// tracking URI. Metrics with their steps and
    timestamps, params as config, tags as tags, the run's name, status,
    start and end times, local artifacts as artifacts. MLRUNS is only read.

    \b
    Examples:
      tracker import mlflow mlruns/ --experiment baseline
      tracker import mlflow mlflow.db
    """
    from tracker.integrations.importers.mlflow import mlflow_runs

    _run_import(obj, lambda report: mlflow_runs(mlruns, experiment=experiment, project=project, problem=report),
                fmt)


def _run_import(obj: CliContext, sources: Any, fmt: str) -> None:
    from tracker.integrations.importers import import_runs

    problems: list[str] = []

    def report(message: str) -> None:
        problems.append(message)
        click.echo(f"tracker: warning: {one_line(message)}", err=True)

    obj.host  # noqa: B018 - builds the host with --config before runs are written
    try:
        runs = list(sources(report))
    except ImportError as exc:
        fail(str(exc))
    total = sum(r.size for r in runs)
    with progress(total, "importing") as bar:
        results = import_runs(iter(runs), store=obj.store_path, progress=bar.update, report=report)
    if fmt == "json":
        click.echo(json.dumps({"runs": [_as_dict(r) for r in results], "problems": problems}, indent=2))
    else:
        for line in _table(results):
            click.echo(line)
    if problems:
        raise SystemExit(1)


def _as_dict(result: Any) -> dict[str, Any]:
    return {"run_id": result.run_id, "name": result.name, "outcome": result.outcome, "records": result.records,
            "source": result.source, "problems": result.problems, "skipped": result.skipped}


def _table(results: list[Any]) -> Iterator[str]:
    done = {o: sum(1 for r in results if r.outcome == o) for o in ("imported", "skipped", "failed")}
    for r in results:
        what = {"imported": f"imported  {r.records} records", "skipped": "already imported, nothing added",
                "failed": "not imported"}[r.outcome]
        if r.skipped:
            what += " (not imported: " + ", ".join(f"{n} {k}" for k, n in sorted(r.skipped.items())) + ")"
        yield f"{r.run_id}  {r.name or ''}  {what}"
    yield (f"{done['imported']} imported, {done['skipped']} already there"
           + (f", {done['failed']} not imported" if done["failed"] else ""))
