"""The fenced examples of README.md and docs/: found, read with their markers, and run page by page.

A block is ```python, ```sh, ```bash or ```console (in a console block, the lines starting with ``$ `` are
the commands; the others are output). HTML comments on the lines just above a block mark it (docs/contributing.md,
"Examples"):

- ``<!-- example: skip REASON -->``: not run; the reason is required and listed by the tests.
- ``<!-- example: needs=NAME[,NAME] -->``: run only where NAME is there: ``postgresql`` (the suite's server; every
  ``postgresql://`` URL in the block becomes a fresh database of it), ``server`` (a ``tracker server`` of the suite
  on 127.0.0.1: ``TRACKER_URL`` and an admin ``TRACKER_API_KEY`` in the environment), or an importable module
  (``torch``, ``optuna``, ``lightning``...).
- ``<!-- example: continue -->``: the block continues the previous block of its language on the page (one
  script, one namespace and folder).

Each page gets one store (``TRACKER_STORE``) holding two finished runs of project ``cifar`` whose ids start with
``3f2a`` and ``81c0``, the ids the pages use; each block (or chain of continued blocks) runs in a fresh folder.
The page's blocks run in document order from one child process of the venv's interpreter: Python blocks each in
its own namespace, shell blocks with ``bash -euo pipefail``, the venv's ``tracker`` first on PATH.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LANGS = {"python": "python", "sh": "sh", "bash": "sh", "console": "console"}
_MARK = re.compile(r"^<!--\s*example:\s*(.*?)\s*-->\s*$")
_COMMENT = re.compile(r"^<!--.*-->\s*$")


class MarkerError(ValueError):
    """A marker that does not parse: names the page and line."""


@dataclass
class Block:
    """One fenced example: where it is, its language, its code and its markers."""

    page: str
    line: int
    lang: str
    code: str
    skip: str | None = None
    needs: list[str] = field(default_factory=list)
    continues: bool = False

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [REPO / "README.md"] + sorted((REPO / "docs").rglob("*.md"))


def _parse_marker(text: str, where: str, block: Block) -> None:
    if text.startswith("skip"):
        reason = text[4:].strip()
        if not reason:
            raise MarkerError(f"{where}: `<!-- example: skip -->` needs a reason, e.g. `skip serves until Ctrl-C`")
        block.skip = reason
        return
    for token in text.split():
        if token == "continue":
            block.continues = True
        elif token.startswith("needs="):
            block.needs += [n for n in token[6:].split(",") if n]
        else:
            raise MarkerError(f"{where}: unknown example marker {token!r} (expected skip REASON, needs=NAME, "
                              "continue; docs/contributing.md)")


def blocks_of(path: Path) -> list[Block]:
    """The runnable-language fenced blocks of one page, with their markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = path.relative_to(REPO).as_posix()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(`{3,})(\w*)", lines[i])
        if not fence:
            i += 1
            continue
        indent, ticks, lang = fence.groups()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(ticks):
            j += 1
        if lang in LANGS:
            code = textwrap.dedent("\n".join(x[len(indent):] if x.startswith(indent) else x
                                             for x in lines[i + 1:j]))
            block = Block(page, i + 1, LANGS[lang], code)
            k = i - 1
            while k >= 0 and _COMMENT.match(lines[k].strip()):
                mark = _MARK.match(lines[k].strip())
                if mark:
                    _parse_marker(mark.group(1), f"{page}:{k + 1}", block)
                k -= 1
            found.append(block)
        i = j + 1
    return found


def console_commands(code: str) -> str:
    """The commands of a console block: its ``$ `` lines (a trailing backslash continues one)."""
    out: list[str] = []
    more = False
    for line in code.splitlines():
        if line.startswith("$ ") or more:
            out.append(line[2:] if line.startswith("$ ") else line)
            more = line.rstrip().endswith("\\")
    return "\n".join(out)


# The child that runs a page's Python blocks: seeds the page's store, then execs each script in its own folder.
_RUNNER = r'''
import json, os, subprocess, sys, traceback
scripts = json.load(open(sys.argv[1]))
results = {}
import tracker
for i, (run_id, loss) in enumerate((("3f2a9c1e0b7d", 0.4), ("81c0d4e2a6f3", 0.6))):
    with tracker.start_run(project="cifar", run_id=run_id, name=f"seed {i}", group="baseline",
                           config={"lr": 3e-4 * (i + 1), "seed": i}, tags=["draft"], console="wrap",
                           environment=False) as run:
        for step in range(20):
            run.log({"loss": loss / (step + 1), "acc": 0.5 + step / 50}, step=step)
        print(f"epoch 1  loss {loss}")
for script in scripts:
    os.makedirs(script["cwd"], exist_ok=True)
    os.chdir(script["cwd"])
    if script["shell"]:
        sh = subprocess.run(["bash", "-euo", "pipefail", "-c", script["code"]], capture_output=True, text=True,
                            timeout=script["timeout"], stdin=subprocess.DEVNULL)
        results[script["id"]] = None if sh.returncode == 0 else (
            f"exit {sh.returncode}\n--- stdout ---\n{sh.stdout[-3000:]}\n--- stderr ---\n{sh.stderr[-3000:]}")
        continue
    try:
        code = compile(script["code"], script["id"], "exec")
        exec(code, {"__name__": "__main__"})
        results[script["id"]] = None
    except BaseException:
        results[script["id"]] = traceback.format_exc(limit=-6)
    finally:
        while tracker.current_run() is not None:
            tracker.current_run().finish()
json.dump(results, open(sys.argv[2], "w"))
'''


@dataclass
class Script:
    """Blocks joined by ``continue`` markers: what runs as one unit."""

    blocks: list[Block]

    @property
    def id(self) -> str:
        return self.blocks[0].id

    @property
    def code(self) -> str:
        if self.blocks[0].lang == "console":
            return "\n".join(console_commands(b.code) for b in self.blocks)
        return "\n".join(b.code for b in self.blocks)


def scripts_of(blocks: list[Block]) -> list[Script]:
    """The page's blocks to run, continued blocks joined to the one before them of the same language."""
    out: list[Script] = []
    last: dict[str, Script] = {}
    for block in blocks:
        kind = "python" if block.lang == "python" else "shell"
        if block.continues:
            if kind not in last:
                raise MarkerError(f"{block.id}: `continue` but no {kind} block before it on the page")
            last[kind].blocks.append(block)
            continue
        if block.skip is not None:
            continue
        if re.search(r"\bpip install\b|-m venv\b", block.code):
            raise MarkerError(f"{block.id}: installs packages; mark it `<!-- example: skip REASON -->` (examples never "
                              "install into the environment running them)")
        script = Script([block])
        out.append(script)
        last[kind] = script
    return out


def child_env(store: Path) -> dict[str, str]:
    """The environment of the examples: the suite's, the page's store, this checkout first on the paths."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env.update(TRACKER_STORE=str(store), TRACKER_CONSOLE="off", TRACKER_ENVIRONMENT="off",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
               NO_COLOR="1", COLUMNS="120")
    env.pop("TRACKER_CONFIG", None)
    return env


def run_page(scripts: list[Script], work: Path, replace: dict[str, str] | None = None,
             timeout: float = 180, extra_env: dict[str, str] | None = None) -> dict[str, str | None]:
    """Run one page's scripts; map each script's id to None (it ran) or what went wrong."""
    store = work / "store"
    env = {**child_env(store), **(extra_env or {})}

    def code_of(script: Script) -> str:
        code = script.code
        for old, new in (replace or {}).items():
            code = code.replace(old, new)
        return code

    todo = [{"id": s.id, "cwd": str(work / f"block-{n}"), "code": code_of(s), "shell": s.blocks[0].lang != "python",
             "timeout": timeout} for n, s in enumerate(scripts)]
    (work / "scripts.json").write_text(json.dumps(todo), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(work / "scripts.json"), str(work / "results.json")],
                          cwd=work, env=env, capture_output=True, text=True, timeout=timeout * 2)
    if proc.returncode != 0 or not (work / "results.json").exists():
        failure = f"the page's process failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return {s["id"]: failure for s in todo} or {"seed": failure}
    results: dict[str, str | None] = {}
    for key, err in json.loads((work / "results.json").read_text(encoding="utf-8")).items():
        results[key] = None if err is None else f"{err}\n--- output ---\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    return results
