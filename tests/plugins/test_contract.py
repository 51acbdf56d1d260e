"""The plugin contract: every hook documented and tested, built-ins use public names only."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import tracker
from tracker.host import hookspecs

HOOKS = [name for name, fn in vars(hookspecs).items() if name.startswith("tracker_") and callable(fn)]
BUILTIN = Path(tracker.__file__).parent / "builtin"


def test_hook_order_lists_every_hook_and_module_docstring_keeps_it() -> None:
    assert sorted(HOOKS) == sorted(hookspecs.HOOK_ORDER)
    doc = hookspecs.__doc__
    positions = [doc.index(f"``{name}(") for name in hookspecs.HOOK_ORDER]
    assert positions == sorted(positions)


@pytest.mark.parametrize("name", HOOKS)
def test_every_hook_is_documented_and_tested(name: str) -> None:
    doc = inspect.getdoc(getattr(hookspecs, name))
    assert doc and "versionadded" in doc and ("Called" in doc)
    params = inspect.signature(getattr(hookspecs, name)).parameters
    for p in params:
        assert f":param {p}:" in doc
    assert f"test_hook_{name}" in globals()


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []

    @tracker.hookimpl
    def tracker_configure(self, config: tracker.Config) -> None:
        self.calls.append("tracker_configure")

    @tracker.hookimpl
    def tracker_schemas(self) -> list:
        self.calls.append("tracker_schemas")
        return []

    @tracker.hookimpl
    def tracker_summarizers(self) -> list:
        self.calls.append("tracker_summarizers")
        return []

    @tracker.hookimpl
    def tracker_subscribe(self, bus: tracker.EventBus) -> None:
        self.calls.append("tracker_subscribe")

    @tracker.hookimpl
    def tracker_commands(self, cli: object) -> None:
        self.calls.append("tracker_commands")

    @tracker.hookimpl
    def tracker_panels(self) -> list:
        self.calls.append("tracker_panels")
        return []

    @tracker.hookimpl
    def tracker_alert_channels(self) -> dict:
        self.calls.append("tracker_alert_channels")
        return {}

    @tracker.hookimpl
    def tracker_artifact_sources(self, config: tracker.Config) -> dict:
        self.calls.append("tracker_artifact_sources")
        return {}


def test_lifecycle_order(make_tracker_host) -> None:  # noqa: ANN001
    rec = Recorder()
    host = make_tracker_host(rec, names=["rec"])
    from tracker.cli import make_cli

    make_cli(host)
    assert host.panels == {}  # the dashboard asks for panels last, and only once
    assert host.panels == {}
    from tracker.alerts.channels import channel_types

    assert set(channel_types(host)) == {"webhook", "email", "command", "desktop"}  # when an alert is delivered
    channel_types(host)
    from tracker.write.artifacts import artifact_sources

    assert artifact_sources(host) == []  # when a name is not in the store asked
    assert rec.calls == list(hookspecs.HOOK_ORDER)


def test_hook_tracker_configure(make_tracker_host) -> None:  # noqa: ANN001
    rec = Recorder()
    cfg = tracker.Config(plugins={"rec": {"a": 1}})
    host = make_tracker_host(rec, config=cfg, names=["rec"])
    assert rec.calls[0] == "tracker_configure" and host.config is cfg


def test_hook_tracker_schemas(make_tracker_host) -> None:  # noqa: ANN001
    host = make_tracker_host()
    assert host.schema_owner["metrics"] == "metrics"


def test_hook_tracker_summarizers(make_tracker_host) -> None:  # noqa: ANN001
    host = make_tracker_host()
    assert {s.name for s in host.summarizers_for("metrics")} == {"metrics.scalars", "metrics.run"}


def test_hook_tracker_subscribe(make_tracker_host) -> None:  # noqa: ANN001
    rec = Recorder()
    host = make_tracker_host(rec, names=["rec"])
    assert "tracker_subscribe" in rec.calls and isinstance(host.bus, tracker.EventBus)


def test_hook_tracker_commands(make_tracker_host) -> None:  # noqa: ANN001
    import click
    from click.testing import CliRunner

    class Commands:
        @tracker.hookimpl
        def tracker_commands(self, cli: click.Group) -> None:
            @cli.group("demo")
            def demo() -> None:
                """Demo commands."""

            @demo.command("hello")
            def hello() -> None:
                click.echo("hello from a plugin")

    from tracker.cli import make_cli

    host = make_tracker_host(Commands(), names=["demo"])
    result = CliRunner().invoke(make_cli(host), ["demo", "hello"])
    assert result.exit_code == 0 and result.output == "hello from a plugin\n"


def test_hook_tracker_panels(make_tracker_host) -> None:  # noqa: ANN001
    def losses(table, run):  # noqa: ANN001, ANN202
        return [tracker.LineChart("loss", [tracker.Series("loss", table["loss"], x=table["step"])])]

    class Panels:
        @tracker.hookimpl
        def tracker_panels(self) -> list:
            return [tracker.Panel("demo.loss", "metrics", losses, title="Loss")]

    class Twice:
        @tracker.hookimpl
        def tracker_panels(self) -> list:
            return [tracker.Panel("demo.loss", "metrics", losses)]

    host = make_tracker_host(Panels(), Twice(), names=["demo", "twice"])
    with pytest.warns(tracker.TrackerWarning, match="'demo.loss' is already offered by plugin 'demo'"):
        assert list(host.panels) == ["demo.loss"]
    assert host.panel_owner["demo.loss"] == "demo"
    assert {p.name: p.status for p in host.plugins()}["twice"] == "broken"


def test_builtins_import_only_public_names() -> None:
    public = set(tracker.__all__)
    for path in BUILTIN.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tracker"):
                assert node.module == "tracker", f"{path.name} imports from {node.module}"
                assert {a.name for a in node.names} <= public, f"{path.name} imports private names"
            if isinstance(node, ast.ImportFrom) and node.level:
                pytest.fail(f"{path.name} uses a relative import")


def test_hook_tracker_alert_channels(make_tracker_host, tmp_path) -> None:  # noqa: ANN001
    from tracker.alerts.channels import build_channels

    sent = []

    class Pager:
        def __init__(self, name: str, options: dict) -> None:
            self.name, self.team = name, options["team"]

        def send(self, alert) -> None:  # noqa: ANN001
            sent.append((self.team, alert.title))

    class Channels:
        @tracker.hookimpl
        def tracker_alert_channels(self) -> dict:
            return {"pager": Pager}

    class Taken:
        @tracker.hookimpl
        def tracker_alert_channels(self) -> dict:
            return {"webhook": Pager}

    host = make_tracker_host(Channels(), Taken(), names=["pager", "taken"])
    with pytest.warns(tracker.TrackerWarning, match="channel type 'webhook' is already offered by 'tracker'"):
        channels = build_channels({"channels": {"oncall": {"type": "pager", "team": "ml"}}}, host)
    channels["oncall"].send(tracker.alerts.channels.Alert(title="t", text="x", level="INFO", run_id="r"))
    assert sent == [("ml", "t")] and host.pm.infos["taken"].status == "broken"
    with pytest.raises(tracker.ConfigError, match="type: expected one of command, desktop, email, pager, webhook"):
        build_channels({"channels": {"x": {"type": "sms"}}}, host)


def test_hook_tracker_artifact_sources(make_tracker_host, tmp_path) -> None:  # noqa: ANN001
    from tracker.builtin import artifact as builtin_artifact

    archive, here = tmp_path / "archive", tmp_path / "here"
    (tmp_path / "w.bin").write_bytes(b"weights")
    (tmp_path / "mine.bin").write_bytes(b"mine")
    opened: list[str] = []

    class Archive:
        @tracker.hookimpl
        def tracker_artifact_sources(self, config: tracker.Config) -> dict:
            def opener() -> object:
                opened.append("archive")
                return tracker.open_store(archive)
            return {"the archive": opener}

    class Broken:
        @tracker.hookimpl
        def tracker_artifact_sources(self) -> list:
            return ["not a dict"]

    host = make_tracker_host(builtin_artifact, Archive(), Broken(), names=["artifact", "archive", "broken"])
    with tracker.start_run(project="p", store=archive) as maker:
        maker.log_artifact(tmp_path / "w.bin", name="model", type="model", aliases=["prod"])
    assert opened == []
    with tracker.start_run(project="p", store=here) as run:
        run.log_artifact(tmp_path / "mine.bin", name="notes")
        assert run.use_artifact("notes").version == "v0" and opened == []  # known here: asked nowhere else
        with pytest.warns(tracker.TrackerWarning, match="plugin 'broken' is broken: tracker_artifact_sources"):
            art = run.use_artifact("model:prod", type="model")  # known only there
        assert opened == ["archive"] and (art.version, art.producer) == ("v0", maker.id)
        assert art.file(tmp_path / "got").read_bytes() == b"weights"  # from the archive's blobs, checked
        with pytest.raises(tracker.ArtifactNotFound) as exc:
            run.use_artifact("model:staging")
    msg = str(exc.value)
    assert "\n" not in msg and "not in this store (no artifact named 'model' (artifacts: p/notes))" in msg
    assert f"nor in the archive {archive}" in msg and "has no version or alias 'staging'" in msg and "prod" in msg
    assert host.pm.infos["broken"].status == "broken" and "tracker_artifact_sources" in host.pm.infos["broken"].error
    used = [r.data for r in tracker.open_store(here).run(run.id).records("artifact_use")]
    assert [(u["name"], u["version"], u["alias"]) for u in used] == [("notes", "v0", "latest"), ("model", "v0", "prod")]
    # A folder store's artifact() asks the same sources; an opener that fails is one line.
    assert tracker.open_store(here).artifact("p/model:v0").sha256 == art.sha256

    class Down:
        @tracker.hookimpl
        def tracker_artifact_sources(self) -> dict:
            def opener() -> object:
                raise tracker.TrackerError("cannot connect to db://lab:***@nowhere:\nrefused")
            return {"the lab": opener}

    make_tracker_host(builtin_artifact, Down(), names=["artifact", "down"])
    with pytest.raises(tracker.TrackerError, match=r"^artifact 'gone' is not in this store \(.*\), and the lab "
                                                   r"could not be asked: cannot connect to db://lab:\*\*\*@nowhere:; "
                                                   r"refused$"):
        tracker.open_store(here).artifact("gone")

