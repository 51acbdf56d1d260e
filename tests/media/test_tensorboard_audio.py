"""TensorBoard audio summaries (torch's ``SummaryWriter.add_audio``) become ``audio`` records: ``tracker import
tensorboard`` and ``init(sync_tensorboard=True)``."""

from __future__ import annotations

import io
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

import tracker
from tracker.capture.blobs import blob_path

from ..childenv import child_environ

pytest.importorskip("tensorboard", reason="the tensorboard extra is installed with the frameworks")
torch = pytest.importorskip("torch", reason="the events are written by torch's SummaryWriter")

RATE = 8000


def _clip(k: int) -> np.ndarray:
    return (0.4 * np.sin(np.linspace(0, 50 * (k + 1), RATE // 2))).astype(np.float32)


def _samples(data: bytes) -> tuple[int, np.ndarray]:
    with wave.open(io.BytesIO(data)) as w:
        return w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), "<i2")


def test_import_turns_audio_summaries_into_audio_records(tmp_path: Path, tmp_store: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    logdir = tmp_path / "tb"
    with SummaryWriter(log_dir=str(logdir / "speech")) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_audio("sample", torch.from_numpy(_clip(step))[None], step * 10, sample_rate=RATE)
    env = {**child_environ(), "TRACKER_STORE": str(tmp_store)}
    res = subprocess.run([sys.executable, "-m", "tracker", "import", "tensorboard", str(logdir)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    [info] = tracker.open_store(tmp_store).runs()
    recs = list(tracker.open_store(tmp_store).run(info.id).records("audio"))
    assert [(r.step, r.data["name"], r.data["format"], r.data["sample_rate"], r.data["channels"], r.data["duration_s"])
            for r in recs] == [(s, "sample", "wav", RATE, 1, 0.5) for s in (0, 10, 20)]
    for k, r in enumerate(recs):
        rate, samples = _samples(blob_path(tmp_store, r.data["sha256"]).read_bytes())
        # torch writes 16-bit PCM of the clip: within one step of 1/32767
        assert rate == RATE and np.abs(samples / 32767 - _clip(k)).max() < 2 / 32767


def test_sync_tensorboard_logs_audio_as_it_is_written(tmp_path: Path, tmp_store: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    import tracker as wandb

    run = wandb.init(project="tb", sync_tensorboard=True)
    with SummaryWriter(log_dir=str(tmp_path / "live")) as w:
        w.add_audio("voice", torch.from_numpy(_clip(1))[None], 4, sample_rate=RATE)
    wandb.finish()
    [rec] = tracker.open_store(tmp_store).run(run.id).records("audio")
    assert (rec.step, rec.data["name"], rec.data["sample_rate"]) == (4, "voice", RATE)


def test_audio_plugin_tensors_as_tensorflow_writes_them() -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.util import tensor_util

    from tracker.capture.audio import clip_from_bytes, pcm16, wav_bytes
    from tracker.integrations.tbevents import summary_values

    clips = [wav_bytes(pcm16(_clip(k)), RATE) for k in range(2)]
    value = summary_pb2.Summary.Value(tag="voice", tensor=tensor_util.make_tensor_proto(
        np.array([[c, b"label"] for c in clips], dtype=object)))
    value.metadata.plugin_data.plugin_name = "audio"
    event = event_pb2.Event(step=3, summary=summary_pb2.Summary(value=[value]))
    got = list(summary_values(event, {}))
    assert [(kind, tag) for kind, tag, _ in got] == [("audio", "voice"), ("audio", "voice")]
    assert [p for _, _, p in got] == clips
    assert clip_from_bytes(got[0][2]).fields() == {"format": "wav", "sample_rate": RATE, "channels": 1,
                                                   "duration_s": 0.5}
