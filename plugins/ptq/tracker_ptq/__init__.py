"""Post-training INT8 quantisation for ``tracker``: numpy helpers and the ``ptq.layer`` schema.

::

    from tracker_ptq import quantize_model, layer_record

    model = quantize_model({"fc1": (w1, b1), "fc2": (w2, b2)})
    for name, (w, _b) in {"fc1": (w1, b1), "fc2": (w2, b2)}.items():
        run.log_record("ptq.layer", layer_record(model[name], w))
    model.save("mlp.ptq")

The helpers need only numpy and attrs; the ``tracker`` plugin itself lives in
:mod:`tracker_ptq.plugin`.
"""

from .calibrate import Calibrator
from .model import FORMAT_VERSION, ModelFileError, QuantizedModel, quantize_model
from .quantize import (
    MIN_SCALE,
    QMAX,
    SCHEME_PER_CHANNEL,
    SCHEME_PER_TENSOR,
    QuantizedWeights,
    from_fp16,
    quantize,
    to_fp16,
)
from .record import SCHEMA_NAME, LayerRecord, layer_record

__all__ = [
    "FORMAT_VERSION",
    "MIN_SCALE",
    "QMAX",
    "SCHEMA_NAME",
    "SCHEME_PER_CHANNEL",
    "SCHEME_PER_TENSOR",
    "Calibrator",
    "LayerRecord",
    "ModelFileError",
    "QuantizedModel",
    "QuantizedWeights",
    "from_fp16",
    "layer_record",
    "quantize",
    "quantize_model",
    "to_fp16",
]
