"""What ``start_run`` checks and starts beside the run's segment: its free-text fields, the system sampler,
the console and environment recorders.

The fields are checked before anything is created, so a bad one is refused
with a message naming it and nothing is written. The sampler and the
recorders (:mod:`tracker.capture`) never make a run fail: one that cannot
start is left out, and what the recorders cannot write at the finish never
stops it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracker.core.rules import check_keys, check_label
from tracker.core.urls import redact_urls
from tracker.core.values import given, plain_config

if TYPE_CHECKING:
    from tracker.host.host import Host


def _plain(value: Any, what: str) -> Any:
    return plain_config({what: value}, what)[what]


def run_fields(project: Any, name: Any, notes: Any, tags: Any, config: Any, group: Any,
               job_type: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The run's fields checked: ``{"name", "project", "config", "tags"}`` (in the order of the run's
    first line; the config plain and its URLs' passwords masked), and its labels (``group``,
    ``job_type``, those given).

    :raises TypeError: a field of the wrong type, named.
    :raises SchemaError: a value the store cannot hold (a lone surrogate, a bad key, tag or label).
    """
    for what, value in (("project", project), ("name", name), ("notes", notes)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{what}: expected a str, given {given(value)}")
        if value is not None:
            _plain(str.__str__(value), what)  # e.g. a lone surrogate: refused before anything is created
    if tags is not None and (isinstance(tags, str) or not all(isinstance(t, str) for t in tags)):
        raise TypeError(f"tags: expected a list of str, given {given(tags)}")
    labels = {}
    for what, value in (("group", group), ("job_type", job_type)):
        if value is not None:
            if not isinstance(value, str):
                raise TypeError(f"{what}: expected a str, given {given(value)}")
            labels[what] = check_label(_plain(str.__str__(value), what), what)
    config_data = plain_config(config if config is not None else {})
    check_keys(config_data, "config")
    # A URL's password in the config is masked before it is written (run.config reads what was stored).
    config_data = redact_urls(config_data)
    tag_list = [check_label(t, "tag") for t in _plain(list(tags or []), "tags")]
    return {"name": name, "project": project, "config": config_data, "tags": tag_list}, labels


def recorders_for(run: Any, console: str | None, environment: bool) -> Any:
    """The run's console and environment recorders (tracker.capture), or ``None``: off, or they cannot start."""
    try:
        from tracker.capture import start_recorders

        return start_recorders(run, console, environment)
    except Exception:  # noqa: BLE001 - recorders never make a run fail (e.g. a module that cannot load)
        return None


def stop_recorders(att: Any) -> None:
    """Stop the recorders of the run attached as ``att`` (its last console lines, its environment record)."""
    recorders, att.recorders = att.recorders, None
    try:
        recorders.stop()
    except Exception:  # noqa: BLE001, S110 - what could not be written never stops the finish
        pass


def sampler_for(run: Any, system_metrics: bool | float | None, host: Host) -> Any:
    """The run's system sampler, or ``None``: off, nothing to sample, or it cannot start."""
    if system_metrics is False or (system_metrics is None and not host.config.system_enabled):
        return None
    try:
        from tracker.capture import start_sampler

        return start_sampler(run, system_metrics)
    except Exception:  # noqa: BLE001 - the sampler never makes a run fail (e.g. a module that cannot load)
        return None
