"""`program`: compile a motion program against a library of modules into a timeline (and a motion)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import CommandError, check_outputs, write_report


def add_parser(sub) -> None:
    p = sub.add_parser("program", help="compile a motion program into a timeline of modules per part",
                       description="Read a motion program (combined motions, pile-ups, parts driven by commands) "
                                   "against a library of basic motions and modules; write the timeline (part, "
                                   "module, start, end, repeat; spoken lines; velocity violations) and, with "
                                   "--motion, the composed joint trajectory.")
    p.add_argument("--library", required=True,
                   help="folder with parts.json and one CSV per basic motion or module (bake CSV layout, or time_s "
                        "and the part's joints); or a .blend with one robot rig, its part collections and module "
                        "actions (Make Basic Motion)")
    p.add_argument("--program", required=True, help="program text file")
    p.add_argument("--out", required=True, help="timeline JSON to write")
    p.add_argument("--motion", help="composed joint trajectory to write (bake CSV layout)")
    p.add_argument("--rate", type=float, default=100.0, metavar="HZ", help="rate of --motion (default 100 Hz)")
    p.add_argument("--robot", help="robot (.urdf): its velocity limits for the timing check, its joints for --motion")
    p.add_argument("--report", help="JSON report to write (the timeline's figures and the violations)")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    p.set_defaults(func=run)


def _blend_library(path: Path):
    """The module actions and part collections of the robot rig saved in a .blend, and its tree."""
    import bpy

    from ..operators.common import tree_from_rig
    from ..operators.program import blend_library

    if not path.is_file():
        raise CommandError(f"{path}: library .blend not found")
    bpy.ops.wm.open_mainfile(filepath=str(path))
    rigs = [o for o in bpy.data.objects if o.type == 'ARMATURE' and o.get("urdf_path")]
    if len(rigs) != 1:
        raise CommandError(f"{path}: needs exactly one robot rig (an armature imported from a URDF), found "
                           f"{len(rigs)}")
    return blend_library(rigs[0], bpy.context.scene), tree_from_rig(rigs[0])


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..core.model.kinematics import KinematicTree
    from ..core.model.urdf import parse_urdf
    from ..core.motion.bake_csv import BakeTable, write_bake_csv
    from ..core.motion.fileio import write_text_atomic
    from ..core.program import Library, compile_program, compose, parse, robot_limits

    out, motion, report_path = check_outputs([args.out, args.motion, args.report], args.overwrite)
    if motion is not None and not args.rate > 0:
        raise CommandError(f"--rate {args.rate:g}: must be positive (Hz)")
    source = Path(args.program)
    if not source.is_file():
        raise CommandError(f"{source}: program file not found")
    if Path(args.library).suffix.lower() == ".blend":
        library, tree = _blend_library(Path(args.library))
        tree = KinematicTree(parse_urdf(args.robot)) if args.robot else tree
    else:
        library = Library.load(args.library)
        tree = KinematicTree(parse_urdf(args.robot)) if args.robot else None
    if tree is not None:
        for part in library.parts.values():
            unknown = [j for j in part.joints if j not in tree.joint_names]
            if unknown:
                raise CommandError(f"{args.library}: part {part.name}'s joint(s) {', '.join(unknown)} are not "
                                   f"joints of {args.robot or 'the rig'}")
    velocity, limits = robot_limits(tree) if tree is not None else (None, None)
    timeline = compile_program(parse(source.read_text(encoding="utf-8"), str(source)), library, velocity, limits)
    write_text_atomic(out, json.dumps(timeline.to_dict(), indent=2, allow_nan=False) + "\n", overwrite=args.overwrite)
    if motion is not None:
        names = tree.joint_names if tree is not None else sorted({j for p in library.parts.values() for j in p.joints})
        # joints of no part stay at 0, clipped into their limits (0 is outside the Panda's joint 4's)
        rest = np.clip(np.zeros(len(names)), tree.lower, tree.upper) if tree is not None else None
        times, q = compose(timeline, names, args.rate, rest)
        identity = np.tile([1.0, 0.0, 0.0, 0.0], (len(times), 1))
        table = BakeTable(names, times, np.zeros((len(times), 3)), identity, q)  # a program drives joints only
        write_bake_csv(motion, table, overwrite=args.overwrite)
    report = {"program": str(source.absolute()), "library": str(Path(args.library).absolute()),
              "duration_s": timeline.duration_s, "items": len(timeline.items), "voice": len(timeline.voice),
              "violations": timeline.to_dict()["violations"], "timeline": str(out)}
    write_report(report_path, report, args.overwrite)
    for item in timeline.items:
        print(f"{item.part:<12} {item.module.name:<16} {item.start_s:8.2f} - {item.end_s:8.2f} s"
              + (f" x{item.repeat}" if item.repeat > 1 else ""))
    for text, start in timeline.voice:
        print(f"{'VOICE':<12} {text!r:<16} {start:8.2f} s")
    print(f"{len(timeline.items)} modules over {timeline.duration_s:.2f} s; "
          f"{len(timeline.violations)} timing violation(s)" + (" (no robot: not checked)" if tree is None else ""))
    for v in timeline.violations[:10]:
        speed = "a jump in no time" if v.speed is None else f"{v.speed:.2f}"
        print(f"violation: {v.part} {v.joint} at {v.time_s:.2f} s needs {speed}, limit {v.limit:.2f}")
    print("wrote " + " and ".join(str(path) for path in (out, motion, report_path) if path is not None))
    return 0
