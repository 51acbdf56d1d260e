"""Who gets in: ``tracker ui --auth token|users.toml`` refuses every route without a session.

Every route is taken from the Starlette app itself (``app.routes``, every
file under the static mount), so a route added later is swept too, and a
route parameter this file does not know how to fill fails the sweep.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import tracker
import tracker.ui
from tracker.ui.auth import (
    LOGIN_FILES,
    FailureLimit,
    Sessions,
    TokenAuth,
    UsersAuth,
    hash_password,
    read_users,
    verify_password,
    write_users,
)

from .support import make_runs

PASSWORD = "correct-horse-Battery-9"
WRONG = "wrong-Password-Staple-7"
# Fast scrypt parameters for the users of the sweeps (each entry keeps its own; `passwd` writes the defaults).
FAST = {"n": 2**10, "r": 8, "p": 1}
#: Words of the store's content (names, projects, tags, an error), never in a URL: a refused answer shows none.
DATA = ("vision", "with a file", "baseline", "loss diverged", "weights.bin")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], str]:
    """Runs of known content and one run with a stored file (a blob the blob route serves)."""
    root = tmp_path_factory.mktemp("auth")
    path = root / "store"
    ids = make_runs(path)
    weights = root / "weights.bin"
    weights.write_bytes(os.urandom(4096))
    with tracker.start_run(project="files", name="with a file", store=path) as run:
        run.log({"loss": 1.0}, step=0)
        run.log_artifact(weights, kind="model")
        run.log({"page": tracker.Html("<p>a logged page</p>")}, step=1)  # a file the media route serves
        ids["files"] = run.id
    ids["page_sha"] = next(r.data["sha256"] for r in tracker.open_store(path).run(ids["files"]).records("html"))
    # A sweep, for the sweep page's route (Optuna is in the test extra).
    ids["sweep"] = tracker.sweep({"method": "random", "metric": {"name": "loss"},
                                  "parameters": {"lr": {"min": 0.001, "max": 0.1}}}, project="files", store=path)
    return path, ids, hashlib.sha256(weights.read_bytes()).hexdigest()


@pytest.fixture
def users_file(tmp_path: Path) -> Path:
    path = tmp_path / "users.toml"
    write_users(path, {"ana": hash_password(PASSWORD, **FAST), "ben": hash_password("ben-Password-1", **FAST)})
    return path


def sweep_urls(app, ids: dict[str, str], sha: str) -> list[tuple[str, str]]:
    """``(method, url)`` for every route of ``app``, its parameters filled with things that exist."""
    from starlette.routing import Mount, Route

    run_id = ids["files"]
    fill = {"id": run_id, "sha": sha, "path": f"runs/{run_id}"}
    queries = {"/api/compare": f"?runs={ids['alpha']},{ids['beta']}", "/api/runs/{id}/metrics": "?names=loss",
               "/api/aggregate": f"?metrics=loss&runs={ids['alpha']},{ids['beta']}",
               "/api/report": f"?runs={ids['alpha']},{ids['beta']}", "/api/diff": f"?runs={ids['alpha']},{ids['beta']}",
               "/api/artifact": "?ref=weights.bin", "/api/lineage": f"?ref={run_id}"}
    out = []
    for route in app.routes:
        # A route of sweeps takes a sweep's id where the others take a run's.
        fill["id"] = ids["sweep"] if "sweeps" in getattr(route, "path", "") else run_id
        # The media route serves the files of media records: the run's page, where the others take its artifact.
        fill["sha"] = ids["page_sha"] if "/media/" in getattr(route, "path", "") else sha
        if isinstance(route, Mount):
            assert route.path == "/static", f"a new mount {route.path}: teach this sweep its files"
            folder = Path(route.app.directory)
            files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
            assert files
            out += [("GET", f"/static/{f}") for f in files]
            continue
        assert isinstance(route, Route), f"a route of a new kind: {route!r}"
        names = re.findall(r"{(\w+)(?::\w+)?}", route.path)
        unknown = [n for n in names if n not in fill]
        assert not unknown, f"route {route.path}: parameter {unknown[0]} unknown to this sweep: add it to `fill`"
        url = re.sub(r"{(\w+)(?::\w+)?}", lambda m: fill[m.group(1)], route.path) + queries.get(route.path, "")
        out += [(m, url) for m in sorted(route.methods or {"GET"})]
        if route.path == "/{path:path}":
            out += [(m, "/") for m in sorted(route.methods or {"GET"})]
    assert len(out) > 20
    return out


def client_of(app, address: str = "testclient"):
    from starlette.testclient import TestClient

    return TestClient(app, follow_redirects=False, client=(address, 50000))


def refused(response, secret_bits: tuple[str, ...]) -> bool:
    """401, 429, or a redirect to the login page; and no run's data in the body.

    The login page's own stylesheets (:data:`LOGIN_FILES`, and only those) are served to anyone.
    """
    if response.url.path in LOGIN_FILES:
        return response.status_code == 200 and response.headers["content-type"].startswith("text/css")
    if response.status_code == 303:
        ok = response.headers["location"].startswith("/login")
    else:
        ok = response.status_code in (401, 429)
    return ok and not any(s in response.text for s in secret_bits)


def cookie_of(response) -> tuple[str, str]:
    header = response.headers["set-cookie"]
    name, _, rest = header.partition("=")
    return name, rest.split(";", 1)[0]


# --- the sweep: every route refused without a session, answered with one --------------------------------


@pytest.fixture(params=["token", "users"])
def gated(request, store, users_file):
    """An app with each way in; the failure limit raised so that the sweep meets 401, not 429."""
    path, ids, sha = store
    auth = TokenAuth() if request.param == "token" else UsersAuth(users_file)
    auth.limit = FailureLimit(limit=10**6)
    app = tracker.ui.create_app(path, auth=auth)
    return app, auth, ids, sha


def login(client, auth) -> None:
    if isinstance(auth, TokenAuth):
        r = client.get(f"/?token={auth.token}")
    else:
        r = client.post("/login", data={"user": "ana", "password": PASSWORD, "next": "/"})
    assert r.status_code == 303, r.text


def test_every_route_answers_with_a_session(gated):
    app, auth, ids, sha = gated
    with client_of(app) as c:
        login(c, auth)
        for method, url in sweep_urls(app, ids, sha):
            r = c.request(method, url)
            assert r.status_code == 200, (method, url, r.status_code, r.text[:200])


def test_every_route_refused_without_a_session(gated):
    app, auth, ids, sha = gated
    secrets = DATA
    with client_of(app) as c:
        for method, url in sweep_urls(app, ids, sha):
            r = c.request(method, url)
            assert refused(r, secrets), (method, url, r.status_code, r.text[:200])
            if url in LOGIN_FILES:
                continue
            if url.startswith(("/api/", "/static/")):
                assert r.status_code == 401, (method, url)
            else:
                assert r.status_code == 303 and r.headers["location"].startswith("/login?next=")
            assert "set-cookie" not in r.headers


def test_every_route_refused_with_a_wrong_token(store):
    path, ids, sha = store
    auth = TokenAuth()
    auth.limit = FailureLimit(limit=10**6)
    app = tracker.ui.create_app(path, auth=auth)
    wrong = auth.token[:-1] + ("A" if auth.token[-1] != "A" else "B")
    secrets = (*DATA, wrong, auth.token)
    with client_of(app) as c:
        for method, url in sweep_urls(app, ids, sha):
            sep = "&" if "?" in url else "?"
            for r in (c.request(method, url + f"{sep}token={wrong}"),
                      c.request(method, url, headers={"authorization": f"Bearer {wrong}"}),
                      c.request(method, url, headers={"authorization": f"Basic {wrong}"})):
                assert refused(r, secrets), (method, url, r.status_code, r.text[:200])
                assert r.status_code == 401 or url in LOGIN_FILES
                assert "set-cookie" not in r.headers
                assert wrong not in str(r.headers)
        r = c.post("/login", data={"token": wrong, "next": "/"})
        assert r.status_code == 401 and "Wrong token" in r.text and wrong not in r.text
        assert auth.sessions.get(wrong) is None and len(auth.sessions) == 0
        # the right one as a header works, on its own, without making a session
        r = c.get("/api/runs", headers={"authorization": f"Bearer {auth.token}"})
        assert r.status_code == 200 and ids["alpha"] in r.text and "set-cookie" not in r.headers
        assert c.get("/api/runs").status_code == 401


def test_every_route_refused_after_a_wrong_password(store, users_file):
    path, ids, sha = store
    auth = UsersAuth(users_file)
    auth.limit = FailureLimit(limit=10**6)
    app = tracker.ui.create_app(path, auth=auth)
    secrets = (*DATA, WRONG, PASSWORD)
    with client_of(app) as c:
        for form in ({"user": "ana", "password": WRONG}, {"user": "ana", "password": ""},
                     {"user": "nobody", "password": PASSWORD}, {"user": "ben", "password": PASSWORD},
                     {"user": "ana", "password": PASSWORD.upper()}, {"user": "ana"}, {},
                     {"user": PASSWORD, "password": WRONG}):  # the password typed into the user field
            r = c.post("/login", data={**form, "next": "/"})
            assert r.status_code == 401 and "Wrong user name or password" in r.text, form
            assert "set-cookie" not in r.headers and WRONG not in r.text and PASSWORD not in r.text
        assert len(auth.sessions) == 0
        for method, url in sweep_urls(app, ids, sha):
            assert refused(c.request(method, url), secrets), (method, url)


def test_a_cookie_replayed_after_logout_is_refused_on_every_route(gated):
    app, auth, ids, sha = gated
    with client_of(app) as c:
        login(c, auth)
        name, value = next(iter(c.cookies.items()))
        assert c.get("/api/runs").status_code == 200
        r = c.get("/logout")
        assert r.status_code == 303 and r.headers["location"] == "/login?out=1"
        assert "Max-Age=0" in r.headers["set-cookie"]
        assert "Logged out" in c.get("/login?out=1").text
        assert "set-cookie" not in c.get("/logout", headers={"cookie": ""}).headers  # nothing to clear
    with client_of(app) as replay:
        for method, url in sweep_urls(app, ids, sha):
            r = replay.request(method, url, headers={"cookie": f"{name}={value}"})
            assert refused(r, DATA), (method, url, r.status_code)
    assert len(auth.sessions) == 0


def test_token_exchange_sets_an_httponly_strict_cookie_and_drops_the_token(store):
    path, ids, _ = store
    auth = TokenAuth()
    app = tracker.ui.create_app(path, auth=auth)
    with client_of(app) as c:
        r = c.get(f"/runs/{ids['alpha']}?x=step&token={auth.token}&smooth=0.6")
        assert r.status_code == 303
        assert r.headers["location"] == f"/runs/{ids['alpha']}?x=step&smooth=0.6"
        attrs = [a.strip() for a in r.headers["set-cookie"].split(";")]
        assert "HttpOnly" in attrs and "SameSite=Strict" in attrs and "Path=/" in attrs
        assert attrs[0].startswith("tracker-session-") and auth.token not in r.headers["set-cookie"]
        page = c.get(r.headers["location"])
        assert page.status_code == 200 and auth.token not in page.text
        assert 'href="/logout"' in page.text  # the page gains a way out
        assert c.get("/api/runs").status_code == 200
        again = c.get(f"/?token={auth.token}")  # with a session already: the token still leaves the URL
        assert again.status_code == 303 and again.headers["location"] == "/"


def test_users_login_redirects_back_and_refuses_other_sites(store, users_file):
    path, ids, _ = store
    app = tracker.ui.create_app(path, auth=users_file)
    with client_of(app) as c:
        r = c.get(f"/runs/{ids['alpha']}?x=time")
        target = urllib.parse.parse_qs(urllib.parse.urlsplit(r.headers["location"]).query)["next"][0]
        assert target == f"/runs/{ids['alpha']}?x=time"
        page = c.get(r.headers["location"])
        assert page.status_code == 200 and 'name="password"' in page.text
        assert "form-action 'self'" in page.headers["content-security-policy"]
        assert c.get("/static/style.css").status_code == 200  # what the login page needs, and nothing more
        assert c.get("/static/app.js").status_code == 401
        r = c.post("/login", data={"user": "ana", "password": PASSWORD, "next": target},
                   headers={"origin": "http://evil.example"})
        assert r.status_code == 403 and "set-cookie" not in r.headers
        for bad in ("//evil.example/", "https://evil.example/", "/\\evil.example", "/logout"):
            r = c.post("/login", data={"user": "ana", "password": PASSWORD, "next": bad})
            assert r.status_code == 303 and r.headers["location"] == "/", bad
        r = c.post("/login", data={"user": "ana", "password": PASSWORD, "next": target},
                   headers={"origin": "http://testserver"})
        assert r.status_code == 303 and r.headers["location"] == target
        assert "ana" in c.get("/").text  # who is logged in, beside "log out"


def test_a_changed_password_ends_the_sessions_of_that_user(store, users_file):
    path, _, _ = store
    app = tracker.ui.create_app(path, auth=users_file)
    with client_of(app) as c:
        login(c, app.state.auth)
        assert c.get("/api/runs").status_code == 200
        users = read_users(users_file)
        users["ana"] = hash_password("a-New-password-2", **FAST)
        time.sleep(0.01)
        write_users(users_file, users)
        assert c.get("/api/runs").status_code == 401
        assert c.post("/login", data={"user": "ana", "password": "a-New-password-2"}).status_code == 303


def test_loopback_without_auth_needs_no_login(store):
    path, _, _ = store
    with client_of(tracker.ui.create_app(path)) as c:
        assert c.get("/api/runs").status_code == 200
        assert c.get("/").status_code == 200 and "/logout" not in c.get("/").text
        assert c.get("/login").status_code == 200  # the page route, not a login: nothing is asked


def test_the_host_check_stays(store, users_file):
    path, _, _ = store
    app = tracker.ui.create_app(path, auth=users_file)
    with client_of(app) as c:
        login(c, app.state.auth)
        assert c.get("/api/runs", headers={"host": "evil.example"}).status_code == 403
        assert c.get("/login", headers={"host": "evil.example"}).status_code == 403


# --- the failure limit ------------------------------------------------------------------------------------


def test_failed_logins_are_limited_per_address(store, users_file):
    path, _, _ = store
    app = tracker.ui.create_app(path, auth=users_file)
    with client_of(app, "10.0.0.1") as c, client_of(app, "10.0.0.2") as other:
        for _ in range(5):
            assert c.post("/login", data={"user": "ana", "password": WRONG}).status_code == 401
        r = c.post("/login", data={"user": "ana", "password": PASSWORD})  # even the right one, for now
        assert r.status_code == 429 and "set-cookie" not in r.headers
        assert 1 <= int(r.headers["retry-after"]) <= 60 and "try again in" in r.text
        assert other.post("/login", data={"user": "ana", "password": PASSWORD}).status_code == 303


def test_wrong_tokens_are_limited_per_address(store):
    path, _, _ = store
    auth = TokenAuth()
    app = tracker.ui.create_app(path, auth=auth)
    with client_of(app, "10.0.0.3") as c:
        for i in range(5):
            r = c.get("/api/runs", headers={"authorization": f"Bearer nope{i}"})
            assert r.status_code == 401
        r = c.get("/api/runs", headers={"authorization": f"Bearer {auth.token}"})
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert c.get(f"/?token={auth.token}").status_code == 429


def test_failure_limit_window():
    now = [1000.0]
    limit = FailureLimit(limit=5, window=60, clock=lambda: now[0])
    for _ in range(4):
        limit.failed("a")
        now[0] += 1
    assert limit.wait("a") == 0
    limit.failed("a")
    assert limit.wait("a") == 56  # the first failure (t=1000) leaves the window at t=1060
    assert limit.wait("b") == 0
    now[0] = 1060.5
    assert limit.wait("a") == 0  # four failures left in the window
    limit.succeeded("a")
    assert limit.wait("a") == 0


def test_sessions_expire_and_are_bounded():
    now = [0.0]
    sessions = Sessions(seconds=10, limit=3, clock=lambda: now[0])
    first = sessions.create("ana")
    assert sessions.get(first).user == "ana"
    now[0] = 10.0
    assert sessions.get(first) is None
    cookies = [sessions.create("ana") for _ in range(5)]
    assert len(sessions) == 3 and sessions.get(cookies[0]) is None and sessions.get(cookies[-1]) is not None
    assert sessions.get("") is None and sessions.get("x" * 100) is None


# --- the users file and `tracker ui passwd` -----------------------------------------------------------


def run_cli(*args, input_text: str | None = None):
    from click.testing import CliRunner

    from tracker.cli import make_cli

    return CliRunner().invoke(make_cli(), list(args), input=input_text, catch_exceptions=False)


def test_passwd_adds_and_changes_a_user(tmp_path):
    path = tmp_path / "users.toml"
    r = run_cli("ui", "passwd", "ana", "--file", str(path), input_text=f"{PASSWORD}\n{PASSWORD}\n")
    assert r.exit_code == 0, r.output
    assert "added ana" in r.output and PASSWORD not in r.output
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    text = path.read_text()
    assert PASSWORD not in text
    entry = read_users(path)["ana"]
    assert (entry["n"], entry["r"], entry["p"]) == (2**15, 8, 3) and len(entry["salt"]) == 32
    assert verify_password(PASSWORD, entry) and not verify_password(WRONG, entry)
    r = run_cli("ui", "passwd", "ben", "-f", str(path), input_text="ben-Password-1\nben-Password-1\n")
    r = run_cli("ui", "passwd", "ana", "-f", str(path), input_text=f"{WRONG}\n{WRONG}\n")
    assert r.exit_code == 0 and "changed the password of ana" in r.output
    users = read_users(path)
    assert set(users) == {"ana", "ben"} and verify_password(WRONG, users["ana"])
    assert users["ana"]["salt"] != entry["salt"]


@pytest.mark.parametrize(("answers", "message"), [
    (f"{PASSWORD}\n{WRONG}\n", "the two passwords differ; nothing changed"),
    ("short\n", "the password is too short: expected at least 8 characters; nothing changed"),
])
def test_passwd_refuses_and_changes_nothing(tmp_path, users_file, answers, message):
    before = users_file.read_bytes()
    r = run_cli("ui", "passwd", "ana", "--file", str(users_file), input_text=answers)
    assert r.exit_code == 1 and r.output.splitlines()[-1] == f"tracker: {message}"
    assert PASSWORD not in r.output and WRONG not in r.output and "short" not in r.output.replace("too short", "")
    assert users_file.read_bytes() == before


@pytest.mark.parametrize(("text", "message"), [
    ("[users.ana\n", "not valid TOML"),
    ('[users.ana]\nn = 16384\nr = 8\np = 1\nsalt = "00ff00ff00ff00ff00ff"\n', "users.ana: missing key 'hash'"),
    ('[users.ana]\nn = 1000\nr = 8\np = 1\nsalt = "00ff00ff00ff00ff" \nhash = "' + "ab" * 32 + '"\n',
     "n must be a power of two"),
    ('[users.ana]\nn = 16384\nr = 8\np = 1\nsalt = "xyz"\nhash = "' + "ab" * 32 + '"\n',
     "users.ana.salt: expected at least 8 bytes as lowercase hex digits"),
    ('[users."a b"]\nn = 16384\n', 'users.a b: expected a user name'),
    ('password = "hunter2"\n', "unknown key 'password'"),
])
def test_a_bad_users_file_is_one_line(tmp_path, text, message):
    path = tmp_path / "users.toml"
    path.write_text(text)
    for args, answers in ((("ui", "passwd", "ana", "--file", str(path)), f"{PASSWORD}\n{PASSWORD}\n"),
                          (("--store", str(tmp_path / "s"), "ui", "--auth", str(path), "--no-open"), None)):
        r = run_cli(*args, input_text=answers)
        assert r.exit_code == 1, r.output
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"tracker: {path}") and message in lines[0], lines
        assert "hunter2" not in r.output and "Traceback" not in r.output
    assert path.read_text() == text


def test_an_empty_or_missing_users_file_is_one_line(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("# nobody yet\n")
    for path, message in ((empty, "holds no user: add one with `tracker ui passwd USER"),
                          (tmp_path / "missing.toml", "no users file")):
        r = run_cli("--store", str(tmp_path / "s"), "ui", "--host", "0.0.0.0", "--auth", str(path), "--no-open")
        assert r.exit_code == 1 and message in r.output and len(r.output.strip().splitlines()) == 1


def test_a_bad_user_name_is_one_line(tmp_path):
    r = run_cli("ui", "passwd", "a b", "--file", str(tmp_path / "u.toml"), input_text="x\n")
    assert r.exit_code == 1 and "user name 'a b': expected 1 to 64 characters" in r.output
    assert not (tmp_path / "u.toml").exists()


# --- the real command ---------------------------------------------------------------------------------


def start(args: list[str], **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "TRACKER_STORE"):
        env.pop(name, None)
    return subprocess.Popen([sys.executable, "-m", "tracker", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kwargs)


def banner(proc: subprocess.Popen) -> str:
    deadline = time.time() + 30
    while time.time() < deadline:
        line = proc.stdout.readline()
        if "http://" in line:
            return line
        if proc.poll() is not None:
            break
    raise AssertionError(f"no URL printed; stderr: {proc.stderr.read()}")


def stop(proc: subprocess.Popen) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    return out, err


def fetch(url: str, data: bytes | None = None, headers: dict | None = None) -> tuple[int, str, str]:
    """``(status, headers, body)`` of one request, never following a redirect."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, data=data, headers=headers or {}), timeout=20) as r:
            return r.status, str(r.headers), r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, str(exc.headers), exc.read().decode()


def test_a_network_address_without_auth_is_refused(tmp_path):
    proc = start(["--store", str(tmp_path / "store"), "ui", "--host", "0.0.0.0", "--port", "0", "--no-open"])
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and out == ""
    assert err.strip().splitlines() == [
        f"tracker: tracker ui --host 0.0.0.0 would serve the store {tmp_path / 'store'} to anyone who can reach "
        "this machine: start it with --auth token (a random token in the URL printed) or --auth users.toml "
        "(users added by `tracker ui passwd USER --file users.toml`); see docs/team.md"]


def test_token_mode_as_a_user_runs_it(store):
    path, ids, _ = store
    proc = start(["--store", str(path), "ui", "--host", "0.0.0.0", "--port", "0", "--no-open", "--auth", "token"])
    try:
        line = banner(proc)
        # The host name's URL first (tests/ui/test_lab_banner.py), this machine's loopback URL last.
        while "http://127.0.0.1:" not in line:
            line += proc.stdout.readline()
        url = line.rstrip().rsplit(None, 1)[1]
        base, _, token = url.partition("?token=")
        assert len(token) >= 40 and base.startswith("http://127.0.0.1:")
        assert fetch(base + "api/runs")[0] == 401
        status, headers, body = fetch(base + "api/runs", headers={"Authorization": f"Bearer {token}"})
        assert status == 200 and ids["alpha"] in body
        status, headers, _ = fetch(url)
        assert status == 303 and "HttpOnly" in headers and "SameSite=Strict" in headers
        cookie = re.search(r"set-cookie: ([^;]+);", headers, re.IGNORECASE).group(1)
        assert fetch(base + "api/runs", headers={"Cookie": cookie})[0] == 200
        assert fetch(base + "logout", headers={"Cookie": cookie})[0] == 303
        assert fetch(base + "api/runs", headers={"Cookie": cookie})[0] == 401
    finally:
        out, err = stop(proc)
    # printed in the banner only, once per URL
    assert (line + out).count(token) == line.count("http://") and token not in err and token not in out


def test_no_password_in_any_output_of_the_failure_cases(store, users_file, tmp_path):
    """Wrong passwords and tokens, the limit, a mistyped passwd, a store URL with a password: none is printed."""
    path, _, _ = store
    secret = "S3cret-Db-Pass"
    seen: list[str] = []
    proc = start(["--store", str(path), "ui", "--host", "0.0.0.0", "--port", "0", "--no-open",
                  "--auth", str(users_file)])
    try:
        base = banner(proc).split(" at ", 1)[1].split()[0]
        seen.append(base)
        attempts = [("nobody", PASSWORD), (PASSWORD, WRONG), ("ana", WRONG), ("ana", WRONG), ("ben", PASSWORD),
                    ("ana", PASSWORD), ("ana", WRONG)]  # five wrong, then 429 even for the right one
        for i, (user, pw) in enumerate(attempts):
            form = urllib.parse.urlencode({"user": user, "password": pw, "next": "/"}).encode()
            status, headers, body = fetch(base + "login", form)
            assert status == (401 if i < 5 else 429), (i, status)
            seen += [headers, body]
    finally:
        out, err = stop(proc)
    seen += [out, err]
    assert "failed login of user 'ana'" in err and "of an unknown user" in err  # who failed, never with what
    # the same for a mistyped `tracker ui passwd`, run for real (no terminal: it reads the answers from stdin)
    p = start(["ui", "passwd", "ana", "--file", str(users_file)], stdin=subprocess.PIPE, start_new_session=True)
    seen += list(p.communicate(f"{PASSWORD}\n{WRONG}\n", timeout=60))
    assert p.returncode == 1
    # and a store named by a URL with a password, refused or served, says it masked
    url = f"postgresql://ana:{secret}@127.0.0.1:1/lab"
    for extra, named in (([], True), (["--auth", str(tmp_path / "missing.toml")], False), (["--auth", "token"], True)):
        p = start(["--store", url, "ui", "--host", "0.0.0.0", "--port", "0", "--no-open", *extra],
                  cwd=str(tmp_path))
        first = p.stdout.readline()  # the banner, or nothing when it refused to start
        if first:
            out, err = stop(p)
        else:
            out, err = p.communicate(timeout=60)
        out = first + out
        seen += [out, err]
        assert "postgresql://ana:***@127.0.0.1:1/lab" in out + err or not named, (out, err)
    text = "\n".join(seen)
    for word in (PASSWORD, WRONG, secret):
        assert word not in text, word


# --- the login page in a real browser -------------------------------------------------------------------


def wait_for(driver, predicate, what: str, timeout: float = 15.0):
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            found = predicate(driver)
        except StaleElementReferenceException:
            found = None
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; at {driver.current_url}")


def css(driver, selector):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def severe(driver) -> list:
    """The browser's errors, but the 401 that a wrong password or a refused page is answered with."""
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"
            and "the server responded with a status of 401" not in e["message"]]


def test_login_page_in_chromium(driver, store, users_file):
    from .support import Server

    path, ids, _ = store
    app = tracker.ui.create_app(path, auth=users_file)
    with Server(app) as server:
        driver.delete_all_cookies()
        driver.get(server.url + f"/runs/{ids['alpha']}")
        form = wait_for(driver, lambda d: css(d, "form.login"), "the login page")[0]
        assert driver.current_url.startswith(server.url + "/login?next=")
        assert css(driver, "header.top .brand")[0].text == "tracker"  # the dashboard's look
        form.find_element("name", "user").send_keys("ana")
        form.find_element("name", "password").send_keys(WRONG)
        form.submit()
        error = wait_for(driver, lambda d: css(d, "form.login .error"), "the error")[0]
        assert error.text == "Wrong user name or password." and WRONG not in driver.page_source
        assert css(driver, "input[name=user]")[0].get_attribute("value") == "ana"
        form = css(driver, "form.login")[0]
        form.find_element("name", "password").send_keys(PASSWORD)
        form.submit()
        name = wait_for(driver, lambda d: css(d, ".run-name"), "the run page after logging in")[0]
        assert name.text == "alpha" and driver.current_url == server.url + f"/runs/{ids['alpha']}"
        cookie = next(c for c in driver.get_cookies() if c["name"].startswith("tracker-session-"))
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
        assert driver.execute_script("return document.cookie") == ""  # no script can read it
        out = css(driver, "header.top .logout a")[0]
        assert "ana" in css(driver, "header.top .logout")[0].text
        out.click()
        wait_for(driver, lambda d: "Logged out." in d.page_source, "the logged-out page")
        assert driver.current_url == server.url + "/login?out=1" and not driver.get_cookies()
        driver.get(server.url + "/api/runs")
        assert "not logged in" in driver.page_source and "vision" not in driver.page_source
        assert severe(driver) == []


def test_token_url_in_chromium(driver, store):
    from .support import Server

    path, ids, _ = store
    auth = TokenAuth()
    with Server(tracker.ui.create_app(path, auth=auth)) as server:
        driver.delete_all_cookies()
        driver.get(server.url + "/?project=vision&token=" + auth.token)
        rows = wait_for(driver, lambda d: css(d, "table.runs[data-ready] tbody tr[data-id]"), "run rows")
        assert {r.get_attribute("data-id") for r in rows} == {ids["alpha"], ids["beta"]}
        assert auth.token not in driver.current_url and "project=vision" in driver.current_url
        driver.get(server.url + f"/runs/{ids['beta']}")  # the session carries on from page to page
        wait_for(driver, lambda d: css(d, ".run-name"), "the run page")
        assert severe(driver) == []


# --- properties ---------------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tracker.core.urls import redact_url  # noqa: E402
from tracker.ui.auth import safe_next  # noqa: E402

_name = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789_-"), min_size=1, max_size=12)


@given(user=_name, password=st.text(st.characters(blacklist_characters="/?#", blacklist_categories=("Cs",)),
                                     min_size=1, max_size=30),
       host=_name, port=st.none() | st.integers(1, 65535), db=_name)
def test_redact_url_hides_any_password(user, password, host, port, db):
    where = f"{host}:{port}" if port else host
    assert redact_url(f"postgresql://{user}:{password}@{where}/{db}") == f"postgresql://{user}:***@{where}/{db}"
    assert redact_url(f"postgresql://{user}@{where}/{db}") == f"postgresql://{user}@{where}/{db}"
    secret = password.replace("&", "")
    shown = redact_url(f"postgresql://{user}@{where}/{db}?sslmode=require&password={secret}")
    # An empty ?password= (a password of only "&" here) has nothing to hide and is shown as it is.
    assert shown == f"postgresql://{user}@{where}/{db}?sslmode=require&password={'***' if secret else ''}"


@given(st.text(max_size=60))
def test_safe_next_stays_on_this_server(target):
    out = safe_next(target)
    assert out.startswith("/") and not out.startswith(("//", "/\\")) and "\\" not in out
    assert urllib.parse.urlsplit(out).netloc == "" and "token" not in dict(urllib.parse.parse_qsl(
        urllib.parse.urlsplit(out).query))


@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,20}", fullmatch=True),
                       st.fixed_dictionaries({"n": st.sampled_from([2, 16, 2**14]), "r": st.integers(1, 16),
                                              "p": st.integers(1, 4),
                                              "salt": st.binary(min_size=8, max_size=32).map(bytes.hex),
                                              "hash": st.binary(min_size=16, max_size=64).map(bytes.hex)}),
                       max_size=5))
def test_users_file_round_trip(tmp_path_factory, users):
    path = tmp_path_factory.mktemp("users") / "users.toml"
    write_users(path, users)
    assert read_users(path) == users
