"""The Logs and Environment panels and the compare page's "Why they differ", in a real headless Chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tracker
import tracker.ui

from ..ui.support import Server
from .conftest import child_env, script

TRAIN = """
import sys, tracker
run = tracker.init(project="vision", name=sys.argv[1], config={"lr": float(sys.argv[2])})
print("\\x1b[1mstarting\\x1b[0m " + sys.argv[1])
for epoch in range(30):
    print(f"epoch {epoch}  loss {1 / (epoch + 1):.4f}  \\x1b[32mok\\x1b[0m")
    run.log({"loss": 1 / (epoch + 1)})
print("W1128 dataloader slow", file=sys.stderr)
if sys.argv[1] == "bad":
    print("NCCL error above the traceback", file=sys.stderr)
    raise RuntimeError("NCCL error: unhandled system error")
"""

BIG = """
import tracker
with tracker.start_run(project="big", name="big", environment=False) as run:
    for i in range(100_000):
        print(f"line {i:06d} " + "x" * (i % 120))
"""

# Outside any git repository, with its environment: 1,200 lines (four-digit line numbers), stderr every 97th,
# ANSI yellow, and a red last line (the console summary's `last`).
NOGIT = """
import sys, tracker
with tracker.start_run(project="vision", name="nogit", config={"lr": 0.3}) as run:
    for i in range(1200):
        if i % 97 == 96:
            print(f"W{i} worker slow", file=sys.stderr)
        elif i % 10 == 0:
            print(f"step {i} \x1b[33mwarn: lr high\x1b[0m")
        else:
            print(f"step {i}")
        if i % 100 == 0:
            run.log({"loss": 1 / (i + 1)})
    print("\x1b[31merror-ish\x1b[0m")
"""

LIVE = """
import os, sys, time, tracker
with tracker.start_run(project="live", name="live", run_id="live", environment=False) as run:
    print("first line", flush=True)
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.05)
    print("the live line", flush=True)
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.05)
"""


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Runs good and bad (bad failed) in a git repository with an uncommitted change, and a 100,000-line run."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    tmp = tmp_path_factory.mktemp("dash")
    store = tmp / "store"
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "model.py").write_text("depth = 4\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first")
    _git(repo, "remote", "add", "origin", "https://bot:s3cr3t-token@github.com/lab/model.git")
    (repo / "model.py").write_text("depth = 8  # deeper\n")
    path = script(repo, TRAIN)
    extra = tmp / "extra_site"
    (extra / "brand_new_pkg-2.1.0.dist-info").mkdir(parents=True)
    for name, lr, more in (("good", "0.1", ""), ("bad", "0.2", str(extra))):
        env = child_env(store)
        if more:
            env["PYTHONPATH"] = os.pathsep.join([more, env["PYTHONPATH"]])
        subprocess.run([sys.executable, str(path), name, lr], cwd=repo, env=env, capture_output=True, timeout=60)
    subprocess.run([sys.executable, str(script(tmp, BIG, "big.py"))], cwd=tmp, env=child_env(store),
                   capture_output=True, timeout=120, check=True)
    outside = tmp / "outside"  # the temporary folder is in no git repository
    outside.mkdir()
    subprocess.run([sys.executable, str(script(outside, NOGIT, "nogit.py"))], cwd=outside, env=child_env(store),
                   capture_output=True, timeout=120, check=True)
    runs = {r.name: r.id for r in tracker.Store(store).runs()}
    return {"store": store, "runs": runs, "tmp": tmp}


@pytest.fixture(scope="module")
def server(made):
    with Server(tracker.ui.create_app(made["store"])) as s:
        yield s


def wait(predicate, timeout=15.0, what="condition"):
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = predicate()
        except (StaleElementReferenceException, IndexError):
            last = None
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def digits(text: str) -> str:
    """The digits of a number as the page shows it (its groups are set apart by thin spaces)."""
    return "".join(c for c in text if c.isdigit())


def severe(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def logs_ready(driver):
    return wait(lambda: driver.find_elements("css selector", "[data-section=logs][data-state=ready] .log-line"),
                what="the Logs panel")


def test_logs_panel_tells_streams_apart_renders_colours_and_searches(driver, server, made) -> None:
    from selenium.webdriver.common.by import By

    from tracker.read.console import console_lines

    stored = [ln.text for ln in console_lines(tracker.Store(made["store"]).run(made["runs"]["bad"]))]
    n = len(stored)
    nccl = sum(1 for t in stored if "nccl" in t.lower())
    driver.get(f"{server.url}/runs/{made['runs']['bad']}")
    logs_ready(driver)
    panel = driver.find_element(By.CSS_SELECTOR, "[data-section=logs]")
    count = panel.find_element(By.CSS_SELECTOR, ".log-count")
    assert count.text == f"{n} lines" and n > 34
    lines = panel.find_elements(By.CSS_SELECTOR, ".log-line")
    texts = [ln.find_element(By.CSS_SELECTOR, ".log-text").text for ln in lines]
    assert texts[0] == "starting bad" and texts[1].startswith("epoch 0")
    # opened at its end, like a terminal: the last line is in view
    assert "RuntimeError: NCCL error: unhandled system error" in texts[-1]
    stderr = [ln for ln in lines if "stderr" in ln.get_attribute("class")]
    assert any("W1128 dataloader slow" in ln.text for ln in stderr)
    ok = panel.find_element(By.CSS_SELECTOR, ".ansi-fg-2")
    assert ok.text == "ok" and ok.value_of_css_property("color") != lines[1].value_of_css_property("color")
    assert panel.find_element(By.CSS_SELECTOR, ".ansi-bold").text == "starting"
    # line numbers
    assert panel.find_element(By.CSS_SELECTOR, ".log-line[data-n='1'] .log-n").text == "1"
    # search, then stderr only
    search = panel.find_element(By.CSS_SELECTOR, "[data-log-search]")
    search.send_keys("nccl")
    wait(lambda: count.text == f"{nccl} of {n} lines", what="the search to filter")
    search.clear()
    search.send_keys(" ")
    search.clear()
    panel.find_element(By.CSS_SELECTOR, "input[aria-label=stdout]").click()
    wait(lambda: count.text.endswith(f"of {n} lines") and all(
        "stderr" in ln.get_attribute("class") for ln in panel.find_elements(By.CSS_SELECTOR, ".log-line")),
        what="stdout to be hidden")
    # beside the traceback: the last lines of the console
    tail = wait(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-section=error] pre.console-tail"),
                what="the console beside the traceback")[0]
    assert "NCCL error above the traceback" in tail.text and "epoch 29" in tail.text
    assert not severe(driver)


def test_100000_lines_keep_only_the_visible_ones_in_the_dom(driver, server, made) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{server.url}/runs/{made['runs']['big']}")
    logs_ready(driver)
    panel = driver.find_element(By.CSS_SELECTOR, "[data-section=logs]")
    wait(lambda: digits(panel.find_element(By.CSS_SELECTOR, ".log-count").text) == "100000", what="every line")
    scroller = panel.find_element(By.CSS_SELECTOR, ".log-scroll")
    assert 300 < scroller.size["height"] <= 0.6 * driver.get_window_size()["height"] + 1  # capped, and scrolls
    assert len(panel.find_elements(By.CSS_SELECTOR, ".log-line")) < 200
    last = panel.find_elements(By.CSS_SELECTOR, ".log-line")[-1]
    assert last.get_attribute("data-n") == "100000"
    for fraction, expect in ((0.0, "line 000000"), (0.5, None), (1.0, "line 099999")):
        driver.execute_script("arguments[0].scrollTop = arguments[0].scrollHeight * arguments[1]", scroller, fraction)
        shown = wait(lambda: [ln.text for ln in panel.find_elements(By.CSS_SELECTOR, ".log-text")], what="lines")
        assert len(panel.find_elements(By.CSS_SELECTOR, ".log-line")) < 200
        if expect:
            wait(lambda expect=expect: any(expect in t for t in [ln.text for ln in panel.find_elements(
                By.CSS_SELECTOR, ".log-text")]), what=expect)
        else:  # the middle: lines near 50,000
            numbers = [int(t.split()[1]) for t in shown if t.startswith("line ")]
            assert numbers and 30_000 < numbers[0] < 70_000
    assert not severe(driver)


def test_a_live_run_shows_a_new_line_within_5_seconds(driver, server, made) -> None:
    from selenium.webdriver.common.by import By

    tmp = made["tmp"]
    go, stop = tmp / "go", tmp / "stop"
    child = subprocess.Popen([sys.executable, str(script(tmp, LIVE, "live.py")), str(go), str(stop)],
                             env=child_env(made["store"]), cwd=tmp, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        wait(lambda: (made["store"] / "runs" / "live").is_dir(), what="the live run")
        driver.get(f"{server.url}/runs/live")
        wait(lambda: any("first line" in ln.text for ln in driver.find_elements(By.CSS_SELECTOR, ".log-text")),
             what="the first line")
        # a console of a line or two takes a box of a line or two, not the height of a long one
        short = driver.find_element(By.CSS_SELECTOR, "[data-section=logs] .log-scroll").size["height"]
        go.touch()
        t0 = time.time()
        wait(lambda: any("the live line" in ln.text for ln in driver.find_elements(By.CSS_SELECTOR, ".log-text")),
             timeout=5.0, what="the live line within 5 s")
        assert time.time() - t0 < 5.0
        assert short < 100, short
    finally:
        stop.touch()
        child.wait(30)
    assert not severe(driver)


def test_environment_panel_lists_packages_and_shows_the_diff(driver, server, made) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{server.url}/runs/{made['runs']['bad']}")
    env = wait(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-section=environment][data-state=ready]"),
               what="the Environment panel")[0]
    git = env.find_element(By.CSS_SELECTOR, ".env-git")
    assert "main @" in git.text and "dirty: 1 file, +1 -1" in git.text
    assert "https://github.com/lab/model.git" in git.text and "s3cr3t" not in env.text
    packages = env.find_elements(By.CSS_SELECTOR, "ul.packages li")
    assert len(packages) > 10
    env.find_element(By.CSS_SELECTOR, "input[aria-label='filter packages']").send_keys("brand")
    wait(lambda: [li.text for li in env.find_elements(By.CSS_SELECTOR, "ul.packages li")] == ["brand-new-pkg 2.1.0"],
         what="the package filter")
    env.find_element(By.XPATH, ".//button[text()='show diff']").click()
    added = wait(lambda: env.find_elements(By.CSS_SELECTOR, "pre.diff-text .diff-add"), what="the diff")
    assert added[0].text == "+depth = 8  # deeper"
    holder = env.find_element(By.CSS_SELECTOR, ".diff-holder")
    assert holder.text.startswith("diff --git a/model.py b/model.py") and "null" not in holder.text, holder.text
    assert env.find_element(By.CSS_SELECTOR, "pre.diff-text .diff-del").text == "-depth = 4"
    assert not severe(driver)


def test_the_compare_page_says_why_two_runs_differ(driver, server, made) -> None:
    from selenium.webdriver.common.by import By

    runs = made["runs"]
    driver.get(f"{server.url}/compare?runs={runs['good']},{runs['bad']}")
    why = wait(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-section=why][data-state=ready]"),
               what="why they differ")[0]
    parts = {li.get_attribute("data-part"): li for li in why.find_elements(By.CSS_SELECTOR, "ul.why > li")}
    assert list(parts) == ["config", "packages", "git", "python", "platform", "gpu", "host", "command"]
    assert "differs" in parts["config"].get_attribute("class") and "~ lr" in parts["config"].text
    assert "+ brand-new-pkg" in parts["packages"].text and "2.1.0" in parts["packages"].text
    assert "same" in parts["python"].get_attribute("class")
    assert "same commit" in parts["git"].text
    assert not severe(driver)


def test_the_console_api_answers_what_changed_since_a_cursor_and_refuses_bad_parameters(made) -> None:
    from starlette.testclient import TestClient

    runs = made["runs"]
    with TestClient(tracker.ui.create_app(made["store"]), base_url="http://127.0.0.1") as c:
        whole = c.get(f"/api/runs/{runs['good']}/console").json()
        assert whole["status"] == "finished" and whole["count"] == len(whole["lines"])
        assert whole["lines"][0] == [1, 0, "\x1b[1mstarting\x1b[0m good", 0]
        assert c.get(f"/api/runs/{runs['good']}/console", params={"since": whole["cursor"]}).json()["lines"] == []
        tail = c.get(f"/api/runs/{runs['good']}/console", params={"tail": 2}).json()["lines"]
        assert tail == whole["lines"][-2:]
        for params, words in (({"since": "c1.nope"}, "does not decode"), ({"since": "xyz"}, "not a console cursor"),
                              ({"tail": "-1"}, "tail: expected")):
            res = c.get(f"/api/runs/{runs['good']}/console", params=params)
            assert res.status_code == 400 and words in res.json()["error"]
        assert c.get("/api/runs/nope/console").status_code == 404
        env = c.get(f"/api/runs/{runs['good']}/environment").json()["environment"]
        assert env["git_branch"] == "main" and "diff" not in env
        assert "+depth = 8" in c.get(f"/api/runs/{runs['good']}/environment", params={"diff": 1}).json()[
            "environment"]["diff"]
        assert c.get(f"/api/runs/{runs['big']}/environment").json() == {"environment": None}
        res = c.get("/api/diff", params={"runs": runs["good"]})
        assert res.status_code == 400 and "two run ids" in res.json()["error"]
        doc = c.get("/api/diff", params={"runs": f"{runs['good']},{runs['bad']}"}).json()
        assert doc["sections"][0]["changed"] == {"lr": [0.1, 0.2]}


def test_a_run_outside_git_says_so_on_the_run_and_compare_pages(driver, server, made) -> None:
    from selenium.webdriver.common.by import By

    runs = made["runs"]
    driver.get(f"{server.url}/runs/{runs['nogit']}")
    env = wait(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-section=environment][data-state=ready]"),
               what="the Environment panel")[0]
    assert env.find_element(By.CSS_SELECTOR, "[data-part=git]").text == "git not a git repository"
    driver.get(f"{server.url}/compare?runs={runs['nogit']},{runs['good']}")
    why = wait(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-section=why][data-state=ready]"),
               what="why they differ")[0]
    git = why.find_element(By.CSS_SELECTOR, "li[data-part=git]").text
    assert "the first run: not a git repository" in git and "not a git repository" in git.splitlines()[-1], git
    assert "clean" not in git and "(detached)" not in git
    assert not severe(driver)


def test_a_diff_of_diffs_styles_only_real_file_headers_as_headers(driver, server) -> None:
    driver.get(f"{server.url}/")
    text = ("--- first run's uncommitted diff\n+++ second run's uncommitted diff\n@@ -1,3 +1,6 @@\n"
            " diff --git a/m.py b/m.py\n+diff --git a/d.py b/d.py\n+--- a/d.py\n++++ b/d.py\n+@@ -1 +1 @@\n-+x = 1\n")
    classes = driver.execute_async_script("""
const [text, done] = arguments;
import('/static/environment.js').then((m) => done(
  [...m.diffNode(text).children].map((s) => [s.textContent.trimEnd(), s.className])));
""", text)
    got = dict(classes)
    assert got["--- first run's uncommitted diff"] == got["+++ second run's uncommitted diff"] == "diff-file"
    assert got["++++ b/d.py"] == got["+--- a/d.py"] == got["+diff --git a/d.py b/d.py"] == "diff-add", classes
    assert got["-+x = 1"] == "diff-del" and got["@@ -1,3 +1,6 @@"] == "diff-hunk"


ANSI_CELLS = """
const root = arguments[0];
return [...root.querySelectorAll('td, th')].filter((td) => td.textContent.includes('error-ish'))
  .map((td) => [td.textContent, [...td.querySelectorAll('span')].map((s) => [s.className, s.textContent])]);
"""


def _ansi_rendered(driver, root) -> None:
    cells = driver.execute_script(ANSI_CELLS, root)
    assert cells, f"no cell holds the console's last line: {root.text[root.text.find('error-ish') - 300:][:600]}"
    for text, spans in cells:
        assert "\x1b" not in text and "[31m" not in text and "[0m" not in text, text
        assert ["ansi-fg-1", "error-ish"] in spans, spans


def test_the_console_summary_renders_ansi_on_the_run_page_compare_page_and_in_a_report(driver, server, made,
                                                                                      tmp_path) -> None:
    from selenium.webdriver.common.by import By

    import tracker.ui.report

    runs = made["runs"]
    driver.get(f"{server.url}/runs/{runs['nogit']}")
    section = wait(lambda: [s for s in driver.find_elements(By.CSS_SELECTOR, "section.box")
                            if "error-ish" in s.text and s.find_elements(By.CSS_SELECTOR, "h2")
                            and s.find_element(By.CSS_SELECTOR, "h2").text.lower() == "summaries"],
                   what="the Summaries section")[0]
    _ansi_rendered(driver, section)
    driver.get(f"{server.url}/compare?runs={runs['nogit']},{runs['bad']}")
    side = wait(lambda: [s for s in driver.find_elements(By.CSS_SELECTOR, "section.box")
                         if "Summaries side by side".lower() in s.text.lower() and "error-ish" in s.text],
                what="the summaries side by side")[0]
    _ansi_rendered(driver, side)
    # A report of the failed run and the coloured one: the summary rendered, the error on the page and in print.
    store = tracker.Store(made["store"])
    infos = [store.run(runs["bad"]).info, store.run(runs["nogit"]).info]
    path = tmp_path / "report.html"
    tracker.ui.report.write(path, tracker.ui.report.build(store, infos, metrics=["loss"]))
    driver.get(path.as_uri())
    wait(lambda: driver.execute_script("return document.body.dataset.ready") == "1", what="the report drawn")
    _ansi_rendered(driver, driver.find_element(By.ID, "report"))
    error = driver.find_element(By.CSS_SELECTOR, ".report-errors li")
    assert error.get_attribute("data-id") == runs["bad"]
    assert "RuntimeError: NCCL error: unhandled system error" in error.text and "failed" in error.text
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    try:
        assert error.is_displayed() and driver.execute_script(
            "return getComputedStyle(arguments[0]).visibility", error) == "visible"
    finally:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
    assert len(driver.find_elements(By.CSS_SELECTOR, ".report-errors li")) == 1  # the finished run has no error


def _hex(css: str) -> tuple[int, int, int]:
    r, g, b = (int(float(x)) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3])
    return r, g, b


def _contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    def lum(c):
        v = [x / 255 for x in c]
        v = [x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in v]
        return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _hue(c: tuple[int, int, int]) -> float:
    """The OKLCH hue of an sRGB colour, in degrees."""
    import math

    v = [x / 255 for x in c]
    r, g, b = (x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in v)
    lc = (0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b) ** (1 / 3)
    mc = (0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b) ** (1 / 3)
    sc = (0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b) ** (1 / 3)
    a_ = 1.9779984951 * lc - 2.4285922050 * mc + 0.4505937099 * sc
    b_ = 0.0259040371 * lc + 0.7827717662 * mc - 0.8086757660 * sc
    return math.degrees(math.atan2(b_, a_)) % 360


GUTTERS = """
return [...arguments[0].querySelectorAll('.log-line')].map((line) => {
  const n = line.querySelector('.log-n');
  const range = document.createRange();
  range.selectNodeContents(n);
  const digits = range.getBoundingClientRect(), box = n.getBoundingClientRect(), st = getComputedStyle(n);
  return [n.textContent, line.classList.contains('stderr'), digits.right, box.right - parseFloat(st.borderRightWidth),
          parseFloat(st.borderRightWidth), st.borderRightColor];
});
"""


def test_the_stderr_marker_leaves_four_digit_line_numbers_whole_and_yellow_reads_on_light(driver, server,
                                                                                         made) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{server.url}/runs/{made['runs']['nogit']}")
    logs_ready(driver)
    panel = driver.find_element(By.CSS_SELECTOR, "[data-section=logs]")
    wait(lambda: digits(panel.find_element(By.CSS_SELECTOR, ".log-count").text) == "1201", what="every line")
    rows = driver.execute_script(GUTTERS, panel)  # opened at its end: numbers 1,1xx
    stderr = [r for r in rows if r[1]]
    assert stderr and all(len(r[0]) == 4 for r in stderr), rows[-5:]
    stderr_color = panel.find_element(By.CSS_SELECTOR, ".log-line.stderr .log-text").value_of_css_property("color")
    for n, _, right, marker_left, width, color in stderr:
        assert width >= 2 and _hex(color) == _hex(stderr_color), (n, width, color)
        assert right <= marker_left - 2, f"line {n}: digits end at {right}, the stderr marker starts at {marker_left}"
    # ANSI yellow on the light console: readable (WCAG AA, 4.5:1) and of another hue than stderr's amber.
    yellow = panel.find_element(By.CSS_SELECTOR, ".ansi-fg-3")
    assert yellow.text == "warn: lr high"
    fg = _hex(yellow.value_of_css_property("color"))
    bg = _hex(panel.find_element(By.CSS_SELECTOR, ".log-scroll").value_of_css_property("background-color"))
    assert _contrast(fg, bg) >= 4.5, (fg, bg, _contrast(fg, bg))
    assert abs(_hue(fg) - _hue(_hex(stderr_color))) >= 50, (fg, stderr_color)
    assert not severe(driver)
