"""Media travel to the lab's server with their runs: each blob an audio, video, 3D or HTML record names (and a
table's media cell) is on the server before the line naming it, byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tracker

from .conftest import ServerProcess
from .shipping import Client, new_key, same_on_server, wait

pytest.importorskip("av", reason="PyAV is part of the media extra, which the test extra installs")

MEDIA = """
    import numpy as np, tracker as wandb
    run = wandb.init(project="media", name="shipped")
    print(run.id, flush=True)
    table = wandb.Table(columns=["page"], data=[[wandb.Html("<p>in a cell</p>")]])
    wandb.log({"clip": wandb.Audio(np.linspace(-1, 1, 800), sample_rate=8000),
               "video": wandb.Video(np.zeros((2, 3, 8, 8), np.uint8), fps=2, format="mp4"),
               "cloud": wandb.Object3D(np.ones((10, 6))), "page": wandb.Html("<p>x</p>"), "cells": table})
    wandb.finish()
"""


@pytest.fixture
def client(tmp_path: Path, server: ServerProcess) -> Any:
    c = Client(tmp_path / "client", server, new_key(server, "media", "write"))
    yield c
    c.close()


def test_media_blobs_reach_the_server_with_their_records(server: ServerProcess, client: Client) -> None:
    child = client.python(MEDIA)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    rid = out.split()[0]
    wait(lambda: same_on_server(client.store, server.store, rid), 60, "the media run on the server")
    mine = tracker.open_store(client.store).run(rid)
    theirs = tracker.open_store(server.store).run(rid)
    shas = {s: next(iter(theirs.records(s))).data["sha256"] for s in ("audio", "video", "object3d", "html")}
    [table] = theirs.records("table")
    shas["cell"] = table.data["data"][0][0]["sha256"]
    assert shas == {**{s: next(iter(mine.records(s))).data["sha256"] for s in ("audio", "video", "object3d", "html")},
                    "cell": shas["cell"]}
    for sha in shas.values():
        ours = Path(client.store) / "blobs" / "sha256" / sha[:2] / sha[2:]
        there = Path(server.store) / "blobs" / "sha256" / sha[:2] / sha[2:]
        assert there.read_bytes() == ours.read_bytes()
