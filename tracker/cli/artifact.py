"""``tracker artifact list|show|alias|get``: named artifacts, their versions and aliases, across runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import csv_text, dumps, table_text
from tracker.core.errors import TrackerError
from tracker.core.text import human_bytes, when


@click.group("artifact")
def artifact_group() -> None:
    """List named artifacts, show their versions, move aliases and copy a version out (checked).

    \b
    Examples:
      tracker artifact list --type model
      tracker artifact show mnist-cnn
      tracker artifact alias mnist-cnn:v3 prod
      tracker artifact get mnist-cnn:prod -o model.pt
    """


def _aliases_text(aliases: dict[str, str]) -> str:
    return " ".join(f"{a}:{v}" for a, v in aliases.items())


@artifact_group.command("list")
@click.option("--type", "type_", metavar="T", help="Only artifacts of this type (model, dataset...).")
@click.option("--project", "-p", metavar="P", help="Only artifacts of this project.")
@format_option()
@click.pass_obj
@handle_errors
def list_cmd(obj: CliContext, type_: str | None, project: str | None, fmt: str) -> None:
    """List named artifacts: name, type, versions, the latest, aliases, its size and when it was logged.

    \b
    Examples:
      tracker artifact list
      tracker artifact list --type dataset --format json
    """
    names = obj.store.registry().names(type=type_, project=project)
    rows = []
    for c in names:
        version, size, _producer, created = c.latest_summary()
        rows.append({"project": c.project, "name": c.name, "type": c.type, "versions": c.count,
                     "latest": version, "aliases": {a: f"v{n}" for a, n in sorted(c.aliases.items())},
                     "size": size, "updated": created})
    if fmt == "json":
        click.echo(dumps({"artifacts": rows}))
        return
    flat = [{**r, "aliases": _aliases_text(r["aliases"])} for r in rows]
    if fmt == "csv":
        click.echo(csv_text(["project", "name", "type", "versions", "latest", "aliases", "size", "updated"], flat),
                   nl=False)
    elif not rows:
        click.echo("no artifacts" + (" of that type or project" if type_ or project else
                                     " yet: log one with run.log_artifact(path, name=..., type=...)"))
    else:
        shown = [{**r, "name": f"{r['project']}/{r['name']}" if r["project"] else r["name"],
                  "size": human_bytes(r["size"]), "updated": when(r["updated"])} for r in flat]
        click.echo(table_text(["name", "type", "versions", "latest", "aliases", "size", "updated"], shown))


def version_row(c: Any, v: Any) -> dict[str, Any]:
    """One version as ``show`` gives it."""
    return {"version": v.version, "aliases": c.aliases_of(v.number), "size": v.size, "sha256": v.sha256,
            "kind": v.kind, "files": v.files, "producer": v.producer, "consumers": list(c.consumers.get(v.sha256, [])),
            "created": v.time, "stored": "reference" if v.reference else "copy"}


@artifact_group.command("show")
@click.argument("ref", metavar="NAME[:VERSION|:ALIAS]")
@format_option()
@click.pass_obj
@handle_errors
def show_cmd(obj: CliContext, ref: str, fmt: str) -> None:
    """Show a named artifact's versions (aliases, size, sha256, producer, consumers) and alias history.

    With a version or alias, that version alone, with its files.

    \b
    Examples:
      tracker artifact show mnist-cnn
      tracker artifact show mnist-cnn:prod --format json
    """
    from tracker.read.registry import split_ref

    registry = obj.store.registry()
    base, spec = split_ref(ref)
    c = registry.collection(base)
    versions = [c.pick(spec)] if spec is not None else c.versions
    rows = [version_row(c, v) for v in versions]
    history = [{"time": h.time, "alias": h.alias, "op": h.op, "version": h.version, "user": h.user,
                "run": h.run, "how": h.how} for h in c.history
               if spec is None or h.version == versions[0].version]
    doc: dict[str, Any] = {"project": c.project, "name": c.name, "type": c.type, "versions": rows,
                           "history": history}
    if spec is not None:
        art = obj.store.artifact(f"{c.qualified}:{versions[0].version}")
        doc["files"] = [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in art.files()]
    if fmt == "json":
        click.echo(dumps(doc))
        return
    if fmt == "csv":
        flat = [{**r, "aliases": " ".join(r["aliases"]), "consumers": " ".join(r["consumers"])} for r in rows]
        click.echo(csv_text(["version", "aliases", "size", "sha256", "kind", "files", "producer", "consumers",
                             "created", "stored"], flat), nl=False)
        return
    short = obj.short
    names = {i.id: i.name for i in obj.store.runs()}
    click.echo(f"{c.qualified} ({c.type}): {c.count} version{'s' if c.count != 1 else ''}")
    shown = [{"version": r["version"], "aliases": " ".join(r["aliases"]), "size": human_bytes(r["size"]),
              "sha256": r["sha256"][:12], "made by": _run_label(obj, r["producer"], names),
              "used by": " ".join(short(x) for x in r["consumers"][:5])
              + (f" +{len(r['consumers']) - 5}" if len(r["consumers"]) > 5 else "") or "-",
              "logged": when(r["created"])} for r in rows]
    click.echo(table_text(["version", "aliases", "size", "sha256", "made by", "used by", "logged"], shown))
    if "files" in doc and (len(doc["files"]) > 1 or versions[0].folder):
        click.echo("")
        click.echo(table_text(["path", "size", "sha256"], [{"path": f["path"], "size": human_bytes(f["size"]),
                                                            "sha256": f["sha256"][:12]} for f in doc["files"]]))
    if history:
        click.echo("")
        click.echo("alias history:")
        click.echo(table_text(["time", "alias", "change", "by"], [
            {"time": when(h["time"]), "alias": h["alias"],
             "change": f"{'set on' if h['op'] == 'set' else 'removed from'} {h['version'] or '(gone)'}",
             "by": f"run {short(h['run'])} (log_artifact)" if h["how"] == "log" else (h["user"] or "-")}
            for h in history]))


def _run_label(obj: CliContext, run: str, names: dict[str, Any]) -> str:
    name = names.get(run)
    return f"{obj.short(run)} {name}" if name else obj.short(run)


@artifact_group.command("alias")
@click.argument("ref", metavar="NAME:VERSION")
@click.argument("alias")
@click.option("--remove", is_flag=True, help="Remove ALIAS from the name instead.")
@click.pass_obj
@handle_errors
def alias_cmd(obj: CliContext, ref: str, alias: str, remove: bool) -> None:
    """Point ALIAS at a version (moving it from the one it named), or --remove it; the history is kept.

    Over a team database (postgresql://) the edit is written to the database.

    \b
    Examples:
      tracker artifact alias mnist-cnn:v3 prod
      tracker artifact alias mnist-cnn prod --remove
    """
    from tracker.core.rules import check_alias
    from tracker.read.registry import split_ref

    check_alias(alias)
    store: Any = obj.store
    if not hasattr(store, "set_alias"):
        raise TrackerError(f"{store.path}: this store cannot take alias edits")
    base, spec = split_ref(ref)
    c = store.registry().collection(base)
    before = c.aliases.get(alias)
    if remove:
        store.remove_alias(ref, alias)
        click.echo(f"removed alias {alias!r} from {c.qualified} (it named v{before})")
        return
    if spec is None:
        raise TrackerError(f"artifact alias {ref!r}: say which version, as NAME:VERSION (e.g. {base}:v3), "
                           "or NAME:ALIAS")
    art = store.set_alias(ref, alias)
    moved = f" (moved from v{before})" if before is not None and f"v{before}" != art.version else \
        " (already there)" if before is not None else ""
    click.echo(f"{c.qualified}:{art.version} is now {alias!r}{moved}")


@artifact_group.command("get")
@click.argument("ref", metavar="NAME[:VERSION|:ALIAS]")
@click.option("-o", "--output", "output", metavar="PATH", type=click.Path(),
              help="Where to write it (default: ./FILE for a file, ./NAME for a folder).")
@click.option("--force", is_flag=True, help="Replace an existing file at PATH.")
@click.pass_obj
@handle_errors
def get_cmd(obj: CliContext, ref: str, output: str | None, force: bool) -> None:
    """Copy a version out of the store (a file, or a folder), every sha256 checked; prints the path.

    Written under a temporary name and renamed only when every hash matched:
    a damaged blob is an error naming the artifact, version and blob, and
    leaves nothing at PATH.

    \b
    Examples:
      tracker artifact get mnist-cnn:prod -o model.pt
      tracker artifact get mnist:v0            # a folder: ./mnist
    """
    from tracker.capture.artifacts import copy_content, file_name

    art = obj.store.artifact(ref)
    if output is not None:
        dest = Path(output)
    else:
        last = art.name.rsplit("/", 1)[-1]
        dest = Path.cwd() / (last if art.folder else file_name(last, (art.filename or "").rsplit("/", 1)[-1]))
    if dest.exists() and not (force and dest.is_file()):
        hint = "" if dest.is_dir() else " or pass --force"
        raise TrackerError(f"{dest} exists; choose another path with -o{hint}")
    label = f"artifact {art.qualified!r}"
    out = copy_content(art._blobs, art.sha256, art.size, art.folder, art._referenced, dest, label)
    click.echo(str(out))
