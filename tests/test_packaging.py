"""One import package: every module is `fuselens.<folder>.<module>`, every code folder is packaged,
and data files are package data (core/package_data.py), never found through `__file__`."""

from __future__ import annotations

import ast
import configparser
import os
import re
from pathlib import Path
from xml.etree import ElementTree

import tomllib
from setuptools import find_packages

import fuselens.core
import fuselens.main
from fuselens.core.package_data import import_root, package_file, resource

ROOT = Path(__file__).resolve().parents[1]
TOP = ("core", "gui", "passes", "session", "cli", "main")
DOTTED = re.compile(r"(?:" + "|".join(TOP) + r")(?:\.\w+)+")  # "core.runtime.child", "passes.json"
CODE_FOLDERS = ("core", "passes", "session", "cli", "gui")
SKIP = {".venv", ".git", "build", "dist", "__pycache__", "fuselens"}
# Scripts FuseLens copies to an Ascend host and runs there, outside any install: their own folder is theirs.
HOST_SCRIPTS = {"npu_driver.py"}


def project_files() -> list[Path]:
    """Every .py file of the checkout (not through fuselens/'s links, not the venv or build output)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in SKIP and not d.endswith(".egg-info")]
        found += [Path(dirpath) / f for f in filenames if f.endswith(".py")]
    return found


def is_tree_module(dotted: str) -> bool:
    parts = dotted.split(".")
    return any(ROOT.joinpath(*parts[:n]).with_suffix(".py").is_file()
               or ROOT.joinpath(*parts[:n], "__init__.py").is_file() for n in range(2, len(parts) + 1))


def bare_imports(path: Path) -> list[str]:
    """`import core.x`, `from gui import y`, "session.tensorflow_helper" as a string: names outside fuselens."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in TOP]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in TOP:
            found.append(f"{node.lineno}: from {node.module}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and DOTTED.fullmatch(node.value) and is_tree_module(node.value):
            found.append(f"{node.lineno}: {node.value!r}")
    return found


def test_no_project_file_imports_a_module_by_its_bare_folder_name():
    found = {str(p.relative_to(ROOT)): bad for p in project_files() if (bad := bare_imports(p))}
    assert found == {}, "import these as fuselens.<folder>... (/work/helpers/to_fuselens_package.py rewrites them)"


def test_the_check_finds_a_bare_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('import gui.pane\nfrom core.graph import Graph\nCHILD = "core.runtime.child"\n'
                      'from fuselens.core import proto\nNAME = "passes.json"\n')
    assert bare_imports(sample) == ["1: import gui.pane", "2: from core.graph", "3: 'core.runtime.child'"]


def test_every_code_folder_is_a_package_of_the_wheel():
    """A folder of modules without __init__.py is not in the wheel (setuptools finds packages, not folders)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packaged = set(find_packages(str(ROOT), include=config["include"]))
    folders = {"fuselens." + ".".join(Path(dirpath).relative_to(ROOT).parts)
               for top in CODE_FOLDERS for dirpath, dirnames, filenames in os.walk(ROOT / top)
               if "__pycache__" not in dirpath and any(f.endswith(".py") and f not in HOST_SCRIPTS for f in filenames)}
    assert folders - packaged == set(), "add an __init__.py (or declare the folder as package data)"
    assert {"fuselens", "fuselens.core", "fuselens.gui"} <= packaged


def test_the_package_takes_its_folders_from_beside_it():
    assert Path(fuselens.core.__file__).resolve() == ROOT / "core" / "__init__.py"
    assert import_root() == ROOT
    assert resource("samples", "demo.pb").is_file() and resource("keras3_layer_norm.yaml").is_file()
    assert package_file("fuselens.core", "errors.py") == ROOT / "core" / "errors.py"


def test_data_files_are_not_found_through_file():
    """`Path(__file__).parent...` finds a data file only in a checkout; core/package_data.py finds it installed too."""
    users = sorted(str(p.relative_to(ROOT)) for top in CODE_FOLDERS for p in (ROOT / top).rglob("*.py")
                   if p.name not in HOST_SCRIPTS and "__file__" in p.read_text(encoding="utf-8"))
    assert users == []


def test_the_console_script_is_the_package_entry():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"fuselens": "fuselens.main:main"}
    assert Path(fuselens.main.__file__).resolve() == ROOT / "main.py"


def test_the_desktop_entry_starts_the_window_with_the_shipped_icon():
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # keys are case-sensitive
    entry.read(resource("desktop", "fuselens.desktop"))
    desktop = entry["Desktop Entry"]
    assert desktop["Type"] == "Application" and desktop["Exec"] == "fuselens gui %f"
    assert desktop["Icon"] == "fuselens" and desktop["Terminal"] == "false"
    icon = ElementTree.parse(resource("desktop", f"{desktop['Icon']}.svg")).getroot()
    assert icon.tag == "{http://www.w3.org/2000/svg}svg" and icon.get("viewBox") == "0 0 64 64"
    makefile = (ROOT / "Makefile").read_text()
    assert "resources/desktop/fuselens.desktop" in makefile and "icons/hicolor/scalable/apps" in makefile
