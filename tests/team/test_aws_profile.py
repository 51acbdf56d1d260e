"""The bucket reached as the AWS CLI reaches it: a profile of ~/.aws/credentials and ~/.aws/config, no variable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tracker

from ..query.support import run_tracker


@pytest.fixture
def profile_env(s3_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of a machine whose only S3 settings are the profile ``lab`` in files (and AWS_PROFILE)."""
    for k in list(os.environ):
        if k.startswith("AWS_") or k == "TRACKER_TEAM_BLOBS":
            monkeypatch.delenv(k)
    aws = tmp_path / "aws"
    aws.mkdir()
    (aws / "credentials").write_text("[default]\naws_access_key_id = DEFAULTKEYID\naws_secret_access_key = d\n\n"
                                     "[lab]\naws_access_key_id = LABKEYID\naws_secret_access_key = lab-secret-key\n")
    (aws / "config").write_text(f"[default]\nregion = us-east-1\n\n[profile lab]\nregion = eu-west-1\n"
                                f"endpoint_url = {s3_server.endpoint}\n")
    env = {"AWS_SHARED_CREDENTIALS_FILE": str(aws / "credentials"), "AWS_CONFIG_FILE": str(aws / "config"),
           "AWS_PROFILE": "lab", "AWS_EC2_METADATA_DISABLED": "true",
           "TRACKER_BLOB_CACHE": str(tmp_path / "cache")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def test_a_profile_in_a_credentials_file_reaches_the_bucket(profile_env, s3_server, tmp_path: Path,
                                                          pg_url: str) -> None:
    import boto3

    boto3.session.Session().client("s3").create_bucket(Bucket="profiled", CreateBucketConfiguration={
        "LocationConstraint": "eu-west-1"})
    (tmp_path / "weights.bin").write_bytes(b"w" * 5000)
    store = tmp_path / "store"
    with tracker.start_run("lab", store=store, run_id="one", system_metrics=False) as run:
        run.log_artifact(tmp_path / "weights.bin")
    seen = len(s3_server.authorizations)
    # tracker sync and tracker get, the real commands, with nothing but the profile to go on.
    res = run_tracker("--store", str(store), "sync", pg_url, "--blobs", "s3://profiled/team", env=profile_env)
    assert res.returncode == 0, res.stderr
    assert "blobs: 1 uploaded" in res.stdout, res.stdout
    signed = [a for a in s3_server.authorizations[seen:] if a]
    assert signed and all("Credential=LABKEYID/" in a and "/eu-west-1/s3/aws4_request" in a for a in signed)
    (tmp_path / "tracker.toml").write_text('[team]\nblobs = "s3://profiled/team"\n')
    res = run_tracker("--store", pg_url, "get", "one", "weights.bin", "-o", str(tmp_path / "got.bin"),
                      env={**profile_env, "TRACKER_CONFIG": str(tmp_path / "tracker.toml")})
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "got.bin").read_bytes() == b"w" * 5000
    assert "lab-secret-key" not in res.stdout + res.stderr


def test_a_profile_that_does_not_exist_is_one_line(profile_env, tmp_path: Path, pg_url: str) -> None:
    (tmp_path / "a.txt").write_text("a")
    store = tmp_path / "store"
    with tracker.start_run("lab", store=store, run_id="one", system_metrics=False) as run:
        run.log_artifact(tmp_path / "a.txt")
    res = run_tracker("--store", str(store), "sync", pg_url, "--blobs", "s3://profiled/team",
                      env={**profile_env, "AWS_PROFILE": "nosuch"})
    assert res.returncode == 1 and "nosuch" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip().count("\n") == 0, res.stderr
