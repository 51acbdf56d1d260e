"""docs/http-api.md holds true: its curl example logs a run as written, and the OpenAPI document covers every
``/api/v1/`` route of the app and is valid OpenAPI 3.1."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import tracker

from ..sysdeps import require_curl
from .conftest import ServerProcess

DOC = Path(__file__).resolve().parents[2] / "docs" / "http-api.md"


def curl_block() -> str:
    """The ```sh block of the section "Logging a run with curl", as written."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Logging a run with curl"):]
    m = re.search(r"^```sh\n(.*?)^```", section, flags=re.S | re.M)
    assert m, "docs/http-api.md lost its curl example"
    return m.group(1)


def test_the_curl_example_logs_a_run_as_written(server: ServerProcess, tmp_path: Path) -> None:
    require_curl()
    key = server.make_key("curl", "write")
    script = tmp_path / "example.sh"
    script.write_text(curl_block())
    env = {**server.env(key), "TRACKER_URL": server.url, "TRACKER_API_KEY": key}
    out = subprocess.run(["bash", "-euo", "pipefail", str(script)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr + out.stdout
    run_id = re.search(r"logged run (\S+)", out.stdout).group(1)
    assert out.stdout.count('{"logged":1}') == 3 and '{"logged":2}' in out.stdout
    view = tracker.open_store(server.store).run(run_id)
    info = view.info
    assert (info.project, info.name, info.status, info.config) == ("curl-demo", "from curl", "finished",
                                                                   {"lr": 0.01, "batch": 32})
    m = view.metrics()
    assert list(m["step"]) == [0, 1, 2, 3, 4]
    assert [round(float(x), 3) for x in m["loss"]] == [0.9, 0.8, 0.7, 0.5, 0.4]
    assert server.cli("verify", run_id).returncode == 0
    assert key not in server.text()


def test_the_openapi_document_covers_every_route(server: ServerProcess) -> None:
    from openapi_spec_validator import validate
    from starlette.routing import Route

    from tracker.remote.keys import FolderKeys
    from tracker.ui.app import create_app
    from tracker.ui.server import Remote

    with server.client() as c:
        r = c.get("/api/v1/openapi.json")  # no key needed
    assert r.status_code == 200
    doc = r.json()
    validate(doc)
    assert doc["openapi"].startswith("3.1")
    app = create_app(Path(server.store), remote=Remote(FolderKeys(server.store), server.store))
    def plain(path: str) -> str:
        return re.sub(r"\{(\w+):path\}", r"{\1}", path)

    routes = set()
    for route in app.routes:
        if isinstance(route, Route) and route.path.startswith("/api/v1/") and "{rest:path}" not in route.path:
            methods = {m.lower() for m in route.methods or ()}
            if "get" in methods:
                methods.discard("head")  # Starlette answers HEAD of every GET
            routes |= {(plain(route.path), m) for m in methods}
    documented = {(p, m) for p, ops in doc["paths"].items() for m in ops}
    assert routes, "no /api/v1/ routes found"
    missing = sorted(routes - documented)
    assert not missing, f"routes not in /api/v1/openapi.json: {missing}"
