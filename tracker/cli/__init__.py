"""The ``tracker`` command line: ``make_cli()`` builds the click group.

Core commands are flat verbs (``tracker runs``); plugins add their own groups
through the ``tracker_commands`` hook, called last.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..config import Config, load_config, resolve_store_path
from ..errors import TrackerError


class CliContext:
    """The click context object of every ``tracker`` command (``@click.pass_obj``).

    ``store`` opens the store (``--store`` > ``TRACKER_STORE`` > tracker.toml >
    ``./.tracker``) on first use.
    """

    def __init__(self, store_path: str | None, config_path: str | None, host: Any = None) -> None:
        self._store_path = store_path
        self._config_path = config_path
        self._config: Config | None = None
        self._host = host
        self._store: Any = None

    @property
    def config(self) -> Config:
        """The loaded tracker.toml."""
        if self._config is None:
            self._config = self._host.config if self._host is not None and self._config_path is None \
                else load_config(self._config_path)
        return self._config

    @property
    def host(self) -> Any:
        """The plugin host (built on first use)."""
        if self._host is None:
            from ..pluginmanager import Host, get_host, set_host

            if self._config_path is not None:
                self._host = Host(config=self.config)
                set_host(self._host)
            else:
                self._host = get_host()
        return self._host

    @property
    def store(self) -> Any:
        """The opened :class:`tracker.Store`."""
        if self._store is None:
            from ..view import Store

            self._store = Store(resolve_store_path(self._store_path, self.config), host=self.host)
        return self._store


def make_cli(host: Any = None) -> click.Group:
    """Build the ``tracker`` command group, plugins' commands included.

    :param host: the plugin host to use (default: the process's host).
    """
    from .commands import add_core_commands

    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(package_name="tracker-core", prog_name="tracker")
    @click.option("--store", "store", metavar="PATH", help="Store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).")
    @click.option("--config", "config", metavar="FILE", type=click.Path(dir_okay=False),
                  help="tracker.toml to use (default: TRACKER_CONFIG, or found upwards).")
    @click.pass_context
    def cli(ctx: click.Context, store: str | None, config: str | None) -> None:
        """Local-first experiment tracker: list runs, print summaries, verify the store.

        \b
        Examples:
          tracker runs
          tracker summary 3f2a --format json
        """
        ctx.obj = CliContext(store, config, host)

    add_core_commands(cli)
    _add_plugin_commands(cli, host)
    return cli


def _add_plugin_commands(cli: click.Group, host: Any) -> None:
    try:
        if host is None:
            from ..pluginmanager import get_host

            host = get_host()
        host.call_each("tracker_commands", cli=cli)
    except TrackerError as exc:
        click.echo(f"tracker: {exc}", err=True)


def main(argv: list[str] | None = None) -> None:
    """Run the command line (the ``tracker`` console script)."""
    try:
        cli = make_cli()
    except TrackerError as exc:
        # A bad tracker.toml must still give a clear line, not a traceback.
        click.echo(f"tracker: {exc}", err=True)
        sys.exit(2)
    cli.main(args=argv, prog_name="tracker")


__all__ = ["CliContext", "make_cli", "main", "Path"]
