"""W&B's media classes in a W&B-style script after ``import tracker as wandb``; ``init(monitor_gym=True)`` with
gymnasium's ``RecordVideo`` as cleanrl's ``--capture_video`` uses it; summaries; ``gc`` and ``verify`` keep and check
the media blobs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tracker
from tracker.capture.blobs import blob_path, references
from tracker.lifecycle import collect_garbage

from ..childenv import child_environ
from .conftest import blob_files

WANDB_SCRIPT = '''
import numpy as np
import tracker as wandb

wandb.init(project="media-demo", config={"sr": 16000})
rng = np.random.default_rng(0)
for epoch in range(3):
    wave = np.sin(np.linspace(0, 200 * (epoch + 1), 1600)).astype(np.float32) * 0.5
    frames = rng.integers(0, 255, size=(4, 3, 8, 8), dtype=np.uint8)
    wandb.log({
        "loss": 1.0 / (epoch + 1),
        "samples": [wandb.Audio(wave, sample_rate=wandb.config.sr, caption=f"epoch {epoch}")],
        "generated": wandb.Video(frames, fps=4),
        "lidar": wandb.Object3D({"type": "lidar/beta", "points": rng.random((50, 3)),
                                 "boxes": np.array([{"corners": rng.random((8, 3)).tolist(), "label": "car",
                                                     "color": [255, 0, 0]}])}),
        "report": wandb.Html(f"<h1>epoch {epoch}</h1>"),
    })
wandb.log({"final": wandb.Video(frames, fps=8, format="mp4")}, commit=False)
wandb.finish()
'''


def _child(code: str, cwd: Path, store: Path) -> subprocess.CompletedProcess:
    env = {**child_environ(), "WANDB_DIR": str(store)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_a_wandb_script_logs_media_at_its_steps(tmp_path: Path) -> None:
    store = tmp_path / "store"
    proc = _child(WANDB_SCRIPT, tmp_path, store)
    assert proc.returncode == 0, proc.stderr
    [info] = tracker.open_store(store).runs()
    view = tracker.open_store(store).run(info.id)
    audio = list(view.records("audio"))
    assert [(r.step, r.data["caption"], r.data["duration_s"]) for r in audio] == [
        (0, "epoch 0", 0.1), (1, "epoch 1", 0.1), (2, "epoch 2", 0.1)]
    videos = [(r.step, r.data["name"], r.data["format"], r.data["fps"]) for r in view.records("video")]
    assert videos == [(0, "generated", "gif", 4.0), (1, "generated", "gif", 4.0), (2, "generated", "gif", 4.0),
                      (3, "final", "mp4", 8.0)]
    assert [r.data["boxes"] for r in view.records("object3d")] == [1, 1, 1]
    html = [blob_path(store, r.data["sha256"]).read_bytes() for r in view.records("html")]
    assert all(h.endswith(f"<h1>epoch {i}</h1>".encode()) for i, h in enumerate(html))
    assert view.metrics()["loss"].tolist() == [1.0, 0.5, 1 / 3]
    summaries = {s.title: s.rows for s in view.summarize()}
    assert summaries["Audio"] == [{"name": "samples", "clips": 3, "first_step": 0, "last_step": 2,
                                   "duration_s": 0.3, "formats": "wav", "sample_rates": "16000"}]
    assert summaries["Videos"][0]["formats"] == "gif" and summaries["Videos"][1]["last_size"] == "8x8"
    assert summaries["3D objects"][0]["boxes"] == 3 and summaries["HTML"][0]["pages"] == 3
    assert {sha for sha in references(view)} >= {r.data["sha256"] for s in ("audio", "video", "object3d", "html")
                                                 for r in view.records(s)}


def test_gc_keeps_media_blobs_and_verify_names_a_damaged_one(tmp_store: Path) -> None:
    with tracker.start_run(project="media", system_metrics=False) as run:
        run.log({"clip": tracker.Audio(np.zeros(100), sample_rate=100),
                 "video": tracker.Video(np.zeros((2, 3, 4, 4), np.uint8), fps=2, format="mp4"),
                 "cloud": tracker.Object3D(np.zeros((3, 3))), "page": tracker.Html("<p>x</p>")})
    orphan = blob_path(tmp_store, "0" * 64)
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"nobody names this")
    old = time.time() - 7200  # older than gc's one-hour grace
    for p in blob_files(tmp_store):
        os.utime(p, (old, old))
    media = {r.data["sha256"] for s in ("audio", "video", "object3d", "html")
             for r in tracker.open_store(tmp_store).run(run.id).records(s)}
    assert len(media) == 4
    report = collect_garbage(tracker.open_store(tmp_store))
    assert report.blobs == 1 and not orphan.exists()
    assert all(blob_path(tmp_store, sha).is_file() for sha in media)
    env = {**child_environ(), "TRACKER_STORE": str(tmp_store)}
    ok = subprocess.run([sys.executable, "-m", "tracker", "verify"], env=env, capture_output=True, text=True,
                        timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    video = next(iter(tracker.open_store(tmp_store).run(run.id).records("video"))).data["sha256"]
    path = blob_path(tmp_store, video)
    os.chmod(path, 0o644)
    path.write_bytes(path.read_bytes()[:-1] + b"\x00")
    bad = subprocess.run([sys.executable, "-m", "tracker", "verify"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 1 and str(path) in bad.stdout and "video 'video'" in bad.stdout, bad.stdout


def test_monitor_gym_logs_record_videos_as_cleanrl_does(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium", reason="gymnasium and moviepy are part of the test extra")
    pytest.importorskip("moviepy", reason="gymnasium's RecordVideo writes its videos with moviepy")
    store = tmp_path / "store"
    code = '''
import numpy as np
import gymnasium as gym
import tracker as wandb


class Corridor(gym.Env):
    """A tiny rgb_array environment: a bright column walks right for 6 steps."""
    metadata = {"render_modes": ["rgb_array"], "render_fps": 25}

    def __init__(self, render_mode=None):
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Discrete(8)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return 0, {}

    def step(self, action):
        self.t += 1
        return self.t, 1.0, self.t >= 6, False, {}

    def render(self):
        frame = np.zeros((24, 32, 3), np.uint8)
        frame[:, self.t * 4:self.t * 4 + 4] = 255
        return frame


def make_env(idx, capture_video, run_name):
    def thunk():
        if capture_video and idx == 0:
            env = Corridor(render_mode="rgb_array")
            env = gym.wrappers.RecordVideo(env, f"videos/{run_name}", episode_trigger=lambda e: e % 2 == 0,
                                           disable_logger=True)
        else:
            env = Corridor()
        return gym.wrappers.RecordEpisodeStatistics(env)
    return thunk


run = wandb.init(project="cleanrl", name="ppo", monitor_gym=True, save_code=True)
envs = gym.vector.SyncVectorEnv([make_env(i, True, "ppo") for i in range(2)])
envs.reset(seed=1)
for global_step in range(15):
    envs.step(envs.action_space.sample())
envs.close()
wandb.finish()
'''
    proc = _child(code, tmp_path, store)
    assert proc.returncode == 0, proc.stderr
    written = sorted((tmp_path / "videos" / "ppo").glob("*.mp4"))
    assert len(written) >= 2
    [info] = tracker.open_store(store).runs()
    videos = list(tracker.open_store(store).run(info.id).records("video"))
    assert [r.data["name"] for r in videos] == ["videos"] * len(written)  # W&B's key for gymnasium's file names
    for rec, path in zip(videos, written, strict=True):
        assert blob_path(store, rec.data["sha256"]).read_bytes() == path.read_bytes()
        assert (rec.data["format"], rec.data["fps"], rec.data["width"], rec.data["height"]) == ("mp4", 25.0, 32, 24)
        import av

        with av.open(str(path)) as c:
            assert rec.data["frames"] == sum(1 for _ in c.decode(video=0)) >= 1


def test_monitor_gym_without_a_run_logs_nothing_and_keys_follow_w_and_b() -> None:
    from tracker.integrations.wandb.gym import key_for, log_video

    assert key_for("/tmp/openaigym.video.3.123.video000000.mp4") == "video.3"
    assert key_for("videos/run/rl-video-episode-0.mp4") == "videos"
    log_video("/nonexistent/rl-video-episode-0.mp4")  # no active run, no file: nothing happens, no error
