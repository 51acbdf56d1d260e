"""``tracker server``: the dashboard's server for a lab, and its door for logging and reading with a key."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import fail, handle_errors
from tracker.core.errors import TrackerError


class ServerOptions:
    """What ``tracker server`` adds to ``tracker ui``'s serving (:func:`tracker.cli.ui.serve`)."""

    def __init__(self, tls_cert: str | None, tls_key: str | None, proxy_headers: bool, spool: str | None,
                 allow_hosts: tuple[str, ...] = (), max_writes: int = 64) -> None:
        self.allow_hosts = allow_hosts
        self.max_writes = max_writes
        self.tls_cert = tls_cert
        self.tls_key = tls_key
        self.proxy_headers = proxy_headers
        self.spool = spool
        self.spool_path: Path | None = None

    def check(self) -> None:
        """Refuse TLS files that are missing, or a certificate without its key; one line each."""
        if (self.tls_cert is None) != (self.tls_key is None):
            fail("--tls-cert and --tls-key go together: give the certificate (chain) and its private key", 2)
        if self.tls_cert is None:
            return
        import ssl

        for path in (self.tls_cert, self.tls_key):
            if not os.path.isfile(path):
                fail(f"cannot read {path}: {'not a file' if os.path.exists(path) else 'no such file'}", 2)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(self.tls_cert, self.tls_key)
        except (ssl.SSLError, OSError, ValueError) as exc:
            fail(f"cannot use --tls-cert {self.tls_cert} with --tls-key {self.tls_key}: "
                 f"{getattr(exc, 'reason', None) or getattr(exc, 'strerror', None) or exc}", 2)

    def remote(self, obj: CliContext, store: Any) -> Any:
        """The writing side (:class:`tracker.ui.server.Remote`) over ``store``: the folder, or the spool of a
        database store, synced into it."""
        from tracker.core.urls import is_database_url
        from tracker.remote.keys import open_keys
        from tracker.ui.server import Remote

        given = obj.given_store
        if is_database_url(given):
            from tracker.remote.spool import SpoolSync, default_spool
            from tracker.store import Store

            spool = Path(self.spool) if self.spool else default_spool(given)
            self.spool_path = spool
            (spool / "runs").mkdir(parents=True, exist_ok=True)
            sync = SpoolSync(spool, given, Store(spool, host=lambda: obj.host),
                             say=lambda line: click.echo(line, err=True)).start()
            return Remote(open_keys(given), spool, spool=sync, blobs=getattr(store, "blobs", None),
                          fsync=obj.config.fsync, max_writes=self.max_writes)
        if self.spool:
            fail("--spool is for a database store (--store postgresql://...): a folder store is written directly", 2)
        return Remote(open_keys(store.path), store.path, fsync=obj.config.fsync, max_writes=self.max_writes)

    def uvicorn_options(self) -> dict[str, Any]:
        """uvicorn's TLS and proxy options."""
        out: dict[str, Any] = {"proxy_headers": self.proxy_headers}
        if self.proxy_headers:
            out["forwarded_allow_ips"] = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
        if self.tls_cert is not None:
            out.update(ssl_certfile=self.tls_cert, ssl_keyfile=self.tls_key)
        return out

    def banner(self, base: str) -> str:
        """The lines after the URL: where the API is (never a key)."""
        lines = f"  API: {base}/api/v1/ (keys: `tracker keys create NAME --scope write`; {base}/api/v1/openapi.json)"
        if self.spool_path is not None:
            lines += f"\n  spool: {self.spool_path} (synced into the database)"
        return lines


@click.command("server")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but a loopback address needs --auth.")
@click.option("--port", default=5170, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--auth", metavar="token|USERS.toml",
              help="Who gets into the dashboard: 'token' or a users file of `tracker ui passwd`; needed on any "
                   "address but loopback. API keys work with either.")
@click.option("--tls-cert", type=click.Path(dir_okay=False), default=None,
              help="Serve HTTPS with this certificate (PEM, chain included); needs --tls-key.")
@click.option("--tls-key", type=click.Path(dir_okay=False), default=None, help="The certificate's private key (PEM).")
@click.option("--proxy-headers", is_flag=True,
              help="Behind a proxy (Caddy, nginx): trust its X-Forwarded-For/-Proto from 127.0.0.1 "
                   "(or FORWARDED_ALLOW_IPS).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="A name clients reach this server by (a proxy's site, the certificate's name): the Host check "
                   "lets it in. Repeat for more.")
@click.option("--max-writes", type=click.IntRange(min=1), default=64, show_default=True, metavar="N",
              help="Writing requests (segments, blobs, JSON logging) under way at once; more are answered 503 "
                   "with Retry-After, and their clients come back.")
@click.option("--spool", type=click.Path(file_okay=False), default=None,
              help="With --store postgresql://: the folder where shipped runs land before they are synced into the "
                   "database (default: under ~/.local/state/tracker/spool/).")
@click.option("--watch", is_flag=True, help="Also check the alert rules of tracker.toml, as `tracker watch` does.")
@click.pass_context
@handle_errors
def server_cmd(ctx: click.Context, host: str, port: int, auth: str | None, tls_cert: str | None,
               tls_key: str | None, proxy_headers: bool, allow_hosts: tuple[str, ...], max_writes: int,
               spool: str | None, watch: bool) -> None:
    """Serve a lab: the dashboard, and logging and reading over HTTP(S) for holders of an API key.

    The dashboard of `tracker ui` (which stays), plus the API under /api/v1/:
    runs shipped by followers on other machines (`[team] url = "https://..."`),
    JSON logging for curl and other languages, reading for `--store https://`,
    and keys (`tracker keys create|list|revoke`). Keys go in
    `Authorization: Bearer`; a key of every project opens the dashboard's API
    whatever --auth says. Over a database store (--store postgresql://...) shipped runs land
    in a spool folder and are synced into the database (and blobs into
    [team] blobs). See docs/http-api.md.

    \b
    Examples:
      tracker server
      tracker --store /srv/tracker server --host 0.0.0.0 --auth token --tls-cert cert.pem --tls-key key.pem
      tracker --store postgresql://tracker@db/lab server --proxy-headers --allow-host lab.example.org
    """
    from tracker.cli.ui import _raw_store, _redacted, serve
    from tracker.ui.hosts import host_name

    for name in allow_hosts:
        if not host_name(name) or host_name(name) != name.strip().lower().rstrip("."):
            fail(f"--allow-host: expected a host name or address without scheme, port or path, given {name!r}", 2)
    options = ServerOptions(tls_cert, tls_key, proxy_headers, spool, tuple(host_name(n) for n in allow_hosts),
                            max_writes)
    options.check()
    raw = _raw_store(ctx)
    try:
        serve(ctx.obj, host, port, True, auth, raw, watch=watch, options=options)
    except TrackerError as exc:
        fail(_redacted(str(exc), raw))
