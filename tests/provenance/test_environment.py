"""The environment of a run: git with an uncommitted change and a remote holding a token, packages, secrets, code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tracker
from tracker.capture.environment import clean_remote, code_files, collect, installed_packages
from tracker.read.environment import run_environment

from .conftest import child_env, only_run, run_py, script, texts

TOKEN = "ghp_S3cretT0kenNeverStored42"
SECRET = "env-secret-value-never-stored-7"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text("import tracker\nlr = 0.1\n")
    (repo / "configs").mkdir()
    (repo / "configs" / "base.yaml").write_text("lr: 0.1\n")
    (repo / "notes.txt").write_text("not code\n")
    (repo / "data.bin").write_bytes(bytes(range(256)))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    git(repo, "remote", "add", "origin", f"https://lab-bot:{TOKEN}@github.com/lab/model.git")
    return repo


TRAIN = """
import sys, tracker
with tracker.start_run(project="p", config={"lr": float(sys.argv[1])}) as run:
    run.log({"loss": 0.5})
"""


@needs_git
def test_git_commit_branch_remote_without_token_and_the_uncommitted_diff(repo: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    (repo / "train.py").write_text("import tracker\nlr = 0.01  # tried today\n")
    (repo / "data.bin").write_bytes(bytes(range(255, -1, -1)))
    path = script(repo, TRAIN, "run_me.py")  # untracked: not in the diff of tracked files
    env = child_env(store, SECRET_VALUE=SECRET, WANDB_API_KEY=SECRET)
    proc = run_py(path, store, "0.01", cwd=repo, env=env)
    assert proc.returncode == 0, proc.stderr
    view = only_run(store)
    env_rec = run_environment(view, tracker.Store(store).blobs)
    assert env_rec is not None
    assert env_rec["git_commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert env_rec["git_branch"] == "main" and env_rec["git_dirty"] is True
    assert env_rec["git_remote"] == "https://github.com/lab/model.git"
    assert env_rec["git_files_changed"] == 2
    assert "+lr = 0.01  # tried today" in env_rec["diff"]
    assert "Binary files a/data.bin and b/data.bin differ" in env_rec["diff"]
    assert env_rec["command"][1:] == [str(path), "0.01"] and env_rec["cwd"] == str(repo)
    assert env_rec["python"] == ".".join(map(str, sys.version_info[:3])) and env_rec["packages_count"] > 10
    assert {"name": "tracker-core", "version": tracker.__version__} in env_rec["package_list"]
    assert env_rec["warnings"] == []
    # Neither the token nor an environment variable's value is in any byte of the store.
    for p in store.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            assert TOKEN.encode() not in data, p
            assert SECRET.encode() not in data, p


def test_the_package_list_is_stored_once_for_two_runs(tmp_path: Path) -> None:
    store = tmp_path / "store"
    path = script(tmp_path, TRAIN)
    for lr in ("0.1", "0.2"):
        assert run_py(path, store, lr).returncode == 0
    runs = tracker.Store(store).runs()
    shas = {tracker.Store(store).run(r.id).table("environment")["packages"][0] for r in runs}
    assert len(runs) == 2 and len(shas) == 1
    blobs = [p for p in (store / "blobs").rglob("*") if p.is_file() and "tmp" not in p.relative_to(store).parts]
    assert len(blobs) == 1  # no git here: the package list is the only blob, once


OFF = """
import tracker
with tracker.start_run(project="p", environment=False) as run:
    run.log({"loss": 0.5})
"""


@needs_git
def test_environment_false_records_nothing_and_code_stores_the_matching_files(repo: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert run_py(script(repo, OFF, "off.py"), store, cwd=repo).returncode == 0
    view = only_run(store)
    assert "environment" not in view.schemas() and not (store / "blobs").exists()
    (repo / "tracker.toml").write_text('[run]\ncode = ["*.py", "configs/**"]\n')
    (repo / "sub").mkdir()
    (repo / "sub" / "model.py").write_text("class Model: pass\n")
    store2 = tmp_path / "store2"
    assert run_py(script(repo, TRAIN, "run_me.py"), store2, "0.1", cwd=repo).returncode == 0
    view = only_run(store2)
    arts = [a for a in view.artifacts() if a.name == "code"]
    assert len(arts) == 1
    out = tmp_path / "code"
    view.copy_artifact("code", out)
    got = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert got == ["configs/base.yaml", "off.py", "run_me.py", "sub/model.py", "train.py"]


SLOW_GIT = f"""#!/bin/sh
exec {shutil.which("sleep") or "/bin/sleep"} 5
"""
BROKEN_GIT = """#!/bin/sh
echo "fatal: not a git repository (or any parent up to mount point /)" >&2
exit 128
"""


@needs_git
@pytest.mark.parametrize("kind", ["missing", "slow", "broken"])
def test_a_missing_broken_or_slow_git_is_one_warning_line_and_the_run_goes_on(repo: Path, tmp_path: Path,
                                                                               kind: str) -> None:
    store = tmp_path / "store"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if kind != "missing":
        fake = bin_dir / "git"
        fake.write_text(SLOW_GIT if kind == "slow" else BROKEN_GIT)
        fake.chmod(0o755)
    # the interpreter stays reachable; git is either the fake one or nowhere on PATH
    env = child_env(store, PATH=f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}")
    proc = run_py(script(repo, TRAIN, "run_me.py"), store, "0.1", cwd=repo, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("tracker:")]
    assert len(lines) == 1, proc.stderr
    expected = {"missing": "git is not installed", "slow": "git is slow", "broken": "git failed"}[kind]
    assert expected in lines[0]
    view = only_run(store)
    assert view.info.status == "finished"
    rec = next(iter(view.table("environment").rows()))
    assert len(rec.warnings) == 1 and expected in rec.warnings[0] and rec.git_commit is None
    assert rec.packages_count > 0
    console = texts(view)
    assert lines[0] in console  # the warning line is in the run too


@needs_git
def test_a_large_diff_is_cut_with_a_note(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "train.py").write_text("".join(f"line {i}\n" for i in range(20000)))
    monkeypatch.chdir(repo)
    stored: list[bytes] = []

    def put(data: bytes) -> str:
        stored.append(data)
        return "0" * 64

    facts = collect(max_diff_bytes=10_000, put_blob=put)
    assert facts["git_diff_truncated"] is True and facts["git_diff_bytes"] > 100_000
    assert len(stored[-1]) < 10_200 and stored[-1].endswith(b"([run] max_diff_bytes)\n")


def test_remote_urls_lose_their_credentials() -> None:
    assert clean_remote(f"https://user:{TOKEN}@github.com/x.git") == "https://github.com/x.git"
    assert clean_remote(f"https://{TOKEN}@github.com/x") == "https://github.com/x"
    assert clean_remote("git@github.com:org/x.git") == "git@github.com:org/x.git"
    assert clean_remote(f"ssh://git:{TOKEN}@host/x") == "ssh://git@host/x"
    assert clean_remote(f"https://host/x?token={TOKEN}") == "https://host/x?token=***"


def test_code_patterns_match_names_anywhere_or_paths_from_the_root(tmp_path: Path) -> None:
    for rel in ("a.py", "pkg/b.py", "pkg/c.txt", "configs/x.yaml", "configs/deep/y.yaml", ".venv/lib/z.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert code_files(tmp_path, ("*.py",)) == ["a.py", "pkg/b.py"]
    assert code_files(tmp_path, ("configs/**",)) == ["configs/deep/y.yaml", "configs/x.yaml"]
    assert code_files(tmp_path, ("pkg/*.txt", "**/y.yaml")) == ["configs/deep/y.yaml", "pkg/c.txt"]


def test_installed_packages_from_500_distributions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    for i in range(500):
        (site / f"pkg_{i:03d}-1.{i}.0.dist-info").mkdir(parents=True)
    (site / "Old_Style.egg-info").mkdir()
    (site / "Old_Style.egg-info" / "PKG-INFO").write_text("Name: Old-Style\nVersion: 0.9\n\nbody\n")
    monkeypatch.setattr(sys, "path", [str(site)])
    got = installed_packages()
    assert len(got) == 501
    assert got[0] == "old-style==0.9" and "pkg-042==1.42.0" in got


@needs_git
def test_the_commit_at_the_start_is_read_from_the_repository_files_without_git(repo: Path) -> None:
    from tracker.write.origin import _git_commit

    head = git(repo, "rev-parse", "HEAD").strip()
    assert _git_commit(repo / "configs") == head
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert _git_commit(repo) == head
    git(repo, "checkout", "-q", "--detach")
    assert _git_commit(repo) == head
    worktree = repo.parent / "wt"
    git(repo, "worktree", "add", "-q", str(worktree), "-b", "other")
    assert _git_commit(worktree) == head


class FakeNvml:
    """Just what gpu_facts reads of pynvml: two A100s, a driver and the CUDA version it supports."""

    class Memory:
        total = 80 * 2**30

    def nvmlSystemGetDriverVersion(self) -> bytes:  # noqa: N802 - NVML's names
        return b"550.54.15"

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:  # noqa: N802
        return 12040

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:  # noqa: N802
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:  # noqa: N802
        return b"NVIDIA A100-SXM4-80GB"

    def nvmlDeviceGetMemoryInfo(self, h: int) -> FakeNvml.Memory:  # noqa: N802
        return FakeNvml.Memory()


def test_gpus_driver_and_cuda_from_nvml_and_torch_only_when_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracker.capture.environment import gpu_facts

    facts = gpu_facts(FakeNvml())
    assert facts["gpu_driver"] == "550.54.15" and facts["cuda"] == "12.4"
    assert facts["gpus"] == [{"index": i, "name": "NVIDIA A100-SXM4-80GB", "memory_total_bytes": 80 * 2**30}
                             for i in range(2)]
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: nothing to ask
    assert gpu_facts() == {"gpus": [], "gpu_driver": None, "cuda": None}
    fake_torch = type(sys)("torch")
    fake_torch.version = type("V", (), {"cuda": "12.1"})()
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    assert gpu_facts()["cuda"] == "12.1"


def test_environment_off_stores_neither_command_line_nor_working_folder(tmp_path: Path) -> None:
    """``environment=False`` because the command holds a secret: no byte of the store holds it."""
    store = tmp_path / "store"
    marker = "cmdline-marker-9f3e1c"
    work = tmp_path / f"in-{marker}-folder"
    work.mkdir()
    path = script(work, """
        import sys, tracker
        with tracker.start_run(project="p", environment=False) as run:
            run.log({"loss": 0.5})
    """)
    proc = run_py(path, store, f"--token={marker}", cwd=work)
    assert proc.returncode == 0, proc.stderr
    view = only_run(store)
    assert view.info.status == "finished" and view.info.env.get("host")  # what crash detection needs stays
    files = [p for p in store.rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert marker.encode() not in p.read_bytes(), p
    assert set(view.info.env) <= {"host", "pid"}
