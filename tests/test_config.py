"""tracker.toml: discovery, overrides, checked keys, plugin tables, store location."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracker
from tracker.core.config import find_config, load_config, resolve_store_path


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_found_in_parent_folder_and_store_path_relative_to_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRACKER_CONFIG", raising=False)
    monkeypatch.delenv("TRACKER_STORE", raising=False)
    toml = _write(tmp_path / "proj" / "tracker.toml", '[store]\npath = "runs-here"\ndurability = "fsync"\n')
    deep = tmp_path / "proj" / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert find_config() == toml.resolve()
    cfg = load_config()
    assert cfg.durability == "fsync"
    assert cfg.store_path == toml.resolve().parent / "runs-here"
    assert resolve_store_path(None, cfg) == cfg.store_path
    monkeypatch.setenv("TRACKER_STORE", str(tmp_path / "env-store"))
    assert resolve_store_path(None, cfg) == tmp_path / "env-store"
    assert resolve_store_path(tmp_path / "cli", cfg) == tmp_path / "cli"


def test_tracker_config_env_overrides_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "tracker.toml", "[plugins]\ndisable = ['a']\n")
    other = _write(tmp_path / "other.toml", "[plugins]\ndisable = ['b']\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRACKER_CONFIG", str(other))
    assert load_config().disable == ("b",)


def test_defaults_without_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRACKER_CONFIG", raising=False)
    monkeypatch.delenv("TRACKER_STORE", raising=False)
    cfg = load_config()
    assert cfg.file is None and cfg.durability == "process" and cfg.disable == ()
    assert resolve_store_path(None, cfg) == tmp_path / ".tracker"


@pytest.mark.parametrize(("text", "words"), [
    ("[store]\ndurability = 'sometimes'\n",
     "[store] durability: expected one of 'process', 'fsync', given 'sometimes'"),
    ("[store]\npaht = 'x'\n", "unknown key [store] paht; allowed: durability, heartbeat_interval"),
    ("[stor]\n", "unknown key stor; allowed: alerts, plugins, run, store"),
    ("[run]\nconsole = 'loud'\n", "[run] console: expected true, false, \"wrap\" or \"fd\", given 'loud'"),
    ("[run]\nconsole_max_bytes = -5\n", "[run] console_max_bytes: expected a number of bytes (an int >= 0), given -5"),
    ("[run]\ncode = '*.py'\n", "[run] code: expected a list of glob patterns"),
    ("[run]\nenvironmet = false\n", "unknown key [run] environmet; allowed: code, console, console_max_bytes"),
    ("[plugins]\ndisable = 'fft_study'\n", "[plugins] disable: expected a list of plugin names, given 'fft_study'"),
    ("[plugins]\nfoo = 1\n", "[plugins] foo: expected 'disable' or a [plugins.<name>] table, given 1"),
    ("[store]\nheartbeat_timeout = -1\n", "[store] heartbeat_timeout: expected a positive number of seconds"),
    ("[store\n", "not valid TOML"),
])
def test_bad_keys_and_values_name_file_key_and_allowed(tmp_path: Path, text: str, words: str) -> None:
    toml = _write(tmp_path / "tracker.toml", text)
    with pytest.raises(tracker.ConfigError) as err:
        load_config(toml)
    assert str(toml) in str(err.value)
    assert words in str(err.value)


def test_missing_explicit_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(tracker.ConfigError, match="no such configuration file"):
        load_config(tmp_path / "nope.toml")


class ConfiguredPlugin:
    def __init__(self) -> None:
        self.seen: dict | None = None

    @tracker.hookimpl
    def tracker_configure(self, config: tracker.Config) -> None:
        self.seen = config.plugin_config("configured")


def test_plugin_table_is_handed_to_its_plugin(tmp_path: Path, make_tracker_host) -> None:  # noqa: ANN001
    toml = _write(tmp_path / "tracker.toml", "[plugins.configured]\nwindow = 7\nname = 'x'\n")
    plugin = ConfiguredPlugin()
    make_tracker_host(plugin, config=load_config(toml), names=["configured"])
    assert plugin.seen == {"window": 7, "name": "x"}


def test_repository_tracker_toml_is_valid() -> None:
    cfg = load_config(Path(__file__).resolve().parents[1] / "tracker.toml")
    assert cfg.durability in ("process", "fsync")
