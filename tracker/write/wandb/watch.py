"""``watch(model)``: gradient and parameter histograms of a torch model, as W&B's ``wandb.watch`` logs them.

Parameters are histogrammed in a forward hook of the model, gradients in a
hook on each parameter's gradient, every ``log_freq``-th call; the
histograms join the pending step (``gradients/<name>``,
``parameters/<name>``), written with the next ``log`` of the training loop.
The hooks are removed at ``finish`` or by ``unwatch``.
"""

from __future__ import annotations

from typing import Any

from tracker.core.values import given
from tracker.write.wandb.media import Histogram


class Watch:
    """The hooks on one model."""

    def __init__(self, extras: Any, model: Any, log: str | None, log_freq: int, prefix: str) -> None:
        try:
            import torch
        except ImportError as exc:
            raise TypeError(f"watch: expected a torch.nn.Module: watch needs torch, which cannot be imported "
                            f"({exc}); given {given(model)}") from None
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"watch: expected a torch.nn.Module, given {given(model)}")
        self.model = model
        self.handles: list[Any] = []
        self._extras = extras
        self._freq = log_freq
        self._calls = 0
        self._grad_calls: dict[str, int] = {}
        if log in ("parameters", "all"):
            self.handles.append(model.register_forward_hook(self._on_forward))
        if log in ("gradients", "all"):
            for name, p in model.named_parameters():
                if p.requires_grad:
                    self.handles.append(p.register_hook(self._grad_hook(prefix + name)))
        self._prefix = prefix

    def _on_forward(self, module: Any, inputs: Any, output: Any) -> None:
        self._calls += 1
        if self._calls % self._freq:
            return
        for name, p in module.named_parameters():
            self._extras.hold(f"parameters/{self._prefix}{name}", Histogram(p.detach()))

    def _grad_hook(self, name: str) -> Any:
        def hook(grad: Any) -> None:
            n = self._grad_calls.get(name, 0) + 1
            self._grad_calls[name] = n
            if n % self._freq == 0:
                self._extras.hold(f"gradients/{name}", Histogram(grad.detach()))

        return hook

    def remove(self) -> None:
        """Remove every hook (idempotent)."""
        for h in self.handles:
            h.remove()
        self.handles = []
