"""The collision model and pair matrix kept on disk: read back in a new tree without fitting,
fitted afresh when the robot's file changes, and skipped when the folder cannot be written."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from core.collision import collision_pairs, store
from core.collision import proxies
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf

ROOT = Path(__file__).resolve().parents[2]
H1 = ROOT / "tests/data/robots/unitree_h1_19dof.urdf"


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A private cache folder and empty process caches: every robot is read from disk or fitted."""
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(proxies, "_MODELS", {})
    from core.collision import pairs
    monkeypatch.setattr(pairs, "_PAIRS", {})
    return tmp_path / "cache"


def _forget(monkeypatch):
    monkeypatch.setattr(proxies, "_MODELS", {})
    from core.collision import pairs
    monkeypatch.setattr(pairs, "_PAIRS", {})


def test_a_second_process_reads_the_fit_instead_of_fitting(fresh, monkeypatch):
    first = collision_pairs(KinematicTree(parse_urdf(H1)))
    assert len(list(fresh.glob("*.npz"))) == 1
    _forget(monkeypatch)  # as a new process

    def no_fit(tree):
        raise AssertionError("fitted again")
    monkeypatch.setattr(proxies, "fit_model", no_fit)
    from core.collision import pairs
    monkeypatch.setattr(pairs, "default_pairs", no_fit)
    again = collision_pairs(KinematicTree(parse_urdf(H1)))
    np.testing.assert_array_equal(again.bodies, first.bodies)
    np.testing.assert_array_equal(again.capsules, first.capsules)
    np.testing.assert_array_equal(again.model.ends, first.model.ends)
    np.testing.assert_array_equal(again.model.radius, first.model.radius)
    assert again.model.body_names == first.model.body_names


def test_an_edited_robot_file_is_fitted_afresh(fresh, monkeypatch, tmp_path):
    copy = tmp_path / "h1.urdf"
    shutil.copy(H1, copy)
    collision_pairs(KinematicTree(parse_urdf(copy)))
    _forget(monkeypatch)
    text = copy.read_text().replace('upper="0.43"', 'upper="0.5"', 1)
    assert text != copy.read_text()
    copy.write_text(text)
    collision_pairs(KinematicTree(parse_urdf(copy)))
    assert len(list(fresh.glob("*.npz"))) == 2  # another digest, another entry


def test_an_unwritable_cache_folder_only_costs_the_fit(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(store.CACHE_ENV, str(blocker / "cache"))
    _forget(monkeypatch)
    pairs = collision_pairs(KinematicTree(parse_urdf(H1)))
    assert len(pairs.bodies) > 0 and blocker.read_text() == "not a folder"
    monkeypatch.setenv(store.CACHE_ENV, "")  # turned off
    _forget(monkeypatch)
    assert len(collision_pairs(KinematicTree(parse_urdf(H1))).bodies) == len(pairs.bodies)
