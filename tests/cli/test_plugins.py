"""``tracker plugins`` and ``tracker schemas``: what plugins offer, broken ones, field details."""

from __future__ import annotations

import csv
import io
import json

import attrs
import pytest
from click.testing import CliRunner

import tracker
from tracker.cli import make_cli
from tracker.testing import make_host


@attrs.frozen(kw_only=True)
class Sample:
    """A sample record of the inline test plugin.

    :ivar kind: which kind of sample.
    """

    kind: str = attrs.field(validator=attrs.validators.in_(["a", "b"]))
    size: int = attrs.field(validator=attrs.validators.ge(0), metadata={"description": "how many, from metadata"})
    tags: list[str] = attrs.field(factory=list)
    weight: float | None = None


class GoodPlugin:
    @tracker.hookimpl
    def tracker_schemas(self):
        return [tracker.Schema("demo.sample", Sample, version=2, description="a sample")]

    @tracker.hookimpl
    def tracker_summarizers(self):
        return [tracker.Summarizer("demo.sizes", "demo.sample", lambda t: tracker.Summary("Sizes", []),
                                   "sizes of samples")]


class BrokenPlugin:
    @tracker.hookimpl
    def tracker_schemas(self):
        raise RuntimeError("cannot offer schemas today")


@pytest.fixture
def inline_cli(store):
    with pytest.warns(tracker.TrackerWarning, match="plugin 'shaky' is broken"):
        host = make_host(GoodPlugin(), BrokenPlugin(), names=["demo", "shaky"])
    old = tracker.set_host(host)
    group = make_cli(host)
    yield lambda *args: CliRunner().invoke(group, list(args), catch_exceptions=False)
    tracker.set_host(old)


def test_plugins_json_lists_every_installed_plugin(cli, store):
    result = cli("plugins", "--format", "json")
    assert result.exit_code == 0, result.output
    plugins = {p["name"]: p for p in json.loads(result.stdout)}
    assert plugins["metrics"]["builtin"] is True and plugins["metrics"]["distribution"] == "tracker-core"
    assert plugins["metrics"]["schemas"] == ["metrics", "metric_axis"]
    assert plugins["metrics"]["version"] == tracker.__version__
    fft = plugins["fft_study"]
    assert fft["status"] == "ok" and fft["builtin"] is False and "fft.loss_point" in fft["schemas"]
    assert "fft.loss_curves" in fft["summarizers"]


def test_broken_plugin_is_listed_with_its_error(inline_cli):
    doc = {p["name"]: p for p in json.loads(inline_cli("plugins", "--format", "json").stdout)}
    assert doc["shaky"]["status"] == "broken" and "cannot offer schemas today" in doc["shaky"]["error"]
    assert doc["demo"]["status"] == "ok" and doc["demo"]["schemas"] == ["demo.sample"]
    table = inline_cli("plugins").stdout
    assert "metrics (built-in)" in table
    shaky = next(line for line in table.splitlines() if line.startswith("shaky"))
    assert "broken" in shaky and "cannot offer schemas today" in shaky
    rows = list(csv.DictReader(io.StringIO(inline_cli("plugins", "--format", "csv").stdout)))
    assert {r["name"]: r["status"] for r in rows} == {"metrics": "ok", "demo": "ok", "shaky": "broken"}


def test_schemas_list(cli, store):
    docs = json.loads(cli("schemas", "--format", "json").stdout)
    names = [d["name"] for d in docs]
    assert names == sorted(names) and {"metrics", "fft.params", "ptq.layer", "phase.step", "quant.error"} <= set(names)
    table = cli("schemas").stdout
    assert next(line for line in table.splitlines() if line.startswith("metrics ")).split()[1] == "metrics"


def test_schema_fields_types_defaults_constraints_descriptions(inline_cli):
    result = inline_cli("schemas", "demo.sample", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["name"], doc["plugin"], doc["version"], doc["description"]) == ("demo.sample", "demo", 2, "a sample")
    fields = {f["name"]: f for f in doc["fields"]}
    assert fields["kind"]["type"] == "str" and fields["kind"]["required"] is True
    assert fields["kind"]["constraints"] == ["one of ['a', 'b']"]
    assert fields["kind"]["description"] == "which kind of sample."
    assert fields["size"]["constraints"] == ["value >= 0"]
    assert fields["size"]["description"] == "how many, from metadata"
    assert fields["tags"]["type"] == "list[str]" and fields["tags"]["default"] == []
    assert fields["weight"]["type"] == "float | None" and fields["weight"]["required"] is False
    assert doc["summarizers"] == [{"name": "demo.sizes", "description": "sizes of samples"}]
    table = inline_cli("schemas", "demo.sample").stdout
    kind = next(line for line in table.splitlines() if line.startswith("kind"))
    assert kind.split()[:3] == ["kind", "str", "required"] and "one of ['a', 'b']" in kind


def test_plugin_validators_read_as_constraints(cli, store):
    doc = json.loads(cli("schemas", "fft.params", "--format", "json").stdout)
    fields = {f["name"]: f for f in doc["fields"]}
    assert fields["n_fft"]["constraints"] == ["a power of two >= 2"]
    assert fields["twiddles"]["constraints"] == ["value >= 0"]
    assert fields["total_params"]["default"] is None and fields["total_params"]["required"] is False
    phase = {f["name"]: f for f in json.loads(cli("schemas", "phase.step", "--format", "json").stdout)["fields"]}
    assert phase["phase"]["constraints"] == ["one of 'FULL', 'PREDICT', 'CORRECT'"]
    assert "upper case" in phase["phase"]["description"]
    rows = list(csv.DictReader(io.StringIO(cli("schemas", "phase.step", "--format", "csv").stdout)))
    assert rows[0]["field"] == "phase" and rows[0]["default"] == "required"


def test_free_form_metrics_schema(cli, store):
    doc = json.loads(cli("schemas", "metrics", "--format", "json").stdout)
    assert doc["free_form"] is True and doc["fields"][0]["type"] == "float | int | bool"
