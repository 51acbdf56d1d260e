"""The shipper's round trip with the team store behind the server: PostgreSQL and a bucket (moto's S3)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

import tracker

from ..query.conftest import pg_server  # noqa: F401 - the one PostgreSQL server of the session
from ..team.conftest import new_database, s3_server  # noqa: F401 - the S3 server of the session
from .shipping import Client, new_key, wait

pytest.importorskip("psycopg", reason="the team extra (psycopg) is not installed")

#: A run with an artifact (a blob the bucket must get) and 200 metrics records.
RUN = """
    import tracker
    open("weights.bin", "wb").write(bytes(range(256)) * 400)
    with tracker.start_run(project="vision", name="over-postgres", system_metrics=False) as run:
        print(run.id, flush=True)
        for i in range(200):
            run.log({"loss": 1.0 / (i + 1), "i": i})
        run.log_artifact("weights.bin", name="weights")
"""

_names = itertools.count(1)


def test_the_round_trip_over_postgresql_and_a_bucket(pg_server: Any, s3_server: Any,  # noqa: F811
                                                      server_factory: Any, tmp_path: Path) -> None:
    import boto3

    url = new_database(pg_server)
    bucket = f"ship-{next(_names)}"
    aws = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": s3_server.endpoint}
    s3 = boto3.client("s3", endpoint_url=s3_server.endpoint, aws_access_key_id="testing",
                      aws_secret_access_key="testing-secret", region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    server = server_factory("--spool", str(tmp_path / "spool"), store=url,
                            env={**aws, "TRACKER_TEAM_BLOBS": f"s3://{bucket}/team"})
    key = new_key(server, "trainer", "write", ["vision"])
    # The client holds the key and the server's URL only: no database URL, no bucket keys.
    client = Client(tmp_path / "client", server, key)
    try:
        child = client.python(RUN)
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0 and err.strip() == "", err
        rid = out.strip()
        mine = tracker.open_store(client.store).run(rid)
        sha = [r for r in mine.records("artifact")][0].data["sha256"]

        def in_team() -> bool:
            try:
                view = tracker.open_store(url).run(rid)
                return view.info.status == "finished" and len(view.metrics()["loss"]) == 200
            except tracker.TrackerError:
                return False

        wait(in_team, 60, "the run in the team database")
        team = tracker.open_store(url).run(rid)
        assert team.metrics()["i"].tolist() == mine.metrics()["i"].tolist() == list(range(200))
        assert team.info.project == "vision" and team.info.name == "over-postgres"
        wait(lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"team/sha256/{sha[:2]}/{sha[2:]}").get("KeyCount"),
             60, "the artifact's blob in the bucket")
        body = s3.get_object(Bucket=bucket, Key=f"team/sha256/{sha[:2]}/{sha[2:]}")["Body"].read()
        assert body == bytes(range(256)) * 400
        # Nothing twice: a sync from the client afterwards finds the server up to date.
        res = client.tracker("sync", server.url)
        assert res.returncode == 0 and "shipped 0 runs" in res.stdout, res.stdout + res.stderr
        assert len(tracker.open_store(url).run(rid).metrics()["loss"]) == 200
    finally:
        client.close()
