"""What W&B scripts call beyond ``init`` and ``log``: media objects, ``define_metric``, ``save``,
``watch``, ``sync_tensorboard``, ``WANDB_MODE=disabled`` and the public ``Api``.

:mod:`tracker.integrations.wandb.init` and :class:`tracker.Run` reach these on first use; no
framework is imported before a call needs it.
"""
