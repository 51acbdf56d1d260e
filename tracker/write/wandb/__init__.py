"""W&B's log call on a run: its step and commit rules, media values, ``define_metric``, ``save``, ``watch``.

Part of the write path: imports core, host, read and capture; the W&B session layer
(``tracker.integrations.wandb``: ``init``, ``Api``, disabled runs) stands above it.
"""
