"""Integrations with training frameworks, the W&B drop-in, and importers of other trackers' runs.
Imports the store and everything below it; never ui or cli.

Each integration imports its framework only when it is imported itself, so
``import tracker`` stays fast::

    from tracker.integrations.lightning import TrackerLogger        # lightning.pytorch Logger
    from tracker.integrations.transformers import TrackerCallback   # transformers TrainerCallback
    from tracker.integrations.keras import TrackerCallback          # Keras 3 callback

The importers (``tracker import tensorboard LOGDIR``, ``tracker import mlflow
MLRUNS``) live in :mod:`tracker.integrations.importers`.
"""
