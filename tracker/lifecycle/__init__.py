"""A run's life after the fact: edits (tags, name, notes, config, summary), trash, gc, du.
A capability: imports core, host, read, capture and write, and only the reading protocol's stores.

- :mod:`.edits`: ``edit`` events appended to a segment of each editing
  process (``<run>/edits/edits-*.jsonl``), applied by readers over the start event;
- :mod:`.trash`: ``rm`` and ``restore`` move run folders to and from
  ``<store>/trash/runs/`` with one rename each;
- :mod:`.space`: ``gc`` empties the trash and removes unreferenced blobs;
  ``du`` counts bytes per run and project.

The store's editing API (``Store.tag``, ``rename``, ``note``, ``remove``,
``restore``, ``gc``, ``du``...) calls these functions.
"""

from __future__ import annotations

from tracker.lifecycle.space import (
    BLOB_MIN_AGE,
    GcReport,
    blob_root,
    collect_garbage,
    default_references,
    disk_usage,
    iter_blobs,
)
from tracker.lifecycle.trash import (
    TRASH,
    RemovalPlan,
    folder_bytes,
    human_bytes,
    parse_age,
    plan_removal,
    remove_runs,
    restore_runs,
    trash_path,
    trash_store,
)
from tracker.write.edits import (
    EDIT,
    EDITS_FOLDER,
    EDITS_PREFIX,
    MAX_LABEL,
    Edited,
    EditWriter,
    apply_edits,
    check_label,
    check_values,
    edit_paths,
    edit_writer,
    note_run,
    read_edits,
    rename_run,
    tag_runs,
    update_config,
    update_summary,
    write_edit,
)

__all__ = [
    "BLOB_MIN_AGE", "EDIT", "EDITS_FOLDER", "EDITS_PREFIX", "MAX_LABEL", "TRASH", "EditWriter", "Edited",
    "GcReport", "RemovalPlan", "apply_edits", "blob_root", "check_label", "check_values", "collect_garbage",
    "default_references", "disk_usage", "edit_paths", "edit_writer", "folder_bytes", "human_bytes",
    "iter_blobs", "note_run", "parse_age", "plan_removal", "read_edits", "remove_runs", "rename_run",
    "restore_runs", "tag_runs", "trash_path", "trash_store", "update_config", "update_summary", "write_edit",
]
