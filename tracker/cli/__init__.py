"""The ``tracker`` command line: ``make_cli()`` builds the click group.
The top floor below the package face: imports anything below it (ui, integrations, store, ...).

Core commands are flat verbs (``tracker runs``), one module per command,
named after it, sharing :mod:`tracker.cli.options` (options and error
handling), :mod:`tracker.cli.render` (tables, JSON, CSV),
:mod:`tracker.cli.terminal` and :mod:`tracker.core.text`. Plugins add their own groups
through the ``tracker_commands`` hook, called last.

A command's module is imported only when that command runs, and plugins only
when one of their commands does (or a command needs their schemas):
``tracker --help`` lists the core commands from :data:`commands.CORE_COMMANDS`
and the plugins' from :mod:`tracker.cli.lazy`'s cache.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tracker.cli.commands import CORE_COMMANDS, load_command
from tracker.core.errors import StoreError, TrackerError
from tracker.core.version import __version__

if TYPE_CHECKING:
    from tracker.core.config import Config
    from tracker.read.protocol import StoreReader


#: Commands that change a store or read its files: over ``--store https://...`` they say so in one line.
FOLDER_COMMANDS = frozenset({"rm", "restore", "du", "verify", "index", "tag", "rename", "note"})


class CliContext:
    """The click context object of every ``tracker`` command (``@click.pass_obj``).

    ``store`` opens the store (``--store`` > ``TRACKER_STORE`` > tracker.toml >
    ``./.tracker``) on first use; ``host`` builds the plugin host with the
    configuration of ``--config`` when given.
    """

    def __init__(self, store_path: str | None, config_path: str | None, host: Any = None) -> None:
        self._store_path = store_path
        self._config_path = config_path
        self._config: Config | None = None
        self._host = host
        self._store: Any = None
        self._short: dict[str, str] | None = None

    @property
    def config(self) -> Config:
        """The loaded tracker.toml."""
        if self._config is None:
            from tracker.core.config import load_config

            self._config = self._host.config if self._host is not None and self._config_path is None \
                else load_config(self._config_path)
        return self._config

    @property
    def host(self) -> Any:
        """The plugin host (built on first use)."""
        if self._host is None:
            from tracker.cli.options import show_warning
            from tracker.host.bus import TrackerWarning
            from tracker.host.host import Host, get_host, set_host

            # Warnings raised while plugins load (before a command runs) get the one-line form.
            warnings.simplefilter("always", TrackerWarning)
            warnings.showwarning = show_warning

            if self._config_path is not None:
                self._host = Host(config=self.config)
                set_host(self._host)
            else:
                self._host = get_host()
        return self._host

    @property
    def store_path(self) -> Path:
        """The store folder the command reads."""
        from tracker.core.config import resolve_store_path

        return resolve_store_path(self._store_path, self.config)

    @property
    def given_store(self) -> str | None:
        """The store as given (``--store``, else ``TRACKER_STORE``): a folder or a database or server URL."""
        return self._store_path if self._store_path is not None else os.environ.get("TRACKER_STORE")

    @property
    def store(self) -> StoreReader:
        """The opened store: a folder (:class:`tracker.Store`) or the team database, through the reading protocol.

        :raises StoreError: when the folder does not exist or is not a store.
        """
        if self._store is None:
            from tracker.core.urls import is_database_url

            raw = self.given_store
            if is_database_url(raw):
                # The team database: the same reading API over PostgreSQL.
                from tracker.team.postgres import open_team_store

                self._store = open_team_store(str(raw), host=self._host if self._host is not None
                                              else (lambda: self.host), timeout=self.config.team_timeout)
                return self._store
            if isinstance(raw, str) and raw.lower().startswith(("http://", "https://")):
                # A tracker server: the same reading API over its HTTP API, with a read key.
                from tracker.remote.reading import open_remote_store

                ctx = click.get_current_context(silent=True)
                name = ctx.info_name if ctx is not None else None
                if name in FOLDER_COMMANDS:
                    from tracker.remote.session import shown

                    raise TrackerError(f"`tracker {name}` works on the store's own files, which a server does not "
                                       f"lend over HTTP ({shown(raw)}): run it where the store is, with "
                                       f"`tracker --store FOLDER {name} ...`")

                self._store = open_remote_store(raw, host=self._host if self._host is not None
                                                else (lambda: self.host), config=self.config)
                return self._store
            from tracker.store import Store

            path = self.store_path
            if not path.exists():
                raise StoreError(f"no store at {path} (choose one with --store, TRACKER_STORE "
                                 "or [store] path in tracker.toml)")
            # Plugins load only when a command needs schemas or summaries: listing runs does not.
            self._store = Store(path, host=self._host if self._host is not None else (lambda: self.host))
        return self._store

    def short_ids(self) -> dict[str, str]:
        """Every run id of the store mapped to its shortest unique prefix (at least 8 characters)."""
        if self._short is None:
            from tracker.core.text import short_ids

            self._short = short_ids(self.store.run_ids())
        return self._short

    def short(self, run_id: str) -> str:
        """The short form of one run id."""
        return self.short_ids().get(run_id, run_id)


class TrackerGroup(click.Group):
    """The ``tracker`` group: core commands imported when used, plugins' commands only when needed.

    Commands of plugins are looked up after the global options are parsed, so
    that ``--config`` decides which plugins load, and ``tracker runs`` never
    imports a plugin it does not need. ``tracker --help`` lists the plugins'
    commands from the cache of :mod:`tracker.cli.lazy` when it is valid.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plugins_added = False
        self.host: Any = None
        self._plugin_help: dict[str, str] | None = None

    def context_obj(self, ctx: click.Context) -> CliContext:
        """The :class:`CliContext` of ``ctx``, made from the parsed global options if needed."""
        if not isinstance(ctx.obj, CliContext):
            ctx.obj = CliContext(ctx.params.get("store"), ctx.params.get("config"), self.host)
        return ctx.obj

    def add_plugin_commands(self, host: Any, config: str | None = None) -> None:
        """Call every plugin's ``tracker_commands(cli)`` (once), and remember the commands they added."""
        if self.plugins_added:
            return
        self.plugins_added = True
        before = set(self.commands)
        host.call_each(host.pm.hook.tracker_commands, cli=self)
        added = {name: self.commands[name].get_short_help_str(limit=1000)
                 for name in sorted(set(self.commands) - before)
                 if name not in CORE_COMMANDS and not self.commands[name].hidden}
        self._plugin_help = added
        if self.host is None:  # the environment's plugins, not a host a caller built
            from tracker.cli.lazy import environment_key, remember_commands

            remember_commands(environment_key(config), added)

    def _ensure_plugins(self, ctx: click.Context, strict: bool) -> None:
        if self.plugins_added:
            return
        from tracker.cli.options import fail, one_line

        try:
            self.add_plugin_commands(self.context_obj(ctx).host, ctx.params.get("config"))
        except TrackerError as exc:
            self.plugins_added = True
            self._plugin_help = {}
            if strict:
                fail(str(exc))
            click.echo(f"tracker: warning: plugins' commands not loaded: {one_line(str(exc))}", err=True)

    def plugin_help(self, ctx: click.Context) -> dict[str, str]:
        """The plugins' commands and their first help sentence: from the cache, else by loading them."""
        if self._plugin_help is None and not self.plugins_added:
            from tracker.cli.lazy import cached_commands, environment_key

            self._plugin_help = cached_commands(environment_key(ctx.params.get("config")))
        if self._plugin_help is None:
            self._ensure_plugins(ctx, strict=False)
        return self._plugin_help or {}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A core command (imported now), else a plugin's (loading the plugins on first need)."""
        cmd = self.commands.get(cmd_name)
        if cmd is None and cmd_name in CORE_COMMANDS:
            cmd = load_command(cmd_name)
            self.add_command(cmd, cmd_name)
        if cmd is None and not self.plugins_added:
            self._ensure_plugins(ctx, strict=True)
            cmd = self.commands.get(cmd_name)
        return cmd

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command, plugins' included (from the cache when it is valid)."""
        return sorted(set(self.commands) | set(CORE_COMMANDS) | set(self.plugin_help(ctx)))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands with the first sentence of their help, without importing a command not loaded."""
        names = self.list_commands(ctx)
        plugins = self.plugin_help(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            cmd = self.commands.get(name)
            if cmd is not None:
                if not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(limit)))
                continue
            sentence = CORE_COMMANDS[name][2] if name in CORE_COMMANDS else plugins.get(name, "")
            # A bare command with that help: click shortens it as it would the real command's.
            rows.append((name, click.Command(name, help=sentence).get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def make_cli(host: Any = None) -> click.Group:
    """Build the ``tracker`` command group, plugins' commands included.

    :param host: the plugin host to use; its plugins' commands are added at
        once. By default the process's host, built on first use with the
        configuration of ``--config``, and plugins' commands are added when a
        command that is not a core one is asked for.
    """

    @click.group(cls=TrackerGroup, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, prog_name="tracker")
    @click.option("--store", "store", metavar="PATH",
                  help="Store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).")
    @click.option("--config", "config", metavar="FILE", type=click.Path(dir_okay=False),
                  help="tracker.toml to use (default: TRACKER_CONFIG, or found upwards).")
    @click.pass_context
    def cli(ctx: click.Context, store: str | None, config: str | None) -> None:
        """Local-first experiment tracker: list runs, print summaries, verify the store.

        \b
        Examples:
          tracker runs --project fft
          tracker show 3f2a
          tracker compare 3f2a 9c1e
          tracker tail 3f2a -f
        """
        cli.context_obj(ctx)

    cli.host = host
    if host is not None:
        _add_plugin_commands(cli, host)
    return cli


def add_lifecycle_commands(cli: click.Group) -> None:
    """Add ``tag``, ``rename``, ``note``, ``rm``, ``restore``, ``gc`` and ``du`` to ``cli`` (imported now)."""
    for name in ("tag", "rename", "note", "rm", "restore", "gc", "du"):
        cli.add_command(load_command(name), name)


def _add_plugin_commands(cli: TrackerGroup, host: Any) -> None:
    try:
        cli.add_plugin_commands(host)
    except TrackerError as exc:
        click.echo(f"tracker: {exc}", err=True)


def main(argv: list[str] | None = None) -> None:
    """Run the command line (the ``tracker`` console script)."""
    try:
        cli = make_cli()
    except TrackerError as exc:
        click.echo(f"tracker: {exc}", err=True)
        sys.exit(2)
    cli.main(args=argv, prog_name="tracker")


__all__ = ["CliContext", "TrackerGroup", "make_cli", "main"]
