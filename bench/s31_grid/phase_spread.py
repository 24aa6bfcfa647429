"""The spread of the avoiding bake's figures over the sampled grid's phase alone: main's grid (every 4th frame from
frame 0) shifted to start at frame 1, 2 or 3, G1 walk and hop planted, limbs and jerk as bench/clear_targets_stages.py
reports them. Run in a tree of main (this branch's grid has no phase to shift).

    cd MAIN_TREE && OMP_NUM_THREADS=1 .venv/bin/python /work/wt4/bench/s31_grid/phase_spread.py
"""
import sys, os
from dataclasses import replace
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "bench")]
import numpy as np
from core.chains import separation as S
import clips
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.retarget import auto_map, retarget

tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
for name, path in (("walk", clips.WALK), ("hop", clips.HOP)):
    motion = clips.load(path)
    mapping = auto_map(motion, tree)
    mapping.settings = replace(mapping.settings, avoid_self_collision=True)
    row = {}
    for phase in range(4):
        S._samples = lambda count, every, p=phase: np.union1d(np.arange(count)[min(p, count - 1)::every], [0, count - 1])
        report = retarget(motion, tree, mapping, contacts="auto").report
        row[phase] = (round(report["limb_direction_error_deg"], 3), round(report["jerk_after"]), report["self_collision_pct"])
    print(name, row, flush=True)
