"""Per-layer gradient statistics for tracker (an example third-party plugin)."""

from .record import GradNorm, grad_record

__all__ = ["GradNorm", "grad_record"]
