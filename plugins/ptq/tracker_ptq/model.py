"""A whole model in INT8, and its compact binary file.

File layout (all integers little-endian)::

    magic      6 bytes  b"TRKPTQ"
    version    u16      1
    count      u32      number of layers
    per layer:
      name     u16 length, then UTF-8 bytes
      scheme   u8       0 per tensor, 1 per channel
      ndim     u8, then ndim x u32 dimensions
      scales   u32 count, then count x float32
      bias     u32 count + 1 (0: no bias), then count x float32
      weights  prod(dimensions) x int8
    checksum   u32      CRC-32 of every byte before it

The weights stay one byte each on disk, so a file is about a quarter of the
float32 model. Loading checks the magic, the version, the checksum and every
length before it builds anything, so a damaged, truncated or foreign file is a
:class:`ModelFileError`, never a wrong model.
"""

from __future__ import annotations

import os
import struct
import tempfile
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from .quantize import SCHEME_PER_CHANNEL, SCHEME_PER_TENSOR, QuantizedWeights, quantize

MAGIC = b"TRKPTQ"
FORMAT_VERSION = 1
_SCHEME_IDS = {SCHEME_PER_TENSOR: 0, SCHEME_PER_CHANNEL: 1}
_SCHEMES_BY_ID = {v: k for k, v in _SCHEME_IDS.items()}
_MAX_NDIM = 32


class ModelFileError(ValueError):
    """A model file is damaged, truncated, of another format or of an unknown version."""


@attrs.frozen(eq=False)
class QuantizedModel:
    """Named INT8 layers, in order, with size totals.

    :ivar layers: the layers by name, in the order they were given.
    """

    layers: dict[str, QuantizedWeights]

    def __getitem__(self, name: str) -> QuantizedWeights:
        return self.layers[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def size_bytes(self) -> int:
        """Bytes of the int8 weights of every layer (one per weight)."""
        return sum(layer.size_bytes for layer in self.layers.values())

    @property
    def original_size_bytes(self) -> int:
        """Bytes of the same weights in float32 (four per weight)."""
        return sum(layer.original_size_bytes for layer in self.layers.values())

    @property
    def compression_ratio(self) -> float:
        """Total float32 bytes over total int8 weight bytes: 4.0 (NaN without weights)."""
        return self.original_size_bytes / self.size_bytes if self.size_bytes else float("nan")

    @property
    def overhead_bytes(self) -> int:
        """Bytes of the float32 scales and biases of every layer."""
        return sum(layer.overhead_bytes for layer in self.layers.values())

    @property
    def file_bytes(self) -> int:
        """Bytes of the file :meth:`save` writes: weights, overhead, names, shapes, header, CRC."""
        return len(self.to_bytes())

    def dequantize(self, dtype: type = np.float32
                   ) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        """Every layer read back: ``{name: (weights, bias)}``."""
        return {name: (layer.dequantize(dtype), layer.bias) for name, layer in self.layers.items()}

    def to_bytes(self) -> bytes:
        """The model in the binary format described in this module."""
        parts = [MAGIC, struct.pack("<HI", FORMAT_VERSION, len(self.layers))]
        for name, layer in self.layers.items():
            encoded = name.encode("utf-8")
            if len(encoded) > 0xFFFF:
                raise ValueError(f"name: expected at most 65535 UTF-8 bytes, given {len(encoded)}")
            parts.append(struct.pack("<H", len(encoded)) + encoded)
            parts.append(struct.pack("<BB", _SCHEME_IDS[layer.scheme], layer.q.ndim))
            parts.append(struct.pack(f"<{layer.q.ndim}I", *layer.q.shape))
            parts.append(struct.pack("<I", layer.scales.size))
            parts.append(layer.scales.astype("<f4").tobytes())
            if layer.bias is None:
                parts.append(struct.pack("<I", 0))
            else:
                parts.append(struct.pack("<I", layer.bias.size + 1))
                parts.append(layer.bias.astype("<f4").tobytes())
            parts.append(np.ascontiguousarray(layer.q).tobytes())
        body = b"".join(parts)
        return body + struct.pack("<I", zlib.crc32(body))

    @classmethod
    def from_bytes(cls, data: bytes) -> QuantizedModel:
        """Read a model from the bytes of :meth:`to_bytes`.

        :raises ModelFileError: for anything but an intact file of a known version.
        """
        return cls(layers=_parse(bytes(data)))

    def save(self, path: str | os.PathLike[str]) -> int:
        """Write the model to ``path`` atomically (a reader never sees half a file).

        :returns: the size of the file in bytes.
        """
        data = self.to_bytes()
        target = Path(path)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return len(data)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> QuantizedModel:
        """Read a model saved by :meth:`save`.

        :raises ModelFileError: when the file is damaged, truncated or not a model file.
        """
        data = Path(path).read_bytes()
        try:
            return cls.from_bytes(data)
        except ModelFileError as exc:
            raise ModelFileError(f"{path}: {exc}") from None


def quantize_model(layers: Mapping[str, Any], *, per_channel: bool = False) -> QuantizedModel:
    """Quantise every layer of a model to INT8.

    :param layers: ``{name: (weights, bias)}``; a value may also be
        ``(weights,)`` or the weights alone, and ``bias`` may be ``None``.
    :param per_channel: one scale per output row for every layer of two or
        more dimensions (one-dimensional weights stay per tensor).
    """
    out = {}
    for name, spec in layers.items():
        if isinstance(spec, tuple):
            if len(spec) not in (1, 2):
                raise ValueError(f"{name}: expected (weights, bias), given a tuple of {len(spec)}")
            weights, bias = spec[0], (spec[1] if len(spec) == 2 else None)
        else:
            weights, bias = spec, None
        channel = per_channel and np.ndim(weights) >= 2
        out[name] = quantize(name, weights, bias, per_channel=channel)
    return QuantizedModel(layers=out)


class _Reader:
    """Bounds-checked reads from the body of a model file."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ModelFileError(f"truncated file: {what} needs {n} bytes at offset {self.pos}, "
                                 f"{len(self.data) - self.pos} left")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str, what: str) -> tuple[int, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))


def _parse(data: bytes) -> dict[str, QuantizedWeights]:
    if len(data) < len(MAGIC) or data[:len(MAGIC)] != MAGIC:
        raise ModelFileError(f"not a tracker-ptq model file (expected magic {MAGIC!r}, "
                             f"given {data[:len(MAGIC)]!r})")
    if len(data) < len(MAGIC) + 10:
        raise ModelFileError(f"truncated file: {len(data)} bytes is shorter than the header")
    body, (crc,) = data[:-4], struct.unpack("<I", data[-4:])
    version = struct.unpack("<H", body[len(MAGIC):len(MAGIC) + 2])[0]
    if version != FORMAT_VERSION:
        raise ModelFileError(f"unsupported format version {version} "
                             f"(this reader knows {FORMAT_VERSION})")
    if zlib.crc32(body) != crc:
        raise ModelFileError("damaged file: checksum mismatch (the file was changed or cut short)")
    r = _Reader(body)
    r.pos = len(MAGIC) + 2
    (count,) = r.unpack("<I", "layer count")
    layers: dict[str, QuantizedWeights] = {}
    for i in range(count):
        (n,) = r.unpack("<H", f"name length of layer {i}")
        try:
            name = r.take(n, f"name of layer {i}").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModelFileError(f"layer {i}: name is not UTF-8 ({exc})") from None
        if name in layers:
            raise ModelFileError(f"layer {i}: name {name!r} appears twice")
        scheme_id, ndim = r.unpack("<BB", f"header of layer {name!r}")
        if scheme_id not in _SCHEMES_BY_ID or ndim > _MAX_NDIM:
            raise ModelFileError(f"layer {name!r}: unknown scheme {scheme_id} or bad ndim {ndim}")
        shape = r.unpack(f"<{ndim}I", f"shape of layer {name!r}")
        (n_scales,) = r.unpack("<I", f"scale count of layer {name!r}")
        scales = np.frombuffer(r.take(4 * n_scales, f"scales of layer {name!r}"), "<f4")
        (n_bias,) = r.unpack("<I", f"bias count of layer {name!r}")
        bias = None
        if n_bias:
            bias = np.frombuffer(r.take(4 * (n_bias - 1), f"bias of layer {name!r}"), "<f4")
            bias = bias.astype(np.float32)
        size = int(np.prod(shape, dtype=np.int64))
        q = np.frombuffer(r.take(size, f"weights of layer {name!r}"), np.int8).reshape(shape)
        try:
            layers[name] = QuantizedWeights(name=name, q=q.copy(), scales=scales.astype(np.float32),
                                            bias=bias, scheme=_SCHEMES_BY_ID[scheme_id])
        except ValueError as exc:
            raise ModelFileError(f"layer {name!r}: {exc}") from None
    if r.pos != len(body):
        raise ModelFileError(f"{len(body) - r.pos} unexpected bytes after the last layer")
    return layers
