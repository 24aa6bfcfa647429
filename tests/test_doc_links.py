"""Every relative link and image in README.md and docs/ resolves, heading anchors included.

The README points into docs/history and docs/design by anchors, which a reworded heading breaks
without a sound; tools/check_doc_links.py does the checking, this runs it with the suite.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _checker():
    spec = importlib.util.spec_from_file_location("check_doc_links", ROOT / "tools" / "check_doc_links.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_relative_link_in_the_docs_resolves():
    checker = _checker()
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert [line for page in pages for line in checker.broken(page)] == []


def test_a_reworded_heading_is_a_broken_link(tmp_path, monkeypatch):
    checker = _checker()
    monkeypatch.setattr(checker, "ROOT", tmp_path)
    (tmp_path / "README.md").write_text("# Credits\n", encoding="utf-8")
    page = tmp_path / "docs" / "history" / "topic.md"
    page.parent.mkdir(parents=True)
    page.write_text("# Kept\n\n[ok](#kept) [gone](#reworded) [file](../../README.md#credits) [no](nofile.md)\n"
                    "`[in code](nofile.md)`\n", encoding="utf-8")
    assert [p.split(": ")[1] for p in checker.broken(page)] == ["#reworded", "nofile.md"]
