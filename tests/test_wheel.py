"""`pip install` of the wheel, outside the checkout: one `fuselens` package that runs on its own.

The wheel is built from a copy of the checkout (no build/ left behind) without build isolation
(the venv's setuptools, so no download), installed into a fresh venv whose only other path is the
shared venv's site-packages (the third-party packages, not re-installed; its .pth files, such as
an editable install's finder, are not run), and run from a folder that is not the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from fuselens.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
SOURCE_FOLDERS = ("core", "passes", "session", "cli", "gui", "resources")
NOT_SOURCE = (".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache", "out")

pytestmark = pytest.mark.slow


def run(argv: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run(argv, cwd=cwd, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"}, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{argv}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


def third_party_dirs() -> list[str]:
    """The site-packages folders this interpreter imports its third-party packages from (a venv's own,
    and any a .pth file of it adds, as a throwaway venv over the shared one does)."""
    return [p for p in sys.path if Path(p).name == "site-packages" and Path(p).is_dir()]


def untimed(report: Any) -> Any:
    """A fuse report without its "seconds" (wall time of each pass and of the whole)."""
    if isinstance(report, dict):
        return {k: untimed(v) for k, v in report.items() if k != "seconds"}
    return [untimed(v) for v in report] if isinstance(report, list) else report


def source_files() -> set[str]:
    """What the wheel must hold: every file of the source folders (not bytecode), under fuselens/."""
    found = {"fuselens/__init__.py", "fuselens/__main__.py", "fuselens/main.py"}
    for top in SOURCE_FOLDERS:
        found |= {"fuselens/" + p.relative_to(ROOT).as_posix() for p in (ROOT / top).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts}
    return found


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A venv with the wheel installed: its bin/ folder."""
    tmp = tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT, tmp / "src", symlinks=True, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    run([sys.executable, "-m", "pip", "wheel", str(tmp / "src"), "--no-deps", "--no-build-isolation", "--no-index",
         "-q", "-w", str(tmp / "dist")], cwd=tmp)
    [wheel] = (tmp / "dist").glob("fuselens-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = {n for n in zf.namelist() if ".dist-info/" not in n}
        top_level = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/top_level.txt"))).decode()
    assert top_level.split() == ["fuselens"]
    assert source_files() - names == set(), "missing from the wheel: declare them in pyproject's package-data"
    assert names - source_files() == set()
    run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], cwd=tmp)
    venv_python = tmp / "venv" / "bin" / "python"
    site = run([str(venv_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp)
    (Path(site.stdout.strip()) / "shared_third_party.pth").write_text("".join(f"{d}\n" for d in third_party_dirs()))
    run([sys.executable, "-m", "pip", "--python", str(venv_python), "install", "--no-deps", "--no-index", "-q",
         str(wheel)], cwd=tmp)
    (tmp / "elsewhere").mkdir()
    return tmp / "venv" / "bin"


def test_the_installed_package_comes_from_the_wheel_alone(installed):
    probe = ("import json, sys, importlib.util, fuselens.core.formats.samples as s, fuselens.cli, fuselens.session; "
             "print(json.dumps({'path': sys.path, 'files': [m.__file__ for n, m in sys.modules.items() "
             "if n.startswith('fuselens') and getattr(m, '__file__', None)], 'demo': str(s.sample_path('demo')), "
             "'bare': [n for n in ('core', 'gui', 'passes', 'session', 'cli', 'main') "
             "if importlib.util.find_spec(n)]}))")
    seen = json.loads(run([str(installed / "python"), "-c", probe], cwd=installed.parent.parent / "elsewhere").stdout)
    site = str(installed.parent / "lib")
    assert seen["files"] and all(f.startswith(site) for f in seen["files"])
    assert seen["demo"].startswith(site) and seen["bare"] == []
    shared = third_party_dirs()
    assert [p for p in seen["path"] if p not in shared and (p == str(ROOT) or p.startswith(str(ROOT) + os.sep))] == []


def test_fuselens_samples_and_fuse_demo_run_from_the_wheel(installed, tmp_path):
    elsewhere = installed.parent.parent / "elsewhere"
    listed = run([str(installed / "fuselens"), "samples"], cwd=elsewhere).stdout
    assert "demo" in listed and "abs_relu_exp" in listed
    run([str(installed / "fuselens"), "fuse", "demo", "-o", "out.pb", "--report", "report.json"], cwd=elsewhere)
    assert cli_main(["fuse", "demo", "-o", str(tmp_path / "out.pb"), "--report", str(tmp_path / "report.json")]) == 0
    assert (elsewhere / "out.pb").read_bytes() == (tmp_path / "out.pb").read_bytes()
    assert untimed(json.loads((elsewhere / "report.json").read_text())) == \
        untimed(json.loads((tmp_path / "report.json").read_text()))
    assert "demo" in run([str(installed / "python"), "-m", "fuselens", "samples"], cwd=elsewhere).stdout
