"""``tracker ptq inspect FILE``: what a saved INT8 model holds, checked on the way."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .model import ModelFileError, QuantizedModel

COLUMNS = ["layer", "scheme", "shape", "scales", "bias", "bytes_int8", "bytes_fp32", "ratio",
           "overhead"]


def model_rows(model: QuantizedModel) -> list[dict]:
    """One plain row per layer of ``model``."""
    return [{
        "layer": name,
        "scheme": layer.scheme,
        "shape": "x".join(str(d) for d in layer.shape),
        "scales": int(layer.scales.size),
        "bias": 0 if layer.bias is None else int(layer.bias.size),
        "bytes_int8": layer.size_bytes,
        "bytes_fp32": layer.original_size_bytes,
        "ratio": round(layer.compression_ratio, 4),
        "overhead": layer.overhead_bytes,
    } for name, layer in model.layers.items()]


@click.group("ptq")
def ptq_group() -> None:
    """Post-training quantisation tools."""


@ptq_group.command("inspect")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Output format.")
def inspect_cmd(file: Path, fmt: str) -> None:
    """List the layers of a model file saved by QuantizedModel.save, with sizes.

    Sizes count the weights (int8: one byte each, against four in float32);
    the float32 scales and biases are the overhead, shown apart with the file size.

    \b
    Example:
      tracker ptq inspect mlp.ptq --format json

    Exits 1 with one line on stderr when the file is damaged or not a model file.
    """
    try:
        model = QuantizedModel.load(file)
    except ModelFileError as exc:
        raise click.ClickException(str(exc)) from None
    rows = model_rows(model)
    totals = {"layers": len(model), "bytes_int8": model.size_bytes,
              "bytes_fp32": model.original_size_bytes,
              "compression_ratio": model.compression_ratio if model.size_bytes else None,
              "overhead_bytes": model.overhead_bytes,
              "file_bytes": file.stat().st_size}
    if fmt == "json":
        click.echo(json.dumps({"file": str(file), "layers": rows, "totals": totals}, indent=2))
        return
    cells = [COLUMNS] + [[str(r[c]) for c in COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    for i, row in enumerate(cells):
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            click.echo("  ".join("-" * w for w in widths))
    ratio = f"{totals['compression_ratio']:.3f}x" if model.size_bytes else "n/a"
    click.echo(f"  {totals['layers']} layers: {totals['bytes_fp32']} fp32 bytes -> "
               f"{totals['bytes_int8']} int8 bytes ({ratio}); scales and biases "
               f"{totals['overhead_bytes']} bytes; file {totals['file_bytes']} bytes")
