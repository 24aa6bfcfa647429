"""Where the avoiding bake of the G1 with its arms zeroed sideways (tests/core/test_invariance.py SIDEWAYS: shoulder roll
origins turned 90 deg, limits shifted) parts from the G1's: each stage's joints (plus the zero shift) against the G1's,
max and RMS (rad), the G1 walk's first 240 frames as the test bakes them.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s32_invar/zero_stages.py [module.NAME=value ...]
"""
from pathlib import Path
import sys, dataclasses, importlib
sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parents[1] / "s31_mirror")]
import numpy as np
import stage_hooks as H  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget.automap import auto_map  # noqa: E402
from core.retarget.pipeline import retarget  # noqa: E402
from tests import robot_variants as RV  # noqa: E402
from tests.core.test_invariance import G1, SIDEWAYS, WALK, _short  # noqa: E402

for a in sys.argv[1:]:
    name, value = a.split("=")
    module, attr = name.rsplit(".", 1)
    setattr(importlib.import_module(module), attr, eval(value))
motion = _short(load_bvh(WALK)).to_source_motion()
g1 = KinematicTree(parse_urdf(G1))
side = KinematicTree(parse_urdf(RV.write_urdf(RV.zero_shifted(g1.robot, SIDEWAYS), Path("/tmp/s32i_sideways.urdf"))))
runs = []
for tree in (g1, side):
    H.stages.clear()
    mapping = auto_map(motion, tree)
    mapping.settings = dataclasses.replace(mapping.settings, avoid_self_collision=True)
    retarget(motion, tree, mapping)
    runs.append(list(H.stages))
shift = np.array([SIDEWAYS.get(n, 0.0) for n in side.joint_names])
for (name, a), (_, b) in zip(*runs):
    d = np.abs(b + shift - a)
    f, j = np.unravel_index(d.argmax(), d.shape)
    print(f"{name:22s} max {d.max():.2e} rad ({g1.joint_names[j]}, frame {f}), rms {np.sqrt((d ** 2).mean()):.2e}")
