"""tools/robot-retarget's rebuild check: the zip it runs holds this checkout's sources."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]


def _launcher():
    loader = importlib.machinery.SourceFileLoader("robot_retarget_launcher", str(ROOT / "tools" / "robot-retarget"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_a_source_saved_while_the_zip_builds_is_built_again(tmp_path, monkeypatch):
    launcher = _launcher()
    monkeypatch.setattr(launcher, "ROOT", tmp_path)
    source = tmp_path / "core" / "model.py"
    source.parent.mkdir()
    source.write_text("old = 1\n")
    builds = []

    def build(platforms, out_dir):
        builds.append(source.read_text())
        if len(builds) == 1:  # the user saves the file while the first build runs
            time.sleep(0.02)
            source.write_text("new = 2\n")
        out_dir.mkdir(exist_ok=True)
        zip_file = out_dir / "ext.zip"
        zip_file.write_text(builds[-1])
        return (zip_file,)

    tools = SimpleNamespace(current_platform=lambda: "linux-x64", zip_path=lambda platform, out: out / "ext.zip",
                            source_files=lambda root: ["core/model.py"], build=build)
    zip_file = launcher.ensure_zip(tools)
    assert zip_file.read_text() == "old = 1\n" and len(builds) == 1
    assert launcher.ensure_zip(tools).read_text() == "new = 2\n" and len(builds) == 2  # built again
    assert launcher.ensure_zip(tools).read_text() == "new = 2\n" and len(builds) == 2  # and then fresh
    os.utime(source, None)  # touched later: newer than the zip
    launcher.ensure_zip(tools)
    assert len(builds) == 3
