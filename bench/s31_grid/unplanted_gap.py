"""How far a planted avoiding bake's RetargetResult.unplanted is from the unplanted avoiding bake (the G1 walk
of tests/core/test_foot_plant.py), per joint group: max rad over frames.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_grid/unplanted_gap.py
"""
from pathlib import Path
import sys, dataclasses
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from tests.core import test_foot_plant as F
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.retarget.automap import auto_map
from core.feet.contacts import detect_contacts
from core.retarget.pipeline import retarget

tree = KinematicTree(parse_urdf(F.G1))
motion = F._clip(F.WALK, F.FRAMES)
mapping = auto_map(motion, tree)
mapping = dataclasses.replace(mapping, settings=dataclasses.replace(mapping.settings, avoid_self_collision=True))
plain = retarget(motion, tree, mapping, contacts="off")
planted = retarget(motion, tree, mapping, contacts=detect_contacts(motion, mapping))
for name, a, b in [("unplanted - plain", planted.unplanted.q, plain.q), ("planted - plain", planted.q, plain.q),
                   ("unplanted - planted", planted.unplanted.q, planted.q)]:
    d = np.abs(a - b).max(axis=0)
    print(name, {tree.joint_names[k]: round(float(d[k]), 4) for k in np.argsort(-d)[:6]})
