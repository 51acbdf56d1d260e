"""Alerts reach real receivers: a webhook server, an SMTP server and a command, all on this machine.

Rules fire once per run and condition (NaN loss, threshold, a crashed run whose
process is killed, a stall); a receiver that is down or answers 500 never
fails the training process; repeats within wait_duration are suppressed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracker
from tracker.alerts import read_alerts
from tracker.alerts.channels import webhook_format, webhook_payload
from tracker.alerts.record import flush
from tracker.alerts.rules import parse_condition
from tracker.alerts.watch import Watcher
from tracker.cli import make_cli


class Receiver:
    """A webhook receiver on 127.0.0.1: records each JSON body; answers ``status``."""

    def __init__(self, status: int = 200) -> None:
        self.bodies: list[dict] = []
        self.status = status
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                outer.hits += 1
                if outer.status == 200:
                    outer.bodies.append(json.loads(body))
                self.send_response(outer.status)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, n: int, timeout: float = 10.0) -> list[dict]:
        end = time.monotonic() + timeout
        while len(self.bodies) < n and time.monotonic() < end:
            time.sleep(0.02)
        return self.bodies

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def webhook_toml(url: str, rules: str = "", extra: str = "") -> str:
    return textwrap.dedent(f"""
        [alerts]
        retries = 2
        backoff = 0.05
        {extra}
        [alerts.channels.hook]
        type = "webhook"
        url = "{url}"
        format = "json"
        """) + textwrap.dedent(rules)


def test_run_alert_reaches_a_webhook_and_repeats_are_suppressed(host_of, receiver: Receiver) -> None:
    host_of(webhook_toml(receiver.url))
    with tracker.start_run(project="gpt", name="big") as run:
        run.log({"loss": 1.0})
        assert run.alert("diverging", "loss went up", level="WARN", wait_duration=300) is True
        assert run.alert("diverging", "loss went up again", level=tracker.AlertLevel.WARN, wait_duration=300) is False
        tracker.alert("other", "a second title is sent")
    assert flush(10)
    bodies = receiver.wait(2)
    assert sorted(b["alert"]["title"] for b in bodies) == ["diverging", "other"]
    sent = next(b["alert"] for b in bodies if b["alert"]["title"] == "diverging")
    assert sent["run_id"] == run.id and sent["run_name"] == "big" and sent["level"] == "WARN"
    alerts = read_alerts(tracker.open_store().run(run.id))
    assert [(a["title"], a["suppressed"]) for a in alerts] == [("diverging", False), ("diverging", True),
                                                               ("other", False)]


@pytest.mark.parametrize("call", ["run", "module"])
def test_a_bad_alert_argument_is_a_tracker_error_naming_it_and_nothing_is_recorded(tmp_store: Path,
                                                                                  call: str) -> None:
    with tracker.start_run() as run:
        alert = run.alert if call == "run" else tracker.alert
        with pytest.raises(tracker.TrackerError) as caught:
            alert("t", "x", level="CATASTROPHIC")
        assert isinstance(caught.value, ValueError)  # `except ValueError` of 0.4 still catches it
        assert str(caught.value) == "schema 'alert': level: expected one of INFO, WARN, ERROR, given str 'CATASTROPHIC'"
        with pytest.raises(tracker.SchemaError, match="wait_duration: expected seconds >= 0"):
            alert("t", "x", wait_duration=-1)
        with pytest.raises(tracker.SchemaError, match="title: expected a str, given int 3"):
            alert(3, "x")
    assert read_alerts(tracker.open_store().run(run.id)) == []


def test_slack_discord_teams_payload_shapes() -> None:
    a = tracker.alerts.channels.Alert(title="loss is nan", text="at step 3", level="ERROR", run_id="abc",
                                      run_name="fft-a", condition="loss is nan")
    assert webhook_format("https://hooks.slack.com/services/x", "auto") == "slack"
    assert webhook_format("https://discord.com/api/webhooks/1/x", "auto") == "discord"
    assert webhook_format("https://x.webhook.office.com/webhookb2/y", "auto") == "teams"
    slack = webhook_payload(a, "slack")
    assert "fft-a (abc)" in slack["text"] and "loss is nan" in slack["text"]
    discord = webhook_payload(a, "discord")
    assert "fft-a (abc)" in discord["content"] and discord["allowed_mentions"] == {"parse": []}
    ping = tracker.alerts.channels.Alert(title="<!channel> & co", text="", level="INFO", run_id="abc")
    assert "&lt;!channel&gt; &amp; co" in webhook_payload(ping, "slack")["text"]
    card = webhook_payload(a, "teams")["attachments"][0]
    assert card["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert "fft-a (abc)" in card["content"]["body"][1]["text"]


def test_email_through_an_smtp_server(host_of) -> None:
    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Message

    got: list = []

    class Keep(Message):
        def handle_message(self, message) -> None:  # noqa: ANN001
            got.append(message)

    port = free_port()
    ctl = Controller(Keep(), hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        host_of(textwrap.dedent(f"""
            [alerts.channels.mail]
            type = "email"
            host = "127.0.0.1"
            port = {port}
            from = "tracker@example.org"
            to = ["me@example.org"]
            starttls = false
            """))
        with tracker.start_run(name="mailed") as run:
            run.alert("done", "the run is done", level="INFO")
            run.alert("two\nlines", "a title with a line break is one line in the subject")
        assert flush(10)
        end = time.monotonic() + 10
        while not got and time.monotonic() < end:
            time.sleep(0.02)
        assert got, "no mail arrived"
        msg = got[0]
        assert msg["Subject"] == "[tracker] INFO: done" and msg["To"] == "me@example.org"
        while len(got) < 2 and time.monotonic() < end:
            time.sleep(0.02)
        assert got[1]["Subject"] == "[tracker] INFO: two lines"
        assert f"mailed ({run.id})" in msg.get_payload()
    finally:
        ctl.stop()


def test_email_refuses_to_send_without_starttls_when_asked(host_of, capfd: pytest.CaptureFixture) -> None:
    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Sink

    port = free_port()
    ctl = Controller(Sink(), hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        host_of(f'[alerts.channels.mail]\ntype = "email"\nhost = "127.0.0.1"\nport = {port}\n'
                'from = "a@example.org"\nto = "b@example.org"\n')
        with tracker.start_run() as run:
            run.alert("t", "x")
        assert flush(10)
        assert "does not offer STARTTLS" in capfd.readouterr().err
    finally:
        ctl.stop()


def test_command_channel_gets_the_alert_in_its_environment(host_of, tmp_path: Path) -> None:
    out = tmp_path / "got.json"
    script = tmp_path / "notify.py"
    script.write_text("import json, os, sys\n"
                      f"open({str(out)!r}, 'w').write(json.dumps({{'env': {{k: v for k, v in os.environ.items() "
                      "if k.startswith('TRACKER_ALERT_')}, 'stdin': json.load(sys.stdin)}))\n")
    host_of(f'[alerts.channels.cmd]\ntype = "command"\ncommand = [{json.dumps(sys.executable)}, '
            f'{json.dumps(str(script))}]\n')
    with tracker.start_run(project="p", name="cmd-run") as run:
        run.alert("hello", "from the loop", level="ERROR")
    assert flush(10)
    got = json.loads(out.read_text())
    assert got["env"]["TRACKER_ALERT_TITLE"] == "hello" and got["env"]["TRACKER_ALERT_LEVEL"] == "ERROR"
    assert got["env"]["TRACKER_ALERT_RUN_ID"] == run.id and got["stdin"]["run_name"] == "cmd-run"


TRAIN = textwrap.dedent("""
    import sys, time, tracker
    with tracker.start_run(project="gpt", name="trainer") as run:
        for i in range(200):
            run.log({"loss": 1.0 / (i + 1)})
        run.alert("checkpoint", "saved")
        for i in range(200):
            run.log({"loss": 0.5})
    print("TRAINED", run.id, flush=True)
""")


@pytest.mark.parametrize("status", [500, None])
def test_a_receiver_down_or_failing_never_fails_training(tmp_store: Path, tmp_path: Path, status: int | None) -> None:
    if status is None:  # a port nothing listens on
        r = Receiver()
        url = r.url
        r.close()
    else:
        r = Receiver(status=status)
        url = r.url
    (Path.cwd() / "tracker.toml").write_text(webhook_toml(url, extra="finish_timeout = 3"))
    (tmp_path / "train.py").write_text(TRAIN)
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, str(tmp_path / "train.py")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "TRAINED" in done.stdout
    assert "not delivered to channel 'hook' after 3 attempts" in done.stderr
    assert time.monotonic() - t0 < 30
    run_id = done.stdout.split()[1]
    view = tracker.open_store().run(run_id)
    assert view.info.status == "finished" and len(view.metrics()["loss"]) == 400
    if status is not None:
        assert r.hits == 3  # the first attempt and two retries
        r.close()


RULES = """
[[alerts.rules]]
when = "loss is nan"
channels = ["hook"]
[[alerts.rules]]
when = "loss > 10"
project = "gpt"
channels = ["hook"]
[[alerts.rules]]
when = "run crashed"
channels = ["hook"]
[[alerts.rules]]
when = "no record for 30s"
channels = ["hook"]
"""

LOOP = textwrap.dedent("""
    import math, sys, time, tracker
    run = tracker.start_run(project="gpt", name=sys.argv[1])
    for i, v in enumerate(float(x) for x in sys.argv[2].split(",")):
        run.log({"loss": v})
    print(run.id, flush=True)   # every value is in the segment once the test reads the id
    sys.stdin.readline()   # the test kills it here, or lets it finish
    run.finish()
""")


def start_loop(tmp_path: Path, name: str, values: str) -> tuple[subprocess.Popen, str]:
    (tmp_path / "loop.py").write_text(LOOP)
    p = subprocess.Popen([sys.executable, str(tmp_path / "loop.py"), name, values], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    return p, p.stdout.readline().strip()


def test_watch_rules_fire_once_per_run_and_condition(host_of, receiver: Receiver, tmp_path: Path) -> None:
    host = host_of(webhook_toml(receiver.url, RULES))
    store = tracker.open_store()
    now = [time.time()]
    watcher = Watcher(store, host, clock=lambda: now[0])
    assert watcher.poll() == []                      # an empty store
    nan_run, nan_id = start_loop(tmp_path, "nan", "1,2,nan,3")
    big_run, big_id = start_loop(tmp_path, "big", "1,2,30,4")
    calm, calm_id = start_loop(tmp_path, "calm", "1,0.5")
    try:
        now[0] = time.time()
        fired = watcher.poll()
        assert sorted((a.run_id, a.condition) for a in fired) == sorted([(nan_id, "loss is nan"),
                                                                          (big_id, "loss > 10")])
        assert watcher.poll() == []                  # once per run and condition
        big_run.kill()                               # a crash: the process really dies
        big_run.wait()
        now[0] = time.time() + 60                    # and the others fall silent
        fired = watcher.poll()
        assert sorted((a.run_id, a.condition) for a in fired) == sorted(
            [(big_id, "run crashed"), (nan_id, "no record for 30s"), (calm_id, "no record for 30s")])
        assert watcher.poll() == []
        # A watcher started again reads what was recorded and sends nothing twice.
        assert Watcher(store, host, clock=lambda: now[0]).poll() == []
    finally:
        for p in (nan_run, calm):
            p.communicate("\n", timeout=30)
    assert flush(10)
    bodies = receiver.wait(5)
    assert len(bodies) == 5
    crashed = next(b["alert"] for b in bodies if b["alert"]["condition"] == "run crashed")
    assert crashed["run_name"] == "big" and big_id in crashed["title"]
    view = store.run(big_id)
    assert view.info.status == "crashed"             # the watcher's record changes no status
    assert [a["condition"] for a in read_alerts(view)] == ["loss > 10", "run crashed"]
    assert store.run(nan_id).info.status == "finished"


def test_runs_ended_before_the_watcher_started_are_left_alone(host_of, receiver: Receiver) -> None:
    host = host_of(webhook_toml(receiver.url, '[[alerts.rules]]\nwhen = "run finished"\n'))
    with tracker.start_run(name="old"):
        pass
    watcher = Watcher(tracker.open_store(), host)
    assert watcher.poll() == []
    with tracker.start_run(name="new") as run:
        pass
    assert [a.run_id for a in watcher.poll()] == [run.id]
    assert flush(10) and len(receiver.wait(1)) == 1


def test_a_rule_that_does_not_parse_is_one_line_naming_it(tmp_store: Path, fresh_host: None) -> None:
    (Path.cwd() / "tracker.toml").write_text('[[alerts.rules]]\nwhen = "loss >> 3"\n')
    res = CliRunner().invoke(make_cli(), ["watch", "--once"])
    assert res.exit_code == 1
    line = res.output.strip()
    assert "\n" not in line and "tracker.toml: [[alerts.rules]] #1 when = 'loss >> 3': expected" in line


@pytest.mark.parametrize(("text", "message"), [
    ('[alerts.channels.x]\ntype = "webhook"\nurl = "ftp://x"\n', "[alerts.channels.x] url: expected an http"),
    ('[alerts.channels.x]\ntype = "email"\nhost = "h"\nfrom = "a"\nto = "b"\nport = "25"\n',
     "[alerts.channels.x] port: expected a port number"),
    ('[[alerts.rules]]\nwhen = "run crashed"\nchannels = ["nope"]\n', "[[alerts.rules]] #1 channels: expected names"),
    ('[alerts]\ncolour = 1\n', "unknown key [alerts] colour"),
])
def test_bad_alert_config_names_the_key(tmp_store: Path, fresh_host: None, text: str, message: str) -> None:
    (Path.cwd() / "tracker.toml").write_text(text)
    res = CliRunner().invoke(make_cli(), ["runs"])
    assert res.exit_code == 1 and message in res.output


def test_conditions_parse() -> None:
    assert parse_condition("loss is NaN").kind == "nan"
    c = parse_condition("val/acc <= 0.1")
    assert (c.metric, c.op, c.value) == ("val/acc", "<=", 0.1) and c.holds(0.05) and not c.holds(float("nan"))
    assert parse_condition("no record for 30s").seconds == 30
    assert parse_condition("no record for 10m").seconds == 600
    assert parse_condition("run failed").kind == "failed"
    with pytest.raises(ValueError, match="expected"):
        parse_condition("loss is big")


def test_tracker_alerts_lists_and_prints_json(host_of) -> None:
    host_of("")
    with tracker.start_run(name="r") as run:
        run.alert("a", "b", level="ERROR")
        run.alert("a", "c", wait_duration=60)
    res = CliRunner().invoke(make_cli(), ["alerts", "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert [(a["title"], a["level"], a["suppressed"]) for a in doc["alerts"]] == [("a", "ERROR", False),
                                                                                ("a", "INFO", True)]
    res = CliRunner().invoke(make_cli(), ["alerts", run.id[:6]])
    assert res.exit_code == 0 and "suppressed" in res.output and "ERROR" in res.output
    shown = CliRunner().invoke(make_cli(), ["show", run.id])
    assert "Alerts" in shown.output


def test_tracker_watch_runs_as_a_command_and_delivers(tmp_store: Path, tmp_path: Path, receiver: Receiver) -> None:
    (Path.cwd() / "tracker.toml").write_text(webhook_toml(receiver.url, '[[alerts.rules]]\nwhen = "run failed"\n',
                                                          extra="interval = 0.2"))
    watch = subprocess.Popen([sys.executable, "-m", "tracker", "watch"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        (tmp_path / "fail.py").write_text("import tracker\nwith tracker.start_run(name='boom'):\n"
                                          "    raise RuntimeError('out of memory')\n")
        subprocess.run([sys.executable, str(tmp_path / "fail.py")], capture_output=True, timeout=60)
        bodies = receiver.wait(1, timeout=20)
    finally:
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=30)
    assert len(bodies) == 1, err
    a = bodies[0]["alert"]
    assert a["condition"] == "run failed" and "out of memory" in a["text"] and a["run_name"] == "boom"
    assert "run failed" in out


def test_no_thread_outlives_delivery(host_of, receiver: Receiver) -> None:
    host_of(webhook_toml(receiver.url))
    with tracker.start_run() as run:
        run.alert("x", "y")
    assert flush(10)
    end = time.monotonic() + 5
    while any(t.name == "tracker-alerts" for t in threading.enumerate()) and time.monotonic() < end:
        time.sleep(0.05)
    assert not any(t.name == "tracker-alerts" for t in threading.enumerate())


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    import shutil

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command (package openssl) to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out",
                    str(cert)], check=True, capture_output=True)
    return cert, key


def test_email_with_starttls_and_a_password_from_the_environment(host_of, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import ssl

    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Message
    from aiosmtpd.smtp import AuthResult

    cert, key = self_signed(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the client trusts this one certificate
    monkeypatch.setenv("SMTP_SECRET", "s3cret")
    got: list = []
    logins: list = []

    class Keep(Message):
        def handle_message(self, message) -> None:  # noqa: ANN001
            got.append(message)

    def authenticator(server, session, envelope, mechanism, auth_data):  # noqa: ANN001, ANN202
        logins.append((auth_data.login, auth_data.password, session.ssl is not None))
        return AuthResult(success=auth_data.password == b"s3cret")

    port = free_port()
    ctl = Controller(Keep(), hostname="127.0.0.1", port=port, tls_context=server_ctx, require_starttls=True,
                     authenticator=authenticator, auth_required=True)
    ctl.start()
    try:
        host_of(f'[alerts.channels.mail]\ntype = "email"\nhost = "127.0.0.1"\nport = {port}\n'
                'from = "t@example.org"\nto = "me@example.org"\nuser = "tracker"\npassword_env = "SMTP_SECRET"\n')
        with tracker.start_run(name="tls") as run:
            run.alert("secure", "over STARTTLS", level="WARN")
        assert flush(10)
        end = time.monotonic() + 10
        while not got and time.monotonic() < end:
            time.sleep(0.02)
        assert got and got[0]["Subject"] == "[tracker] WARN: secure"
        assert logins == [(b"tracker", b"s3cret", True)]  # logged in only once the connection was encrypted
    finally:
        ctl.stop()


def test_desktop_channel_calls_notify_send(host_of, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capfd: pytest.CaptureFixture) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.json"
    fake = bin_dir / "notify-send"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\nopen({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) "
                    "+ '\\n')\n")
    fake.chmod(0o755)
    host_of('[alerts.channels.here]\ntype = "desktop"\n')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with tracker.start_run(name="desk") as run:
        run.alert("look", "at me", level="ERROR")
    assert flush(10)
    argv = json.loads(calls.read_text().splitlines()[0])
    assert argv[:4] == ["-u", "critical", "-a", "tracker"] and argv[4] == "look" and f"desk ({run.id})" in argv[5]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with tracker.start_run(name="desk2") as run:
        run.alert("look", "again")
    assert flush(10)
    err = capfd.readouterr().err
    assert "notify-send is not installed" in err and "after 1 attempt:" in err  # not retried


def test_alerts_follow_prints_new_ones(tmp_store: Path, tmp_path: Path) -> None:
    with tracker.start_run(name="long") as run:
        run.alert("first", "one")
    follow = subprocess.Popen([sys.executable, "-m", "tracker", "alerts", "-f", "--format", "json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert follow.stdout is not None
        assert json.loads(follow.stdout.readline())["title"] == "first"
        script = tmp_path / "more.py"
        script.write_text(f"import tracker\nwith tracker.start_run(run_id={run.id!r}, resume=True) as r:\n"
                          "    r.alert('second', 'two', level='WARN')\n")
        subprocess.run([sys.executable, str(script)], check=True, timeout=60)
        line = json.loads(follow.stdout.readline())
        assert (line["title"], line["level"], line["run_id"]) == ("second", "WARN", run.id)
    finally:
        follow.send_signal(signal.SIGINT)
        follow.communicate(timeout=30)


def test_a_run_running_before_the_watcher_is_checked_from_its_figures_then_its_new_lines(
        host_of, receiver: Receiver, tmp_path: Path) -> None:
    host = host_of(webhook_toml(receiver.url, '[[alerts.rules]]\nwhen = "loss > 10"\n'
                                              '[[alerts.rules]]\nwhen = "acc < 0.1"\n'))
    proc, run_id = start_loop(tmp_path, "early", "1,50,2")
    try:
        watcher = Watcher(tracker.open_store(), host)
        fired = watcher.poll()
        assert [(a.run_id, a.condition, a.step) for a in fired] == [(run_id, "loss > 10", 2)]
        assert "loss = 50 at step 1" in fired[0].text
        assert watcher.poll() == []
        with tracker.start_run(run_id=run_id, resume=True) as more:  # a second writer logs meanwhile
            more.log({"acc": 0.5})
            more.log({"acc": 0.05})
        fired = watcher.poll()
        assert [(a.condition, a.run_name) for a in fired] == [("acc < 0.1", "early")]
        assert "acc = 0.05 at step 4" in fired[0].text
    finally:
        proc.communicate("\n", timeout=30)
    assert flush(10) and len(receiver.wait(2)) == 2


def test_watch_once_since_covers_runs_that_ended_before_and_never_sends_twice(tmp_store: Path,
                                                                             receiver: Receiver) -> None:
    (Path.cwd() / "tracker.toml").write_text(webhook_toml(receiver.url, '[[alerts.rules]]\nwhen = "run finished"\n'))
    with tracker.start_run(name="done") as run:
        run.log({"loss": 1.0})
    argv = [sys.executable, "-m", "tracker", "watch", "--once"]
    quiet = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert quiet.returncode == 0 and quiet.stdout == ""          # ended before the look: left alone
    first = subprocess.run(argv + ["--since", "10m"], capture_output=True, text=True, timeout=60)
    assert first.returncode == 0 and "run finished" in first.stdout
    again = subprocess.run(argv + ["--since", "10m"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout == ""          # already recorded in the run
    assert [b["alert"]["run_id"] for b in receiver.wait(1)] == [run.id]
    time.sleep(0.5)
    assert len(receiver.bodies) == 1


def test_new_lines_are_read_in_pieces(host_of, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracker.alerts.watch as watch_module

    monkeypatch.setattr(watch_module, "TAIL_CHUNK", 512)  # a piece holds a few lines; the first line is longer
    host = host_of('[[alerts.rules]]\nwhen = "loss is nan"\n[[alerts.rules]]\nwhen = "acc >= 0.99"\n')
    watcher = Watcher(tracker.open_store(), host)
    watcher.poll()
    with tracker.start_run(name="long", config={"notes": "x" * 2000}) as run:
        for i in range(1000):
            run.log({"loss": float("nan") if i == 777 else 1.0, "acc": i / 1000})
    fired = {a.condition: a for a in watcher.poll()}
    assert set(fired) == {"loss is nan", "acc >= 0.99"}
    assert "at step 777" in fired["loss is nan"].text and "acc = 0.99 at step 990" in fired["acc >= 0.99"].text
