"""Swing and flight phases from the contacts of the bundled walk and hop."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.balance import BalanceError
from core.balance.phases import clip_metres_per_unit, flight_phases, refuse_flight, swing_phases
from core.feet.contacts import Contacts, detect_contacts
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map

ROOT = Path(__file__).resolve().parents[2]


def _clip(clip: str):
    motion = load_bvh(ROOT / clip).to_source_motion()
    g1 = KinematicTree(parse_urdf(ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"))
    mapping = auto_map(motion, g1)
    return motion, mapping, detect_contacts(motion, mapping)


def test_synthetic_swings_and_flight():
    fps = 100.0
    left = np.ones(300, bool)
    right = np.ones(300, bool)
    left[100:160] = False  # a swing 1.00-1.60 s
    right[0:20] = False  # in the air at the start: no lift-off, no swing
    right[150:170] = False  # overlaps the left swing 1.50-1.60 s: a flight
    phases = swing_phases(Contacts({"left": left, "right": right}, fps))
    assert [(s.lift_off_s, s.touch_down_s) for s in phases["left"]] == [(1.0, 1.6)]
    assert [(s.lift_off_s, s.touch_down_s) for s in phases["right"]] == [(1.5, 1.7)]


def test_the_walk_has_swings_and_no_flight():
    motion, mapping, contacts = _clip("data/motion/cmu_131_01_walk_m.bvh")
    phases = swing_phases(contacts)
    assert len(phases["left"]) >= 3 and len(phases["right"]) >= 3
    assert all(0.05 < s.touch_down_s - s.lift_off_s < 3.0 for side in phases.values() for s in side)
    assert flight_phases(motion, mapping.source_root) == []
    refuse_flight(motion, mapping.source_root)  # does not raise


def test_the_hop_is_refused_with_its_flight_times():
    motion, mapping, _ = _clip("tests/data/motion/cmu_131_03_hop.bvh")
    flights = flight_phases(motion, mapping.source_root)
    assert len(flights) >= 10 and all(0.05 < b - a < 0.5 for a, b in flights)
    with pytest.raises(BalanceError, match=r"'cmu_131_03_hop' has \d+ flight phase\(s\).* s"):
        refuse_flight(motion, mapping.source_root)


@pytest.mark.parametrize("metres_per_unit", [1.0, 0.01, 0.001, 0.056444], ids=["m", "cm", "mm", "cmu-inches"])
def test_flights_are_found_in_metres_whatever_the_clips_units(metres_per_unit):
    """The same walk and hop written in centimetres, millimetres or CMU's original units: the
    walk has no flight, the hop the same flights (gravity is 9.81 m/s^2 in metres only)."""
    g1 = KinematicTree(parse_urdf(ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"))
    found = {}
    for clip, own in (("data/motion/cmu_131_01_walk_m.bvh", 1.0), ("tests/data/motion/cmu_131_03_hop.bvh", 0.056444)):
        motion = load_bvh(ROOT / clip).to_source_motion(scale=own / metres_per_unit)
        mapping = auto_map(motion, g1)
        scale = clip_metres_per_unit(motion, mapping)
        assert scale == pytest.approx(metres_per_unit, rel=0.1)
        found[clip] = flight_phases(motion, mapping.source_root, metres_per_unit=scale)
    assert found["data/motion/cmu_131_01_walk_m.bvh"] == []
    metres = load_bvh(ROOT / "tests/data/motion/cmu_131_03_hop.bvh").to_source_motion(scale=0.056444)
    reference = flight_phases(metres, auto_map(metres, g1).source_root)
    assert len(found["tests/data/motion/cmu_131_03_hop.bvh"]) == pytest.approx(len(reference), abs=1)
