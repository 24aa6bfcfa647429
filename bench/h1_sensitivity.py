#!/usr/bin/env python3
"""How far the H1 walk's gait moves for a start that differs by rounding (issue 12): a chaos probe.

    .venv/bin/python bench/h1_sensitivity.py [--robot h1|g1] [--runs read,float32,noise,torso] [--stages] [--turn-back]
        [--width-share X] [--held] [--scale S] [--set MODULE.NAME=VALUE ...]

The bundled walk onto the robot at 200 Hz (its default waist: rolled for the H1), four ways that should give
the same gait: the clip as read; its positions rounded to float32 (what Blender's BVH importer hands the CLI);
1e-6 m of noise on every bone's positions; the robot described from its torso (the re-rooting's rounding).
Each run's figures (worst margin, multibody ZMP RMS, slide) and how far its joints (by name, radians) and feet
(metres) are from the first run's. --stages also prints, stage by stage inside the gait (the plan's target, the
lateral programme's CoM, each height fit, each round of passes), how far each run's output is from the first
run's: the first stage whose difference grows far past 1e-6 m is where the passes amplify.
--turn-back: each double support's yaw turned back with the plan's heading (CorrectionSettings.turn_back_yaw).
--width-share X: the lateral plan's support shrunk by no more than X of half its width, or none: by the margin
everywhere (core.balance.gait.SHRINK_WIDTH_SHARE, 0.85 unless given).
--set gait.ROLLED_COARSE_PASSES=2: a constant of core.balance's module set (to the type it has) in each run, as the
sessions' sweeps of module constants did by hand; may be given again.
--held: the 10 s clip (the walk with its ends held and the walk's own contacts, bench_gait.py) instead of the walk:
a chaotic gait on the H1, so one start's figures are one draw.
--scale S: the robot S times as large, of the same density (tests/robot_variants.py scaled_robot): a robot the
gait was not drawn on (session 19: the H1 scaled 0.8 / 0.9 / 1.1 / 1.2).
Runs go two at a time (separate processes); each is one H1 gait (about 10 s of CPU idle). --jobs 1 runs them one
after another in one process: `--runs read,read --jobs 1` asks whether the same start walks the same gait twice.
"""
from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import clips  # noqa: E402

RUNS = ("read", "float32", "noise", "torso")
FEET = {"h1": ("left_ankle_link", "right_ankle_link"), "g1": ("left_ankle_roll_link", "right_ankle_roll_link")}
FIGURES = ("min_support_margin_m", "multibody_zmp_rms_error_m", "stance_slide_m", "zmp_outside_support_pct",
           "travel_m")


def started(how: str, motion):
    """The walk `how` starts: as read, rounded to float32, with 1e-6 m noise on its positions, or shaken within
    float32's rounding ("ulp SEED", bench/start_spread.py)."""
    from core.motion.source import SourceMotion
    if how in ("read", "torso"):
        return motion
    if how == "float32":
        heads, tails = motion.heads.astype(np.float32).astype(float), motion.tails.astype(np.float32).astype(float)
        rot = motion.root_rotation.astype(np.float32).astype(float)
    elif how == "noise":
        rng = np.random.default_rng(12)
        shift = rng.normal(0.0, 1e-6, motion.heads.shape)
        heads, tails, rot = motion.heads + shift, motion.tails + shift, motion.root_rotation
    elif how.startswith("ulp "):  # "ulp SEED": every position and root turn times (1 + u), u within float32's half ulp
        rng = np.random.default_rng(int(how.split()[1]))
        heads, tails, rot = (a * (1.0 + rng.uniform(-2.0 ** -24, 2.0 ** -24, a.shape))
                             for a in (motion.heads, motion.tails, motion.root_rotation))
    else:
        raise ValueError(how)
    return SourceMotion(motion.bone_names, motion.parents, heads, tails, rot, motion.rest_heads, motion.rest_tails,
                        motion.rest_root_rotation, motion.fps, motion.name)


def _named(tree, q: np.ndarray) -> np.ndarray:
    """q's columns in the order of the joints' names (trees rooted elsewhere order them otherwise)."""
    return q[:, np.argsort(tree.joint_names)]


_RECORDING: list[list] = []  # the run's stage list, last: the stages are wrapped once per process (--jobs 1 runs
#                               several gaits in one)


def _record(stages: list) -> None:
    """Wrap the gait's stages (once a process) so each appends (name, arrays) to stages."""
    from core.balance import correction, gait

    _RECORDING.append(stages)
    if len(_RECORDING) > 1:
        return

    def wrap(module, name, keep):
        inner = getattr(module, name)

        def wrapped(*args, **kwargs):
            out = inner(*args, **kwargs)
            _RECORDING[-1].append((name, keep(args, out)))
            return out
        setattr(module, name, wrapped)

    wrap(gait, "make_plan", lambda a, out: {"target": out.target.copy(), "height": out.height.copy()})
    wrap(gait, "carried_path", lambda a, out: {"com": out[0].copy(), "zmp": out[1].copy()})
    wrap(gait, "balance", lambda a, out: {"root": out.root_position.copy(), "q": _named(a[0].tree, out.q)})
    wrap(gait, "refine", lambda a, out: {"root": out[1].copy(), "q": _named(a[0].tree, out[0]), "zmp": out[3].copy()})
    wrap(correction, "refine", lambda a, out: {"root": out[1].copy(), "q": _named(a[0].tree, out[0])})
    wrap(gait, "roll_trailing_feet", lambda a, out: {"q": _named(a[0].tree, out)})
    fit = correction.Corrector.fit_height

    def fit_height(self, *args, **kwargs):
        out = fit(self, *args, **kwargs)
        _RECORDING[-1].append(("fit_height", {"height": self.height.copy(), "change": np.array([out])}))
        return out
    correction.Corrector.fit_height = fit_height


def _set_constants(assignments: list[str]) -> None:
    """Each "module.NAME=value" set on core.balance.module, converted to the type NAME has."""
    import ast
    import importlib
    for assignment in assignments:
        name, value = assignment.split("=", 1)
        module_name, constant = name.rsplit(".", 1)
        module = importlib.import_module(f"core.balance.{module_name}")
        getattr(module, constant)  # a name that is not there fails here, not silently
        setattr(module, constant, ast.literal_eval(value))  # 3, 0.9, False, (4, 8): Python literals


def run(args: tuple[str, str, bool, bool, str | None, bool, list[str], float]) -> dict:
    how, robot, stages_on, turn_back, width_share, held_clip, assignments, scale = args
    _set_constants(assignments)
    import core.balance.gait as gait
    from core.balance.correction import CorrectionSettings
    from core.balance.gait import GaitSettings, generate_gait
    from core.model.kinematics import KinematicTree
    from core.model.transforms import pose_matrices
    from core.model.urdf import parse_urdf
    from core.retarget.automap import auto_map
    from tests.robot_variants import rooted_at

    if width_share is not None:  # else the module's own
        gait.SHRINK_WIDTH_SHARE = None if width_share == "none" else float(width_share)
    stages: list = []
    if stages_on:
        _record(stages)
    tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
    if scale != 1.0:
        from tests.robot_variants import scaled_robot
        tree = KinematicTree(scaled_robot(tree.robot, scale))
    if how == "torso":
        tree = KinematicTree(rooted_at(tree.robot, "torso_link"))
    motion = started(how, clips.load(clips.WALK))
    contacts = "auto"
    if held_clip:  # as bench_gait.py times it
        from bench_gait import held, held_contacts
        from core.feet.contacts import detect_contacts
        walk, motion = motion, held(motion, 10.0)
        contacts = held_contacts(detect_contacts(walk, auto_map(walk, tree)), motion.frames)
    settings = GaitSettings(correction=CorrectionSettings(turn_back_yaw=turn_back))
    result = generate_gait(motion, tree, auto_map(motion, tree), contacts=contacts, settings=settings)
    root = pose_matrices(result.root_rotation, result.root_position)
    feet = np.stack([tree.link_transform(result.q, tree.link_index(name), root)[:, :3, 3] for name in FEET[robot]])
    return {"how": how, "report": {k: result.report[k] for k in FIGURES + ("steps",)}, "q": _named(tree, result.q),
            "feet": feet, "stages": stages}


def _gap(a: dict, b: dict) -> str:
    return " ".join(f"{k} {np.abs(a[k] - b[k]).max():.1e}" for k in a if k in b and a[k].shape == b[k].shape)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="h1", choices=("h1", "g1"))
    parser.add_argument("--runs", default=",".join(RUNS))
    parser.add_argument("--stages", action="store_true")
    parser.add_argument("--turn-back", action="store_true")
    parser.add_argument("--width-share", default=None, help="a share, or none (the gait's default unless given)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--held", action="store_true", help="the 10 s clip (the walk with its ends held)")
    parser.add_argument("--scale", type=float, default=1.0, help="the robot this many times as large")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                        help="a core.balance module's constant for these runs (gait.ROLLED_COARSE_PASSES=2)")
    args = parser.parse_args()
    hows = args.runs.split(",")
    with ProcessPoolExecutor(args.jobs) as pool:
        jobs = [(how, args.robot, args.stages, args.turn_back, args.width_share, args.held, args.set, args.scale)
                for how in hows]
        results = list(pool.map(run, jobs))
    first = results[0]
    options = ((", yaw turned back" if args.turn_back else "")
               + (f", width share {args.width_share}" if args.width_share else "")
               + "".join(f", {assignment}" for assignment in args.set)
               + (f", scaled {args.scale:g}" if args.scale != 1.0 else ""))
    print(f"{args.robot} {'10 s clip' if args.held else 'walk'} at 200 Hz{options}: margin mm, ZMP RMS mm, slide mm, outside %, travel m; "
          f"joints (rad) and feet (m) apart from '{first['how']}'")
    for r in results:
        rep = r["report"]
        print(f"{r['how']:8s} {1000 * rep['min_support_margin_m']:+7.2f} "
              f"{1000 * rep['multibody_zmp_rms_error_m']:6.2f} "
              f"{1000 * rep['stance_slide_m']:6.2f} {rep['zmp_outside_support_pct']:5.2f} {rep['travel_m']:.4f} "
              f"steps {rep['steps']}  joints {np.abs(r['q'] - first['q']).max():.1e}  "
              f"feet {np.abs(r['feet'] - first['feet']).max():.1e}")
    if args.stages:
        for r in results[1:]:
            print(f"\nstages of '{r['how']}' against '{first['how']}':")
            for (name, a), (other, b) in zip(r["stages"], first["stages"]):
                print(f"  {name:20s} {_gap(a, b)}" if name == other else f"  {name} / {other}: the stages part")
            if len(r["stages"]) != len(first["stages"]):
                print(f"  {len(r['stages'])} stages against {len(first['stages'])}")


if __name__ == "__main__":
    main()
