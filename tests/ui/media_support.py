"""Stores of media runs for the Media panel's tests: small clips, videos, point clouds and pages from numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import tracker

#: A page whose script tries to reach the dashboard: through its parent, its cookies and its storage.
HOSTILE_HTML = """<!doctype html><h1 id=h>logged page</h1><p id=out>script did not run</p><script>
var out = [];
try { parent.document.body.dataset.pwned = "1"; out.push("parent reached"); }
catch (e) { out.push("parent: " + e.name); }
try { top.document.title = "pwned"; out.push("top reached"); } catch (e) { out.push("top: " + e.name); }
try { document.cookie; out.push("cookie read"); } catch (e) { out.push("cookie: " + e.name); }
try { localStorage.length; out.push("storage read"); } catch (e) { out.push("storage: " + e.name); }
document.getElementById("out").textContent = out.join("; ");
</script>"""

AUDIO_RATE = 8000
AUDIO_SECONDS = 0.5
VIDEO_FPS = 8
VIDEO_FRAMES = 8


def clip(freq: float) -> np.ndarray:
    """A decaying tone of AUDIO_SECONDS at AUDIO_RATE, float32 in [-1, 1]."""
    t = np.arange(int(AUDIO_RATE * AUDIO_SECONDS)) / AUDIO_RATE
    return (0.6 * np.sin(2 * np.pi * freq * t) * np.exp(-3 * t)).astype(np.float32)


def frames(seed: int) -> np.ndarray:
    """VIDEO_FRAMES frames (T, C, H, W) of 32x32: a bar moving down over a colour of ``seed``."""
    v = np.zeros((VIDEO_FRAMES, 3, 32, 32), np.uint8)
    for i in range(VIDEO_FRAMES):
        v[i, 0] = (seed * 60) % 255
        v[i, 1, i * 4:i * 4 + 4] = 255
    return v


def cloud(n: int, seed: int) -> dict:
    """W&B's lidar/beta dict: ``n`` points (xyz and a category) and one labelled box."""
    rng = np.random.default_rng(seed)
    pts = np.concatenate([rng.normal(size=(n, 3)) * [2, 2, 0.5], rng.integers(1, 4, size=(n, 1))], axis=1)
    box = {"corners": [[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-0.5, 0.5)], "label": "car",
           "color": [255, 40, 40]}
    return {"type": "lidar/beta", "points": pts, "boxes": [box]}


def media_run(store: Path, name: str, seed: int = 0) -> str:
    """A run with audio at steps 0-4, video at 0, 2 and 4, a point cloud at 4, a page at 1 and, at 3, a table
    whose cells hold a clip and a page; its id."""
    with tracker.start_run(project="media", name=name, store=store) as run:
        for step in range(5):
            data = {"loss": 1.0 / (step + 1), "voice": tracker.Audio(clip(300 + 50 * step + 20 * seed),
                                                                     sample_rate=AUDIO_RATE, caption=f"tone {step}")}
            if step % 2 == 0:
                data["rollout"] = tracker.Video(frames(step + seed), fps=VIDEO_FPS, format="mp4")
            if step == 4:
                data["lidar"] = tracker.Object3D(cloud(400, seed))
            if step == 1:
                data["page"] = tracker.Html(HOSTILE_HTML)
            if step == 3:  # media inside a logged table's cells
                data["clips"] = tracker.Table(columns=["clip", "page", "note"], data=[
                    [tracker.Audio(clip(700 + 10 * seed), sample_rate=AUDIO_RATE, caption="cell clip"),
                     tracker.Html(HOSTILE_HTML), "a note"]])
            run.log(data, step=step)
        return run.id


def media_store(store: Path) -> dict[str, str]:
    """Two media runs and one without media: ``{"a": id, "b": id, "plain": id}``."""
    ids = {"a": media_run(store, "media-a", 0), "b": media_run(store, "media-b", 1)}
    with tracker.start_run(project="media", name="plain", store=store) as run:
        run.log({"loss": 1.0}, step=0)
        ids["plain"] = run.id
    return ids
