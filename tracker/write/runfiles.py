"""The run's methods that store files: artifacts and models (:mod:`tracker.write.artifacts`), images and
histograms (:mod:`tracker.capture`).

Each hands the run to the module that does the work, imported only when
called, so that ``import tracker`` stays light; :class:`tracker.Run` takes them
from :class:`RunFileMethods`, as it takes W&B's from
:class:`tracker.write.runstate.WandbRunMethods`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


class RunFileMethods:
    """``log_artifact``, ``use_artifact``, ``log_model``, ``use_model``, ``log_image``, ``log_histogram`` of
    :class:`tracker.Run`, kept apart from api.py."""

    def log_artifact(self, path: Any, name: str | None = None, type: str | None = None,
                     aliases: list[str] | str | None = None, *, kind: str = "file", copy: bool = True,
                     step: int | None = None, description: str | None = None,
                     metadata: dict[str, Any] | None = None) -> Any:
        """Store a file or a folder once by content (or, ``copy=False``, record a reference to it), as a
        version of the named artifact ``name``.

        The bytes are hashed while copied into ``<store>/blobs/sha256/`` and
        renamed into place before the ``artifact`` record is appended. A folder
        is one artifact with a manifest of its files. The same content under the
        same name is the same version (no new bytes); new content is the next
        version (``v0``, ``v1``, ... in the order the records were written).

        :param path: a file or a folder, or a :class:`tracker.Artifact` filled with ``add_file``/``add_dir``.
        :param name: the artifact's name (default: the file or folder name).
        :param type: what it is (``"model"``, ``"dataset"``; default: unspecified); a name keeps one type.
        :param aliases: aliases to point at this version (``"best"``, ``"prod"``); ``latest`` is automatic.
        :param kind: free text: ``"file"`` (``"folder"`` for a folder by default), ``"checkpoint"``...
        :param copy: ``False``: record the absolute path, size and sha256 without copying.
        :param step: the step (default: the run's latest step; never advances the automatic step).
        :returns: the :class:`tracker.Artifact` written (``.version``, ``.aliases`` when asked).
        :raises SchemaError: a bad name, kind, type, alias or a type other than the name's;
            :class:`TrackerError`: ``path`` cannot be read. Nothing is written.
        """
        from tracker.write.artifacts import log_artifact

        return log_artifact(self, path, name, type, aliases, kind=kind, copy=copy, step=step,
                            description=description, metadata=metadata)

    def use_artifact(self, artifact: Any, type: str | None = None, aliases: list[str] | None = None,
                     use_as: str | None = None) -> Any:
        """Record that this run uses a version of an artifact, and return it (:class:`tracker.Artifact`).

        :param artifact: ``"mnist-cnn"`` (its latest), ``"mnist-cnn:v3"``, ``"mnist-cnn:prod"``, with
            ``project/`` (or W&B's ``entity/project/``) in front when needed; or an Artifact of the store.
        :param type: when given, the artifact must be of this type.
        :raises TrackerError: an unknown name, version or alias (the message names those that exist).
        """
        from tracker.write.artifacts import use_artifact

        return use_artifact(self, artifact, type, aliases, use_as)

    def log_model(self, path: str | os.PathLike[str], name: str | None = None,
                  aliases: list[str] | str | None = None) -> Any:
        """W&B's ``log_model``: ``log_artifact(path, name, type="model", aliases=aliases)``."""
        return self.log_artifact(path, name, "model", aliases)

    def use_model(self, name: str) -> Path:
        """W&B's ``use_model``: use the model version ``name`` and download it; returns the local path
        (the file of a one-file model, else its folder)."""
        art = self.use_artifact(name)
        return art.file() if art.file_count == 1 and not art.folder else art.download()

    def log_image(self, name: str, image: Any, step: int | None = None, *, caption: str = "") -> str:
        """Store an image as a PNG blob with an ``image`` record (needs the ``media`` extra: Pillow).

        :param image: a numpy array HxW, HxWx3 or HxWx4 (uint8, or floats in [0, 1]),
            a PIL image, or the path of a PNG or JPEG file.
        :param step: the step (default: the run's latest step; never advances the automatic step).
        :returns: the PNG's sha256.
        :raises SchemaError: naming what is wrong with the image; nothing is written.
        """
        from tracker.capture import log_image

        return log_image(self, name, image, step, caption=caption)

    def log_histogram(self, name: str, values: Any, step: int | None = None, *, bins: Any = 64) -> dict[str, Any]:
        """Log a ``histogram`` record of ``values`` (numpy array, torch tensor or sequence; flattened).

        NaN and infinities are counted apart; an empty input is allowed.

        :param bins: a number of equal bins over the finite values' range, or a sequence of edges.
        :param step: the step (default: the run's latest step; never advances the automatic step).
        :returns: the record's fields.
        """
        from tracker.capture import log_histogram

        return log_histogram(self, name, values, step, bins=bins)
