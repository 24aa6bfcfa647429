"""A clip whose ends are held (its first and last frames repeated, as bench/bench_gait.py's 10 s clip) plans
the same walk as the clip itself (issue 12): the H1's turn-bounded steps carried the held first stance's heading
to every later stance (0.08 rad), and the retarget's solves, carried from frame to frame, came out of the held
frames another walk."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import core.balance.gait as gait
from core.motion.source import held_frames
from core.feet.contacts import Contacts, detect_contacts
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
HOLD = 102  # frames each end is held (0.85 s at 120 fps: the 10 s clip's)


class _Planned(Exception):
    def __init__(self, plan):
        self.plan = plan


def _plan(monkeypatch, clip, tree, contacts):
    def stop(tree, plan, *rest):
        raise _Planned(plan)

    monkeypatch.setattr(gait, "_balance", stop)
    with pytest.raises(_Planned) as planned:
        gait.generate_gait(clip, tree, auto_map(clip, tree), contacts=contacts)
    return planned.value.plan


def _heading(rotations: np.ndarray) -> np.ndarray:
    return np.arctan2(rotations[:, 1, 0], rotations[:, 0, 0])


def test_held_frames_are_long_repeats_only():
    walk = load_bvh(WALK).to_source_motion()
    assert not held_frames(walk, 0.1).any()  # its last frame repeats once: not a hold
    index = np.r_[np.zeros(HOLD, int), np.arange(walk.frames), np.full(HOLD, walk.frames - 1)]
    held = held_frames(walk.at_frames(index), 0.1)
    assert held[1:HOLD + 1].all() and not held[0] and not held[HOLD + 1:HOLD + walk.frames - 2].any()
    assert held[-HOLD:].all()


def test_holding_a_clips_ends_does_not_change_its_plan(monkeypatch):
    tree = KinematicTree(parse_urdf(H1))
    walk = load_bvh(WALK).to_source_motion()
    flags = detect_contacts(walk, auto_map(walk, tree))
    index = np.r_[np.zeros(HOLD, int), np.arange(walk.frames), np.full(HOLD, walk.frames - 1)]
    held = walk.at_frames(index)
    held_flags = Contacts({side: down[index] for side, down in flags.feet.items()}, flags.fps)
    plan_walk = _plan(monkeypatch, walk, tree, flags)
    plan_held = _plan(monkeypatch, held, tree, held_flags)
    shift = int(round(HOLD / walk.fps / 0.005))  # the held clip's sample of the walk's
    for link, path in plan_walk.paths.items():
        other = plan_held.paths[link]
        i = np.arange(len(path.down) - 4)
        j = i + shift
        still = path.down[i] & path.down[i + 4] & other.down[j] & other.down[j + 4]  # within one stance in both
        k = i[still] + 2
        apart = np.abs(np.angle(np.exp(1j * (_heading(path.poses[k, :3, :3])
                                             - _heading(other.poses[k + shift, :3, :3])))))
        assert apart.max() < 2e-3, f"stance headings {apart.max():.4f} rad apart"  # 0.078 rad before
        assert np.abs(path.poses[k, :2, 3] - other.poses[k + shift, :2, 3]).max() < 2e-3
    walking = (plan_walk.times > 1.0) & (plan_walk.times < 5.0)  # away from the ends, where the holds are
    height = plan_held.height[np.flatnonzero(walking) + shift] - plan_walk.height[walking]
    assert np.abs(height).max() < 2e-3  # 14 mm before (the undipped waist's rule over the held frames)
    yaw = _heading(plan_held.root_rot[np.flatnonzero(walking) + shift]) - _heading(plan_walk.root_rot[walking])
    assert np.abs(np.angle(np.exp(1j * yaw))).max() < 5e-3
