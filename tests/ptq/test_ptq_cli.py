"""tracker ptq inspect: a saved model's layers and totals; damaged files fail cleanly."""

import json
import subprocess
import sys

import numpy as np
from click.testing import CliRunner
from tracker_ptq import quantize_model
from tracker_ptq.cli import ptq_group


def saved_model(tmp_path):
    rng = np.random.default_rng(0)
    model = quantize_model({"fc1": (rng.normal(size=(8, 5)), rng.normal(size=8)),
                            "fc2": rng.normal(size=(3, 8))}, per_channel=True)
    path = tmp_path / "m.ptq"
    model.save(path)
    return model, path


def test_inspect_table_and_json(tmp_path):
    model, path = saved_model(tmp_path)
    runner = CliRunner()
    table = runner.invoke(ptq_group, ["inspect", str(path)])
    assert table.exit_code == 0, table.output
    assert table.output.splitlines()[0].split() == ["layer", "scheme", "shape", "scales", "bias",
                                                    "bytes_int8", "bytes_fp32", "ratio",
                                                    "overhead"]
    assert (f"{model.original_size_bytes} fp32 bytes -> {model.size_bytes} int8 bytes (4.000x); "
            f"scales and biases {model.overhead_bytes} bytes; file {path.stat().st_size} bytes"
            ) in table.output
    doc = json.loads(runner.invoke(ptq_group, ["inspect", str(path), "--format", "json"]).output)
    fc1, fc2 = doc["layers"]
    assert fc1 == {"layer": "fc1", "scheme": "symmetric_per_channel_int8", "shape": "8x5",
                   "scales": 8, "bias": 8, "bytes_int8": 40, "bytes_fp32": 4 * 40, "ratio": 4.0,
                   "overhead": 4 * 8 + 4 * 8}
    assert fc2["bias"] == 0 and fc2["bytes_int8"] == 24 and fc2["overhead"] == 4 * 3
    assert doc["totals"]["overhead_bytes"] == 4 * (8 + 8 + 3)
    assert doc["totals"]["file_bytes"] == path.stat().st_size
    assert doc["totals"]["compression_ratio"] == model.compression_ratio == 4.0


def test_inspect_damaged_file_is_one_line_and_exit_1(tmp_path):
    _, path = saved_model(tmp_path)
    data = bytearray(path.read_bytes())
    data[20] ^= 0xFF
    path.write_bytes(bytes(data))
    result = CliRunner().invoke(ptq_group, ["inspect", str(path)])
    assert result.exit_code == 1
    assert "checksum mismatch" in result.output
    assert "Traceback" not in result.output


def test_command_is_added_to_the_tracker_cli(tmp_path):
    _, path = saved_model(tmp_path)
    out = subprocess.run([sys.executable, "-m", "tracker", "ptq", "inspect", str(path),
                          "--format", "json"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert [layer["layer"] for layer in json.loads(out.stdout)["layers"]] == ["fc1", "fc2"]
