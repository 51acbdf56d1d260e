"""What ``tracker ui --auth`` costs: a request with a session, and one login.

Requests go through Starlette's test client (the whole app: middleware,
routing, JSON), CPU time of the process.

- ``GET /api/runs/{id}?parts=info`` and ``GET /static/style.css`` with a
  session cookie (``--auth users.toml``) and with a ``Bearer`` token
  (``--auth token``); floor: the same request to the same app without
  ``--auth`` (what loopback serves).
- A login (``POST /login`` with the right password, answered by a redirect
  and a cookie); floor: one ``hashlib.scrypt`` with the same parameters, the
  cost the login is meant to have.

Run: ``python benchmarks/bench_auth.py [--quick]``.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, main_guard, parse_args, scratch, side_by_side  # noqa: E402


def main(args) -> None:  # noqa: ANN001
    n = 100 if args.quick else 1000
    from starlette.testclient import TestClient

    import tracker.ui
    from tracker.ui.auth import SCRYPT_N, SCRYPT_P, SCRYPT_R, TokenAuth, hash_password, write_users

    with scratch() as root:
        store = root / "store"
        with tracker.start_run(project="bench", name="auth", store=store) as run:
            for i in range(100):
                run.log({"loss": 1.0 / (i + 1)}, step=i)
        users = root / "users.toml"
        password = "bench-Password-1"
        write_users(users, {"ana": hash_password(password)})
        token = TokenAuth()
        open_app = TestClient(tracker.ui.create_app(store))
        users_app = TestClient(tracker.ui.create_app(store, auth=users), follow_redirects=False)
        token_app = TestClient(tracker.ui.create_app(store, auth=token), follow_redirects=False)
        assert users_app.post("/login", data={"user": "ana", "password": password}).status_code == 303
        bearer = {"authorization": f"Bearer {token.token}"}

        def requests(client, url: str, headers: dict | None = None):  # noqa: ANN001, ANN202
            def go() -> float:
                start = time.process_time()
                for _ in range(n):
                    r = client.get(url, headers=headers)
                assert r.status_code == 200, r.status_code
                return (time.process_time() - start) / n

            return go

        for url in (f"/api/runs/{run.id}?parts=info", "/static/style.css"):
            for how, client, headers in (("session cookie", users_app, None), ("Bearer token", token_app, bearer)):
                floor = requests(open_app, url)
                emit("auth", f"GET {url.split('?')[0].replace(run.id, '{id}')} with a {how}", unit="us",
                     clock="cpu", floor_name="the same request without --auth",
                     **side_by_side(requests(client, url, headers), floor, args.repeat))

        def login() -> float:
            start = time.perf_counter()
            r = users_app.post("/login", data={"user": "ana", "password": password})
            assert r.status_code == 303
            return time.perf_counter() - start

        def scrypt() -> float:
            start = time.perf_counter()
            hashlib.scrypt(password.encode(), salt=b"0" * 16, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32,
                           maxmem=2 * 128 * SCRYPT_R * SCRYPT_N + 2**20)
            return time.perf_counter() - start

        emit("auth", f"a login (scrypt n={SCRYPT_N}, r={SCRYPT_R}, p={SCRYPT_P})", unit="us", clock="wall",
             floor_name="one hashlib.scrypt with the same parameters", **side_by_side(login, scrypt, args.repeat))


if __name__ == "__main__":
    sys.exit(main_guard(main, parse_args(__doc__.splitlines()[0])))
