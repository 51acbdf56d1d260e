"""``tracker sweep create|show|list|stop`` and ``tracker agent``: W&B's sweep commands over Optuna."""

from __future__ import annotations

from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import dumps, table_text
from tracker.core.errors import TrackerError
from tracker.core.text import when


def _not_a_server(obj: CliContext, command: str) -> None:
    """:raises TrackerError: ``--store https://...``: sweeps live beside the store (or in the team database), not
    behind a server's HTTP API."""
    given = obj.given_store
    if isinstance(given, str) and given.lower().startswith(("http://", "https://")):
        from tracker.remote.session import shown

        raise TrackerError(f"tracker {command} reads and runs sweeps in a store folder or the team database, not "
                           f"over HTTP ({shown(given)}): the server's dashboard shows its sweeps (its Sweeps page)")


def _folder(obj: CliContext, command: str) -> Any:
    """The store folder a command that runs trials uses (never the team database: trials log to a folder)."""
    from tracker.core.urls import is_database_url, redact_url

    _not_a_server(obj, command)
    if is_database_url(obj.given_store):
        raise TrackerError(f"tracker {command} runs trials into a store folder, given the database "
                           f"{redact_url(obj.given_store)}: give a folder with --store, and the database with "
                           "--storage (or [team] url)")
    return obj.store_path.absolute()


def _storage(obj: CliContext, root: Any, sweep_id: str, storage: str | None) -> str | None:
    """``--storage``, else what the store's ``sweep.json`` says, else the team database ([team] url)."""
    from tracker.sweeps.storage import default_storage

    return storage if storage is not None else default_storage(root, sweep_id, obj.config)


def _where(obj: CliContext, sweep_id: str, storage: str | None) -> tuple[Any, str | None]:
    """``(store folder or None, storage)`` to read sweep ``sweep_id`` from: the database given as ``--store``,
    or the store folder with its ``sweep.json`` (else the team database of [team] url)."""
    from tracker.core.urls import is_database_url

    _not_a_server(obj, "sweep")
    given = obj.given_store
    if is_database_url(given):
        return None, storage or str(given)
    root = obj.store_path.absolute()
    return root, _storage(obj, root, sweep_id, storage)


@click.group("sweep")
def sweep_group() -> None:
    """Create, show, list and stop hyperparameter sweeps (W&B's sweep files, run on Optuna).

    \b
    Examples:
      tracker sweep create sweep.yaml --project mnist     # prints the sweep id
      tracker agent k3v9x2qa --count 10                   # on as many machines as you like
      tracker sweep show k3v9x2qa
    """


@sweep_group.command("create")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--project", "-p", help="Project of the trials' runs (default: the file's project).")
@click.option("--storage", metavar="URL", help="Optuna storage (postgresql://...); default: a journal file "
                                                "under <store>/sweeps/<id>/.")
@click.option("--seed", type=int, help="Seed of the sampler (reproducible with one agent).")
@click.option("--name", help="The sweep's name (default: the file's name key).")
@click.pass_obj
@handle_errors
def create_cmd(obj: CliContext, file: str, project: str | None, storage: str | None, seed: int | None,
               name: str | None) -> None:
    """Create a sweep from a W&B sweep file (YAML or JSON) and print its id.

    \b
    Example:
      tracker sweep create sweep.yaml --project mnist
    """
    from tracker.sweeps.catalog import create_sweep
    from tracker.sweeps.config import check_sweep_config, load_sweep_file
    from tracker.sweeps.storage import default_storage, redact

    config = load_sweep_file(file)
    if name is not None:
        config = check_sweep_config({**config.raw, "name": name}, file)
    root = _folder(obj, "sweep create")
    if storage is None:  # with [team] url set, the team database holds the study: agents anywhere find it
        storage = default_storage(None, None, obj.config)
    sweep_id = create_sweep(config, root, project=project, storage=storage, seed=seed)
    click.echo(f"tracker: created sweep {sweep_id} ({config.method}"
               + (f", {config.goal} {config.metric}" if config.metric else "")
               + f"; storage {redact(storage) or 'journal under ' + str(root / 'sweeps' / sweep_id)})", err=True)
    click.echo(f"tracker: run agents with: tracker agent {sweep_id}", err=True)
    click.echo(sweep_id)


@click.command("agent")
@click.argument("sweep_id")
@click.option("--count", type=click.IntRange(min=1), help="Run at most this many trials.")
@click.option("--storage", metavar="URL", help="The sweep's Optuna storage, when the store has no sweep.json "
                                                "for it.")
@click.option("--project", "-p", help="Accepted for W&B's command line; the sweep names the project.")
@click.option("--entity", "-e", help="Accepted for W&B's command line; ignored.")
@click.pass_obj
@handle_errors
def agent_cmd(obj: CliContext, sweep_id: str, count: int | None, storage: str | None, project: str | None,
              entity: str | None) -> None:
    """Run trials of a sweep until it is done (or --count trials ran); start one per GPU or machine.

    Each trial is a run of the store: the sweep's program is started with
    the sampled values as --key=value, and tracker.init() in it attaches to
    the trial's run. Agents share the sweep through its storage, so any
    number may run at once.

    \b
    Example:
      CUDA_VISIBLE_DEVICES=0 tracker agent k3v9x2qa &
      CUDA_VISIBLE_DEVICES=1 tracker agent k3v9x2qa &
    """
    from tracker.sweeps.agent import run_agent
    from tracker.sweeps.study import open_sweep

    root = _folder(obj, "agent")
    storage = _storage(obj, root, sweep_id, storage)
    sweep = open_sweep(root, sweep_id, storage)
    if sweep.meta.get("seed") is not None:
        sweep = open_sweep(root, sweep_id, storage, seed_offset=len(sweep.study.get_trials(deepcopy=False)))
    ran = run_agent(sweep, count=count)
    click.echo(f"tracker: agent: ran {ran} trial{'s' if ran != 1 else ''} of sweep {sweep.id}", err=True)


def _params_text(params: dict[str, Any]) -> str:
    """The parameters as ``key=value``, numbers as ``tracker runs`` prints them (``--format json`` has them whole)."""
    from tracker.cli.render import cell

    return " ".join(f"{k}={cell(v)}" for k, v in params.items())


@sweep_group.command("show")
@click.argument("sweep_id")
@click.option("--storage", metavar="URL", help="The sweep's Optuna storage, when the store has no sweep.json for it.")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def show_cmd(obj: CliContext, sweep_id: str, storage: str | None, fmt: str) -> None:
    """Show a sweep: its state and best value, then its trials best first (run, state, metric, parameters).

    \b
    Example:
      tracker sweep show k3v9x2qa --format json
    """
    from tracker.sweeps.storage import storage_errors
    from tracker.sweeps.study import open_sweep

    root, storage = _where(obj, sweep_id, storage)
    with storage_errors(storage):
        sweep = open_sweep(root, sweep_id, storage)
        info = sweep.info()
        trials = sweep.trials()
        importances = sweep.importances() if fmt == "json" else {}
    if fmt == "json":
        click.echo(dumps({"sweep": info, "trials": trials, "importances": importances}))
        return
    from tracker.cli.render import cell

    metric = info["metric"] or "metric"
    click.echo(f"sweep {info['id']}" + (f" ({info['name']})" if info["name"] else "")
               + f": {info['method']}, {info['state']}, {info['trials']} trials"
               + (f", best {metric} {cell(info['best'])} ({info['goal']})" if info["best"] is not None else ""))
    rows = [{"#": t["number"], "run": t["run_id"] or "", "state": t["state"] + (
             f" (exit {t['exit_code']})" if t["exit_code"] not in (None, 0) else ""),
             metric: t["metric"], "parameters": _params_text(t["params"])} for t in trials]
    click.echo(table_text(["#", "run", "state", metric, "parameters"], rows))


@sweep_group.command("list")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def list_cmd(obj: CliContext, fmt: str) -> None:
    """List the store's sweeps, newest first: id, name, project, method, metric, created.

    \b
    Example:
      tracker sweep list --format json
    """
    from tracker.core.urls import is_database_url, team_database_url
    from tracker.sweeps.catalog import list_db_sweeps, list_sweeps

    _not_a_server(obj, "sweep list")
    given = obj.given_store
    if is_database_url(given):
        sweeps = list_db_sweeps(str(given))
    else:
        sweeps = list_sweeps(obj.store_path.absolute())
        url = team_database_url(obj.config)
        if url:  # the team database's sweeps too (made here or on any machine of the lab)
            try:
                here = {s["id"] for s in sweeps}
                sweeps += [s for s in list_db_sweeps(url) if s["id"] not in here]
            except TrackerError as exc:
                click.echo(f"tracker: warning: the team database's sweeps are not listed: {exc}", err=True)
            sweeps.sort(key=lambda s: -(s.get("created_at") or 0))
    if fmt == "json":
        click.echo(dumps({"sweeps": sweeps}))
        return
    if not sweeps:
        click.echo("no sweeps (create one with: tracker sweep create sweep.yaml)", err=True)
        return
    rows = [{**s, "created": when(s["created_at"]) if s.get("created_at") else ""} for s in sweeps]
    click.echo(table_text(["id", "name", "project", "method", "metric", "created", "storage"], rows))


@sweep_group.command("stop")
@click.argument("sweep_id")
@click.option("--storage", metavar="URL", help="The sweep's Optuna storage, when the store has no sweep.json for it.")
@click.pass_obj
@handle_errors
def stop_cmd(obj: CliContext, sweep_id: str, storage: str | None) -> None:
    """Stop a sweep: agents start no new trial; trials running now finish.

    \b
    Example:
      tracker sweep stop k3v9x2qa
    """
    from tracker.sweeps.study import open_sweep

    root, storage = _where(obj, sweep_id, storage)
    sweep = open_sweep(root, sweep_id, storage)
    sweep.stop()
    click.echo(f"tracker: sweep {sweep.id} stopped; agents finish their running trial and exit", err=True)
