#!/usr/bin/env python3
"""Where two gaits part, stage by stage: this tree's core against another copy, or one start against another.

    .venv/bin/python bench/gait_stages_ab.py [--against /tmp/old_tree] [--robot g1|h1] [--frames START:END]
        [--period S] [--start read|float32] [--other-start read|float32]

Each side runs in its own process (its own core: a whole tree,
`mkdir /tmp/old_tree && git archive main | tar -x -C /tmp/old_tree`) and records the gait's stages: the bake (planted, unplanted), the step shares check_steps gives each step,
the plan (target ZMP, waist height, each foot's path and down flags), every height fit (the height change
each sample needs), every lift-off or touch-down the let-go moves, the feet standing after each solve,
each round of passes and the result. The first stage whose difference grows far past the input's is where
the gait amplifies it (a rung of a ladder of trials, a cycle's down flag, a leg near straight). Session 16:
the walk cut at 200:500 onto the G1 at 3 ms parts at the step shares (a 45-degree turning step 0.7 / 0.55 of
its length); the H1 walk as read / rounded to float32 at the first height fit after the lateral programme
(0.07 / 0.10 m), then at the let-go's lift-offs (a cycle or four).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
ONE_SIDE = r"""
import os, sys, json, dataclasses
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
tree_root, robot, frames, period, start, out = sys.argv[1:7]
sys.path.insert(0, tree_root)
import numpy as np
from pathlib import Path
import core.balance.gait as gait
import core.balance.plan as plan_module
from core.balance import correction
from core.balance.gait import GaitSettings, generate_gait
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map

ROOT = Path(tree_root)
ROBOTS = {"g1": ROOT / "data/robots/g1/unitree_g1_29dof.urdf", "h1": ROOT / "tests/data/robots/unitree_h1_19dof.urdf"}
walk = load_bvh(ROOT / "data/motion/cmu_131_01_walk_m.bvh").to_source_motion()
if start == "float32":
    walk = dataclasses.replace(walk, **{k: getattr(walk, k).astype(np.float32).astype(float)
                                        for k in ("heads", "tails", "root_rotation")})
if frames:
    a, b = map(int, frames.split(":"))
    walk = walk.at_frames(np.arange(a, b), f"walk_{a}_{b}")
stages, events, plan = [], [], {}

def put(name, **arrays):
    stages.append((name, {k: np.asarray(v, dtype=float) for k, v in arrays.items()}))

def wrap(module, name, after):
    inner = getattr(module, name)
    def wrapped(*args, **kwargs):
        result = inner(*args, **kwargs)
        after(args, result)
        return result
    setattr(module, name, wrapped)

def feet():
    paths = plan["plan"].paths.values()
    return {**{f"foot{i}": p.poses[:, :3, 3] for i, p in enumerate(paths)},
            **{f"down{i}": p.down for i, p in enumerate(paths)}}

wrap(gait, "retarget", lambda a, r: put("bake", planted=r.q, unplanted=r.unplanted.q if r.unplanted is not None else [0]))
wrap(plan_module, "check_steps", lambda a, r: events.append(f"step shares {np.round(r, 3).tolist()}"))
def planned(a, r):
    plan["plan"] = r
    put("plan", target=r.target, height=r.height, **feet())
wrap(gait, "make_plan", planned)
wrap(correction, "fit_waist", lambda a, r: put("height fit", need=r))
def let_go(a, moved):
    events.append("let-go: " + json.dumps({side: [(round(s.lift_off_s, 4), round(s.touch_down_s, 4)) for s in items]
                                          for side, items in a[4].items()}))
wrap(gait, "swing_where_feet_let_go", let_go)
wrap(correction.Corrector, "solve_standing", lambda a, r: put("standing", q=r[0], root=r[1], **feet()))
wrap(gait, "refine", lambda a, r: put("passes", q=r[0], root=r[1], zmp=r[3]))
tree = KinematicTree(parse_urdf(ROBOTS[robot]))
result = generate_gait(walk, tree, auto_map(walk, tree), settings=GaitSettings(period_s=float(period)))
put("result", q=result.q, root=result.root_position, zmp=result.zmp)
keys = ("min_support_margin_m", "multibody_zmp_rms_error_m", "stance_slide_m", "travel_m")
seen = {}
named = {}
for name, arrays in stages:  # keyed by name and its count: an extra height fit on one side shifts no other stage
    seen[name] = seen.get(name, 0) + 1
    named.update({f"{name} {seen[name]}|{key}": value for key, value in arrays.items()})
np.savez(out, **named)
with open(out + ".json", "w") as f:
    json.dump({"report": {k: result.report[k] for k in keys}, "events": events}, f)
"""


def side(tree: Path, robot: str, frames: str, period: float, start: str, out: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", ONE_SIDE, str(tree), robot, frames, str(period), start, out])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, default=None, help="another tree (default: this one)")
    parser.add_argument("--robot", default="g1", choices=("g1", "h1"))
    parser.add_argument("--frames", default="", help="START:END of the walk (default: all of it)")
    parser.add_argument("--period", type=float, default=0.005)
    parser.add_argument("--start", default="read", choices=("read", "float32"))
    parser.add_argument("--other-start", default=None, choices=("read", "float32"))
    args = parser.parse_args()
    here, there = HERE.parents[1], args.against or HERE.parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        outs = [os.path.join(tmp, "a.npz"), os.path.join(tmp, "b.npz")]
        jobs = [side(here, args.robot, args.frames, args.period, args.start, outs[0]),
                side(there, args.robot, args.frames, args.period, args.other_start or args.start, outs[1])]
        if any(job.wait() for job in jobs):
            raise SystemExit("a side failed")
        runs = [(np.load(out), json.load(open(out + ".json"))) for out in outs]
    (a, ja), (b, jb) = runs
    print(f"{args.robot} walk {args.frames or 'whole'} at {args.period * 1000:g} ms: this tree ({args.start}) against "
          f"{there} ({args.other_start or args.start})")
    for label, j in (("this", ja), ("other", jb)):
        r = j["report"]
        print(f"  {label:5s} margin {1000 * r['min_support_margin_m']:+.2f} mm, ZMP RMS "
              f"{1000 * r['multibody_zmp_rms_error_m']:.2f} mm, slide {1000 * r['stance_slide_m']:.2f} mm, "
              f"travel {r['travel_m']:.3f} m")
    for kind in ("step shares", "let-go"):
        for x, y in zip(*([e for e in j["events"] if e.startswith(kind)] for j in (ja, jb))):
            print(f"  {'same ' if x == y else 'PARTS'} {x}" + ("" if x == y else f"\n        {y}"))
    print("  stage / array: largest difference, at sample (row), first sample over 1e-4")
    for key in a.files:
        if key not in b.files or a[key].shape != b[key].shape:
            print(f"  {key}: {'only on this side' if key not in b.files else 'shapes differ'}")
            continue
        d = np.abs(a[key] - b[key])
        rows = d.reshape(len(d), -1).max(axis=1) if d.ndim else d.reshape(1)
        over = np.flatnonzero(rows > 1e-4)
        print(f"  {key:26s} {d.max():8.1e} at {int(rows.argmax()):5d}  first {over[0] if len(over) else '-'}")


if __name__ == "__main__":
    main()
