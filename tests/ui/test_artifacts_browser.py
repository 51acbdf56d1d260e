"""The Artifacts pages and the lineage view in a real headless Chromium: names, versions, aliases, files with
downloads, producer and consumers, alias history, and boxes and arrows that open what they stand for."""

from __future__ import annotations

import json

import pytest

import tracker
import tracker.ui

from ..artifacts.conftest import make_chain
from .support import XSS, Server
from .test_browser import console_errors, css, wait


@pytest.fixture(scope="module")
def chain_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("artifacts-ui")
    store = root / "store"
    ids = make_chain(store, root / "src")
    (root / "src" / "odd.txt").write_text("odd")
    with tracker.start_run(project="mnist", name=XSS, store=store, system_metrics=False) as r:
        r.use_artifact("mnist-cnn:best")
        r.log_artifact(root / "src" / "odd.txt", name="odd", type="notes", description=XSS, metadata={"why": XSS})
    ids["xss"] = r.id
    return store, ids


@pytest.fixture(scope="module")
def server(chain_store):
    store, _ = chain_store
    with Server(tracker.ui.create_app(store)) as s:
        yield s


def _nodes(driver):
    return {e.get_attribute("data-node") for e in css(driver, ".lineage .lineage-node")}


def test_the_list_and_a_name(driver, server, chain_store) -> None:
    _, ids = chain_store
    driver.get(server.url + "/artifacts")
    rows = wait(driver, lambda d: css(d, "table.artifacts-list tbody tr"), what="artifact rows")
    names = [r.get_attribute("data-artifact") for r in rows]
    assert names == ["mnist/mnist", "mnist/mnist-cnn", "mnist/mnist-eval", "mnist/odd"]
    cnn = rows[1].text
    assert "model" in cnn and "v1" in cnn and "best:v1" in cnn and "prod:v1" in cnn
    # Every alias `tracker artifact list` prints, `latest` included, is in the aliases column.
    from click.testing import CliRunner

    from tracker.cli import make_cli

    listed = CliRunner().invoke(make_cli(), ["--store", str(chain_store[0]), "artifact", "list", "--format", "json"])
    cli_aliases = next(a for a in json.loads(listed.stdout)["artifacts"] if a["name"] == "mnist-cnn")["aliases"]
    shown = [c.text for c in rows[1].find_elements("css selector", "td:nth-child(5) .alias")]
    assert "latest" in cli_aliases and shown == [f"{k}:{v}" for k, v in cli_aliases.items()], (shown, cli_aliases)
    # The type filter lives in the URL.
    from selenium.webdriver.support.ui import Select

    Select(css(driver, ".toolbar select")[0]).select_by_visible_text("dataset")
    wait(driver, lambda d: [r.get_attribute("data-artifact") for r in css(d, "table.artifacts-list tbody tr")]
         == ["mnist/mnist"], what="filtered by type")
    assert "type=dataset" in driver.current_url
    driver.get(server.url + "/artifacts?q=cnn")
    link = wait(driver, lambda d: css(d, "table.artifacts-list tbody tr a"), what="filtered by text")[0]
    assert link.text == "mnist/mnist-cnn"
    link.click()
    versions = wait(driver, lambda d: css(d, "table.versions tbody tr"), what="versions")
    assert [v.get_attribute("data-version") for v in versions] == ["v1", "v0"]  # newest first
    assert "latest" in versions[0].text and "best" in versions[0].text and "train-2" in versions[0].text
    assert "eval" in versions[0].text and "train-1" in versions[1].text
    hist = css(driver, "table.alias-history tbody tr")
    assert [h.text.split()[2] for h in hist] == ["prod", "best"]  # newest first
    nodes = wait(driver, _nodes, what="lineage of the latest")
    assert "artifact:mnist/mnist-cnn:v1" in nodes and f"run:{ids['train-2']}" in nodes
    # A run's box opens the run.
    css(driver, f'.lineage-node[data-node="run:{ids["train-2"]}"]')[0].click()
    wait(driver, lambda d: d.current_url.endswith(f"/runs/{ids['train-2']}"), what="the run page")
    assert console_errors(driver) == []


def test_a_version_page(driver, server, chain_store) -> None:
    _, ids = chain_store
    driver.get(server.url + "/artifacts/mnist%2Fmnist/v0")
    files = wait(driver, lambda d: css(d, "table.files tbody tr"), what="files")
    assert [f.get_attribute("data-file") for f in files] == ["sub/test.csv", "train.csv"]
    href = files[1].find_element("css selector", "a.download").get_attribute("href")
    body = driver.execute_async_script("const done = arguments[1]; fetch(arguments[0]).then(r => r.text()).then(done);",
                                       href)
    assert body == "x,y\n1,2\n"
    uses = css(driver, ".uses")[0].text
    assert "prep" in uses and "Used by (2)" in uses and "train-1" in uses and "train-2" in uses
    nodes = wait(driver, _nodes, what="lineage")
    root = css(driver, ".lineage")[0].get_attribute("data-root")
    assert root == "artifact:mnist/mnist:v0" and f"run:{ids['prep']}" in nodes
    # Arrows run from the producer to the version and from the version to its consumers.
    edges = {(e.get_attribute("data-from"), e.get_attribute("data-to")) for e in css(driver, ".lineage-edge")}
    assert (f"run:{ids['prep']}", root) in edges and (root, f"run:{ids['train-1']}") in edges
    # A version's pill opens its page.
    css(driver, '.lineage-node[data-node="artifact:mnist/mnist-cnn:v1"]')[0].click()
    wait(driver, lambda d: d.current_url.endswith("/artifacts/mnist%2Fmnist-cnn/v1"), what="the version page")
    wait(driver, lambda d: "mnist-cnn:v1" in css(d, ".artifact-head h1")[0].text, what="its header")
    # User text is shown as text.
    driver.get(server.url + "/artifacts/mnist%2Fodd/v0")
    meta = wait(driver, lambda d: [e.text for e in css(d, "table.kv td")], what="metadata")
    assert meta == [XSS] and XSS in css(driver, ".artifact-page")[0].text
    assert css(driver, "img[src='x']") == []
    assert console_errors(driver) == []


def test_the_run_page_draws_its_lineage(driver, server, chain_store) -> None:
    _, ids = chain_store
    driver.get(server.url + f"/runs/{ids['eval']}")
    nodes = wait(driver, _nodes, what="the run's lineage")
    assert {f"run:{ids['eval']}", "artifact:mnist/mnist-cnn:v1", "artifact:mnist/mnist-eval:v0"} <= nodes
    link = wait(driver, lambda d: css(d, 'section[data-section="artifacts"] a[href*="/artifacts/"]'),
                what="version link")[0]
    assert link.text == "mnist-eval:v0"
    css(driver, f'.lineage-node[data-node="run:{ids["prep"]}"]')[0].click()
    wait(driver, lambda d: d.current_url.endswith(f"/runs/{ids['prep']}"), what="the producer's page")
    wait(driver, lambda d: css(d, 'section[data-section="lineage"] .lineage'), what="its lineage")
    driver.get(server.url + "/artifacts/nope")
    err = wait(driver, lambda d: css(d, ".error"), what="an unknown name")[0]
    assert "no artifact named 'nope'" in err.text
