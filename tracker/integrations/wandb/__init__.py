"""The W&B session layer: ``init`` with W&B's arguments, ``sync_tensorboard``, ``WANDB_MODE=disabled``, ``Api``.
Imports the store and everything below it; W&B's log rules and media classes live on the write path
(:mod:`tracker.write.wandb`), which the run reaches without importing this package.

:mod:`tracker.integrations.wandb.init` is what ``import tracker as wandb`` calls; no
framework is imported before a call needs it.
"""
