"""The gait and the balance readout on robots and clips that are not ours, run as a user runs them.

Writes variants of the bundled walk (tests/variants.py) and of the G1 (tests/robot_variants.py)
to a folder, runs `tools/robot-retarget gait` on each (and `balance` on its CSV), and prints each
one's figures beside the plain walk onto the plain G1's:

    .venv/bin/python bench/unseen_gait.py [--out DIR] [--only NAME ...] [--jobs 2] [--robot URDF]

Session 13 (2026-12-02): robots scaled 0.7 / 1.4, zeroed in a crouch, renamed (L_/R_ prefixes,
numbers), listed in another order, their links' frames turned, facing +y, rooted at the torso,
without masses; clips in centimetres, Z-up, A-pose and
bones-along-X rests, Unreal and Biped names, of two steps, starting mid-stride, resampled to 60 Hz.
Session 18: the walk cut by --frames 200:500 and 333:777 (docs/history/robots_and_clips_from_elsewhere.md, session 18).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from tests import robot_variants as RV  # noqa: E402
from tests import variants as V  # noqa: E402

WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
CLI = ROOT / "tools" / "robot-retarget"
BENT = {f"{side}_{joint}": turn for side in ("left", "right")
        for joint, turn in (("knee_joint", 0.6), ("hip_pitch_joint", -0.3), ("ankle_pitch_joint", -0.3))}
ARMS = {side: [f"{side.title()}Shoulder", f"{side.title()}Elbow", f"{side.title()}Wrist"] for side in ("left", "right")}


def _clip(clip, frames: slice):
    return dataclasses.replace(clip, motion=clip.motion[frames])


def _turns(robot, root: bool) -> dict[str, np.ndarray]:
    """Every link's frame but the root's turned at random (the same robot), or the root's alone turned
    90 degrees about the vertical (a URDF facing +y, not REP 103's +x)."""
    if root:
        return {robot.root_link: Rotation.from_rotvec([0.0, 0.0, np.pi / 2]).as_matrix()}
    rng = np.random.default_rng(13)
    return {n: Rotation.from_rotvec(rng.normal(size=3)).as_matrix() for n in robot.links if n != robot.root_link}


def write_variants(out: Path, urdf: Path = G1) -> dict[str, tuple[Path, Path, list[str]]]:
    """name -> (clip file, robot file, extra CLI arguments)."""
    out.mkdir(parents=True, exist_ok=True)
    clip, base = load_bvh(WALK), parse_urdf(urdf)
    name = "g1" if urdf == G1 else urdf.stem.split("_")[1]
    robots = {name: urdf}
    variants = [("x0.7", RV.scaled_robot(base, 0.7)), ("x1.4", RV.scaled_robot(base, 1.4)),
                ("LR", RV.renamed_robot(base, RV.sided_prefixes)), ("numbered", RV.numbered(base)),
                ("reordered", RV.reordered(base)), ("frames", RV.frames_turned(base, _turns(base, False))),
                ("facing_y", RV.frames_turned(base, _turns(base, True))), ("torso", RV.rooted_at(base, "torso_link"))]
    if urdf == G1:
        variants.append(("bent", RV.zero_shifted(base, BENT)))
    for suffix, robot in variants:
        robots[f"{name}_{suffix}"] = RV.write_urdf(robot, out / f"{name}_{suffix}.urdf")
    robots[f"{name}_massless"] = RV.write_urdf(RV.massless(base), out / f"{name}_massless.urdf")
    if urdf != G1:
        return {n: (WALK, path, []) for n, path in robots.items()}
    clips = {"walk": WALK}
    for name, variant in (("walk_cm", V.scaled(clip, 100.0)), ("walk_zup", V.z_up(clip)),
                          ("walk_apose", V.arms_posed(clip, ARMS, 45.0)), ("walk_alongx", V.along_x(clip)),
                          ("walk_unreal", V.renamed(clip, V.convention_names("unreal"))),
                          ("walk_biped", V.renamed(clip, V.convention_names("biped"))),
                          ("walk_2steps", _clip(clip, slice(60, 235))),
                          ("walk_midstride", _clip(clip, slice(180, None))),
                          ("walk_60hz", V.resampled(clip, 60.0))):
        clips[name] = V.write_bvh(variant, out / f"{name}.bvh")
    runs = {name: (WALK, path, []) for name, path in robots.items()}
    runs.update({name: (path, urdf, ["--source-up", "Z"] if name == "walk_zup" else [])
                 for name, path in clips.items() if name != "walk"})
    # cut as the commands cut (contacts from the whole clip): 333:777 starts with the right foot in the air
    # 0.39 m short of its first footprint (session 18: slid 28 mm before the placed step was checked)
    runs.update({f"walk_cut{a}": (WALK, urdf, ["--frames", f"{a}:{b}"]) for a, b in ((200, 500), (333, 777))})
    return runs


def run_one(name: str, clip: Path, robot: Path, extra: list[str], out: Path) -> dict:
    csv, report = out / f"{name}.csv", out / f"{name}.json"
    start = time.perf_counter()
    gait = subprocess.run([str(CLI), "gait", "--source", str(clip), "--robot", str(robot), "--out", str(csv),
                           "--report", str(report), "--overwrite", *extra], capture_output=True, text=True)
    row = {"name": name, "exit": gait.returncode, "seconds": time.perf_counter() - start,
           "stderr": gait.stderr.strip().splitlines()[-1:] if gait.returncode else []}
    if gait.returncode == 0:
        row["report"] = json.loads(report.read_text())
        bal = subprocess.run([str(CLI), "balance", "--motion", str(csv), "--robot", str(robot), "--report",
                              str(out / f"{name}.balance.json"), "--overwrite"], capture_output=True, text=True)
        row["balance"] = (json.loads((out / f"{name}.balance.json").read_text()) if bal.returncode == 0
                          else {"error": bal.stderr.strip()})
    return row


def summary(row: dict, base: dict | None) -> str:
    if row["exit"]:
        return f"{row['name']:15s} exit {row['exit']}: {' '.join(row['stderr'])}"
    r, b = row["report"], row["balance"]
    travel = r["travel_m"] / r["source_travel_m"]
    text = (f"{row['name']:15s} steps {r['steps']:2d}  margin {1000 * r['min_support_margin_m']:+6.1f} mm  "
            f"outside {r['zmp_outside_support_pct']:4.1f} %  slide {1000 * r['stance_slide_m']:5.2f} mm  "
            f"RMS {1000 * r['multibody_zmp_rms_error_m']:4.1f} mm  travel {r['travel_m']:.2f}/"
            f"{r['source_travel_m']:.2f} m {100 * travel:3.0f} %  tilt {r['stance_tilt_deg']:.2f} deg  "
            f"mass {r['mass_kg']:.1f} kg  {row['seconds']:.0f} s")
    if "error" in b:
        text += f"\n{'':15s} balance: {b['error']}"
    else:
        text += (f"\n{'':15s} balance: margin {1000 * b['min_support_margin_m']:+6.1f} mm  outside "
                 f"{b['zmp_outside_support_pct']:4.1f} %")
    if base is not None:
        lifts = [s["lift_off_s"] for side in ("left", "right") for s in r["swing_phases"][side]]
        base_lifts = [s["lift_off_s"] for side in ("left", "right") for s in base["swing_phases"][side]]
        if len(lifts) == len(base_lifts):
            text += f"  lift-offs within {max(abs(a - c) for a, c in zip(lifts, base_lifts)) * 1000:.1f} ms of the G1's"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("/tmp/unseen_gait"))
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--robot", type=Path, default=G1, help="the robot whose variants to run (robot variants "
                        "only unless the G1)")
    args = parser.parse_args()
    runs = write_variants(args.out, args.robot.resolve())
    first = next(iter(runs))
    names = [n for n in runs if not args.only or n in args.only or n == first]
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = dict(zip(names, pool.map(lambda n: run_one(n, *runs[n], args.out), names)))
    base = rows[first].get("report")
    for name in names:
        print(summary(rows[name], None if name == first else base))
    (args.out / "rows.json").write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
