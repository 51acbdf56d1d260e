"""The Media panel's endpoints over HTTP: the index, the records nearest a step, the blobs (types, headers, Range)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import tracker

from .media_support import AUDIO_RATE, AUDIO_SECONDS, VIDEO_FRAMES, media_store


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    pytest.importorskip("av", reason="PyAV (the media extra) encodes the test videos")
    store = tmp_path_factory.mktemp("media") / "store"
    return store, media_store(store)


@pytest.fixture(scope="module")
def client(media):
    from starlette.testclient import TestClient

    import tracker.ui

    store, _ = media
    with TestClient(tracker.ui.create_app(store)) as c:
        yield c


def at(client, rid: str, step: int, names: str | None = None) -> dict:
    r = client.get(f"/api/runs/{rid}/media", params={"step": step, **({"names": names} if names else {})})
    assert r.status_code == 200, r.text
    return r.json()


def test_index_lists_each_name_with_its_kind_and_steps(client, media) -> None:
    _, ids = media
    r = client.get(f"/api/runs/{ids['a']}/media")
    assert r.status_code == 200
    doc = r.json()
    assert [(n["name"], n["kind"], n["steps"], n["count"]) for n in doc["names"]] == [
        ("voice", "audio", [0, 1, 2, 3, 4], 5), ("rollout", "video", [0, 2, 4], 3), ("lidar", "object3d", [4], 1),
        ("page", "html", [1], 1)]
    assert doc["steps"] == [0, 1, 2, 3, 4]
    # The records at the last step come along, one per name (where the panel opens).
    assert doc["at"]["step"] == 4 and {n: m["step"] for n, m in doc["at"]["media"].items()} == {
        "voice": 4, "rollout": 4, "lidar": 4, "page": 1}
    # A run without media: an empty index, not an error.
    assert client.get(f"/api/runs/{ids['plain']}/media").json() == {"names": [], "steps": [], "at": None}


def test_each_name_shows_its_nearest_logged_step_and_says_which(client, media) -> None:
    _, ids = media
    doc = at(client, ids["a"], 3)
    assert doc["step"] == 3
    m = doc["media"]
    assert (m["voice"]["step"], m["voice"]["exact"]) == (3, True)
    assert (m["rollout"]["step"], m["rollout"]["exact"]) == (2, False)  # 2 and 4 as near: the earlier
    assert (m["lidar"]["step"], m["page"]["step"]) == (4, 1)
    voice = m["voice"]["records"][0]
    assert voice["format"] == "wav" and voice["sample_rate"] == AUDIO_RATE and voice["channels"] == 1
    assert voice["duration_s"] == pytest.approx(AUDIO_SECONDS) and voice["caption"] == "tone 3"
    video = m["rollout"]["records"][0]
    assert (video["format"], video["frames"], video["width"], video["height"]) == ("mp4", VIDEO_FRAMES, 32, 32)
    lidar = m["lidar"]["records"][0]
    assert (lidar["format"], lidar["points"], lidar["boxes"]) == ("points", 400, 1)
    # Only the names asked for; a name the run does not have is absent.
    assert set(at(client, ids["a"], 100, "voice,nope")["media"]) == {"voice"}
    assert at(client, ids["a"], 100, "voice")["media"]["voice"]["step"] == 4
    assert at(client, ids["a"], -5, "rollout")["media"]["rollout"]["step"] == 0


def test_bad_parameters_are_400_and_unknown_runs_404(client, media) -> None:
    _, ids = media
    r = client.get(f"/api/runs/{ids['a']}/media", params={"step": "x"})
    assert r.status_code == 400 and "step" in r.json()["error"]
    r = client.get(f"/api/runs/{ids['a']}/media", params={"names": "voice"})
    assert r.status_code == 400 and "names" in r.json()["error"]
    assert client.get("/api/runs/nosuchrun/media").status_code == 404
    assert client.get(f"/api/runs/{ids['a']}/media/{'z' * 64}").status_code == 400


def blob_of(client, rid: str, name: str, step: int = 4) -> str:
    return at(client, rid, step, name)["media"][name]["records"][0]["sha256"]


def test_blobs_are_served_with_their_type_nosniff_a_csp_and_ranges(client, media) -> None:
    store, ids = media
    rid = ids["a"]
    want = {"voice": "audio/wav", "rollout": "video/mp4", "lidar": "application/octet-stream",
            "page": "text/html; charset=utf-8"}
    for name, ctype in want.items():
        sha = blob_of(client, rid, name)
        r = client.get(f"/api/runs/{rid}/media/{sha}")
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == ctype
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "sandbox" in r.headers["content-security-policy"]
        assert "allow-same-origin" not in r.headers["content-security-policy"]
        assert hashlib.sha256(r.content).hexdigest() == sha
    # HTML runs its own scripts only, in an opaque origin, and may load nothing.
    csp = client.get(f"/api/runs/{rid}/media/{blob_of(client, rid, 'page')}").headers["content-security-policy"]
    assert csp.startswith("sandbox allow-scripts;") and "default-src 'none'" in csp
    # Other media run nothing at all when opened as a page.
    assert client.get(f"/api/runs/{rid}/media/{blob_of(client, rid, 'voice')}").headers[
        "content-security-policy"] == "default-src 'none'; sandbox"
    # Range: a player seeking asks for part of the file; 206 with exactly those bytes.
    sha = blob_of(client, rid, "rollout")
    whole = client.get(f"/api/runs/{rid}/media/{sha}").content
    r = client.get(f"/api/runs/{rid}/media/{sha}", headers={"range": "bytes=100-199"})
    assert r.status_code == 206
    assert r.headers["content-range"] == f"bytes 100-199/{len(whole)}" and r.content == whole[100:200]
    assert r.headers["accept-ranges"] == "bytes" and r.headers["x-content-type-options"] == "nosniff"
    r = client.get(f"/api/runs/{rid}/media/{sha}", headers={"range": f"bytes={len(whole) - 10}-"})
    assert r.status_code == 206 and r.content == whole[-10:]
    r = client.get(f"/api/runs/{rid}/media/{sha}?download=1")
    disposition = r.headers["content-disposition"]
    assert disposition.startswith("attachment") and "rollout.mp4" in disposition


def test_only_blobs_the_run_names_are_served_and_damage_is_named(client, media) -> None:
    store, ids = media
    # Run b's video is not run a's: 404, though the blob is in the store.
    other = blob_of(client, ids["b"], "rollout")
    assert blob_of(client, ids["a"], "rollout") != other
    r = client.get(f"/api/runs/{ids['a']}/media/{other}")
    assert r.status_code == 404 and "names no media file" in r.json()["error"]
    # An image or artifact hash is not a media file of the run either.
    assert client.get(f"/api/runs/{ids['a']}/media/{'0' * 64}").status_code == 404
    # A damaged blob: 500 naming it, never its bytes.
    sha = blob_of(client, ids["b"], "voice")
    path = Path(store) / "blobs" / "sha256" / sha[:2] / sha[2:]
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[50] ^= 0xFF
    path.write_bytes(bytes(data))
    r = client.get(f"/api/runs/{ids['b']}/media/{sha}")
    assert r.status_code == 500 and sha in r.json()["error"] and "damaged" in r.json()["error"]


def test_the_index_follows_a_run_that_grows(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    import tracker.ui
    from tests.ui.media_support import clip

    store = tmp_path / "store"
    with tracker.start_run(project="media", name="live", store=store) as run:
        run.log({"voice": tracker.Audio(clip(300), sample_rate=AUDIO_RATE)}, step=0)
        with TestClient(tracker.ui.create_app(store)) as c:
            assert c.get(f"/api/runs/{run.id}/media").json()["steps"] == [0]
            run.log({"voice": tracker.Audio(clip(400), sample_rate=AUDIO_RATE)}, step=7)
            run.log({"page": tracker.Html("<p>x</p>")}, step=8)
            doc = c.get(f"/api/runs/{run.id}/media").json()
            assert doc["steps"] == [0, 7, 8] and [n["name"] for n in doc["names"]] == ["voice", "page"]


def test_media_in_table_cells_are_served_as_media(client, media) -> None:
    store, ids = media
    view = tracker.open_store(store).run(ids["a"])
    [table] = [r.data for r in view.records("table")]
    clip, page, note = table["data"][0]
    assert (clip["_type"], page["_type"], note) == ("audio-file", "html-file", "a note")
    r = client.get(f"/api/runs/{ids['a']}/media/{clip['sha256']}")
    assert r.status_code == 200 and r.headers["content-type"] == "audio/wav"
    assert hashlib.sha256(r.content).hexdigest() == clip["sha256"]
    r = client.get(f"/api/runs/{ids['a']}/media/{page['sha256']}")
    assert r.status_code == 200 and r.headers["content-security-policy"].startswith("sandbox allow-scripts;")
    # A cell of another run's table is not this run's.
    other = [r.data for r in tracker.open_store(store).run(ids["b"]).records("table")][0]["data"][0][0]["sha256"]
    assert client.get(f"/api/runs/{ids['a']}/media/{other}").status_code == 404


def test_report_media_budget_order_and_notes(media, tmp_path: Path) -> None:
    import base64
    import json
    import re

    from click.testing import CliRunner

    from tracker.cli import make_cli
    from tracker.ui.reportmedia import media_doc, parse_bytes, priority, spread

    store, ids = media
    assert spread(list(range(100)), 8) == [0, 14, 28, 42, 57, 71, 85, 99] and spread([1, 2], 8) == [1, 2]
    assert priority([0, 1, 2, 3, 4]) == [4, 0, 2, 1, 3]
    assert [parse_bytes(t) for t in ("4194304", "4MiB", "4M", "512KiB", "0", "1.5k")] == [4 << 20, 4 << 20, 4 << 20,
                                                                                           512 << 10, 0, 1536]
    s = tracker.open_store(store)
    infos = [s.run(ids["a"]).info]
    whole = media_doc(s, infos)
    names = {n["name"]: n for n in whole["runs"][0]["names"]}
    assert [it["step"] for it in names["voice"]["items"]] == [0, 1, 2, 3, 4]
    # Every file inline, once, as the bytes of its blob.
    for n in names.values():
        for it in n["items"]:
            uri = whole["blobs"][it["sha256"]]
            data = base64.b64decode(uri.split(",", 1)[1])
            assert hashlib.sha256(data).hexdigest() == it["sha256"] and "left_out" not in it
    assert whole["blobs"][names["voice"]["items"][0]["sha256"]].startswith("data:audio/wav;base64,")
    # A budget of one clip: the last step's clip of the first name goes in, the rest are left out with sizes.
    voice_last = names["voice"]["items"][-1]["sha256"]
    size = (Path(store) / "blobs" / "sha256" / voice_last[:2] / voice_last[2:]).stat().st_size
    tight = media_doc(s, infos, size)
    assert set(tight["blobs"]) - {k for k in tight["blobs"] if k.startswith("poster:")} == {voice_last}
    left = [it for n in tight["runs"][0]["names"] for it in n["items"] if "left_out" in it]
    assert left and all(it["left_out"] > 0 for it in left)
    assert "left out: beyond --max-media-bytes" in tight["left_out"]
    assert any(it.get("poster") for n in tight["runs"][0]["names"] if n["kind"] == "video" for it in n["items"])
    # The CLI: the option parsed, a bad value one line naming it, the file holding its media.
    out = tmp_path / "r.html"
    res = CliRunner().invoke(make_cli(), ["--store", str(store), "report", ids["a"], "--max-media-bytes", "lots",
                                          "-o", str(out)])
    assert res.exit_code != 0 and "--max-media-bytes: expected a number of bytes" in res.stderr and not out.exists()
    res = CliRunner().invoke(make_cli(), ["--store", str(store), "report", ids["a"], "--max-media-bytes", "64KiB",
                                          "-o", str(out)])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', out.read_text(),
                               re.S).group(1))
    assert doc["media"]["max_bytes"] == 64 << 10 and doc["media"]["blobs"]
    assert "media-src data:" in out.read_text()
