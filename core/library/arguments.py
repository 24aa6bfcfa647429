"""The command line's flags, defined once for the extension's `robot-retarget` and the package's
`robot-retarget-core`, so both accept exactly the same options; plus the checks on them that
need no Blender (frame ranges, output paths, export settings)."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import warnings
from pathlib import Path

from ..chains.mapping import SETTING_RANGES
from ..motion.fileio import write_text_atomic
from ..playback import ExportSettings
from ..playback.formats import FORMATS
from ..playback.prepare import MIN_PERIOD_S, period_allowed


SELF_COLLISION_MARGIN_M = SETTING_RANGES["collision_margin"]  # a preset's range: the flag's


class CommandError(ValueError):
    """A problem with the user's input: printed as one line, exit code 1."""


def add_clip_arguments(p: argparse.ArgumentParser, robot_help: str = "robot description (.urdf)") -> None:
    """--source, --robot, --mapping, --frames: one clip onto one robot (bake, gait)."""
    p.add_argument("--source", required=True, help="motion clip (.bvh or .fbx)")
    p.add_argument("--robot", required=True, help=robot_help)
    p.add_argument("--mapping", help="chain mapping preset (.json); default: automatic mapping")
    p.add_argument("--frames", help="START:END clip frames, 0-based, END exclusive (default: all)")


def add_outputs(p: argparse.ArgumentParser, out_help: str) -> None:
    """--out, --report, --overwrite."""
    p.add_argument("--out", required=True, help=out_help)
    p.add_argument("--report", help="JSON report to write")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")


def add_self_collision(p: argparse.ArgumentParser) -> None:
    """The mapping preset's two self-collision settings from the command line: a pipeline turns the
    avoidance on or off, or widens the margin, without writing a preset per run."""
    p.add_argument("--avoid-self-collision", action=argparse.BooleanOptionalAction, default=None,
                   help="keep the robot's checked link pairs apart in the solve (default: the mapping "
                        "preset's setting, else the add-on's default)")
    p.add_argument("--collision-margin", type=float, metavar="M",
                   help="metres kept between checked links' collision proxies (0 to 0.2; default: the "
                        "preset's, else 0.01)")


def self_collision_settings(args: argparse.Namespace) -> dict:
    """The retarget settings add_self_collision's flags set ({}: the preset's or the defaults)."""
    settings = {}
    if getattr(args, "avoid_self_collision", None) is not None:
        settings["avoid_self_collision"] = bool(args.avoid_self_collision)
    margin = getattr(args, "collision_margin", None)
    if margin is not None:
        if not 0.0 <= margin <= SELF_COLLISION_MARGIN_M[1]:  # NaN fails too
            raise CommandError(f"--collision-margin {margin!r}: expected metres from 0 to "
                               f"{SELF_COLLISION_MARGIN_M[1]} (0.01 is 1 cm)")
        settings["collision_margin"] = float(margin)
    return settings


def add_source_up(p: argparse.ArgumentParser) -> None:
    """--source-up: the BVH file's up axis (Blender's importer's axis_up; FBX files say their own)."""
    p.add_argument("--source-up", choices=["Y", "Z"], default="Y",
                   help="up axis of a BVH clip: Y (the BVH convention, default) or Z (written by some "
                        "exporters; read as Y the actor lies on its back)")


def add_contacts(p: argparse.ArgumentParser, files: bool = True) -> None:
    """--contacts: which feet a bake keeps planted (the same default for bake, export and batch,
    so an exported clip moves as its bake does)."""
    if files:
        p.add_argument("--contacts", default="auto", metavar="auto|off|FILE.json",
                       help="feet to keep planted: contacts detected from the clip (auto, the default), none "
                            "(off), or a contacts file in 0-based clip frames")
    else:
        p.add_argument("--contacts", default="auto", choices=["auto", "off"],
                       help="feet to keep planted: contacts detected from each clip (auto, the default) or none (off)")


def add_bake_parser(sub, func) -> argparse.ArgumentParser:
    """The `bake` subcommand's flags."""
    p = sub.add_parser("bake", help="retarget a clip onto a robot and write the bake CSV",
                       description="Retarget a BVH/FBX clip onto a URDF robot; write one CSV row per "
                                   "source frame (time_s, root pose, joints in URDF order; radians, metres).")
    add_clip_arguments(p)
    add_contacts(p)
    add_self_collision(p)
    add_outputs(p, "CSV file to write")
    add_source_up(p)
    p.set_defaults(func=func)
    return p


def add_export_parser(sub, func) -> argparse.ArgumentParser:
    """The `export` subcommand's flags."""
    p = sub.add_parser("export", help="bake a clip (or open a .blend) and write a robot playback file",
                       description="Write the robot's action at the control cycle (t_k = k * period) as a "
                                   "playback file, checked against position, velocity and acceleration limits.")
    p.add_argument("--source", required=True, help="motion clip (.bvh, .fbx) or scene (.blend) with a baked robot "
                   "(.fbx and .blend need Blender: the extension's command, blender -b -c robot_retarget)")
    p.add_argument("--robot", help="robot description (.urdf); required for clips; replaces a .blend rig's URDF path")
    p.add_argument("--object", help="robot rig in the .blend (default: the Robot tab's, the active or the only rig)")
    p.add_argument("--mapping", help="chain mapping preset (.json); default: automatic mapping")
    p.add_argument("--frames", help="START:END frames, 0-based, END exclusive (default: all)")
    add_contacts(p)
    add_self_collision(p)
    playback_options(p)
    p.add_argument("--out", required=True, help="playback file to write")
    p.add_argument("--report", help="JSON report to write")
    add_source_up(p)
    p.set_defaults(func=func)
    return p


def add_batch_parser(sub, func) -> argparse.ArgumentParser:
    """The `batch` subcommand's flags: several --robot, each with its --mapping (or none: auto-map)."""
    p = sub.add_parser("batch", help="export every clip of a folder or glob, in parallel processes",
                       description="Bake and export every clip (.bvh, .fbx, .blend) onto one or more robots; "
                                   "a failing clip is reported and the batch goes on; exit 1 if any failed. "
                                   "A re-run skips clips whose outputs are complete unless --overwrite.")
    p.add_argument("--robot", required=True, action="append", metavar="ROBOT.urdf",
                   help="robot description (.urdf); repeat for several robots (outputs then go to "
                        "DIR/<robot>/<clip>.<ext>)")
    p.add_argument("--mapping", action="append", metavar="PRESET.json",
                   help="chain mapping preset (.json) saved from the UI, one per --robot in the same order; "
                        "default: each clip auto-mapped (the mapping goes into its summary entry)")
    p.add_argument("--inputs", required=True, metavar="DIR_OR_GLOB", help="folder of clips, or a glob (quote it: 'clips/*.bvh')")
    playback_options(p)
    p.add_argument("--out-dir", required=True, metavar="DIR", help="folder for the playback files (<clip name>.<ext>)")
    add_contacts(p, files=False)
    add_self_collision(p)
    p.add_argument("--engine", choices=["local", "dask"], default="local",
                   help="local: worker processes on this machine (default); dask: one task per clip on a "
                        "Dask distributed cluster (pip install robot-retarget-core[dask])")
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler address (tcp://host:8786); default: "
                                                          "a local cluster of --workers processes")
    p.add_argument("--workers", type=int, default=1, metavar="N", help="clips exported at the same time (processes)")
    p.add_argument("--report", help="JSON summary report to write (a re-run of the same batch replaces its "
                                    "earlier summary)")
    add_source_up(p)
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # a Blender worker of the extension
    p.set_defaults(func=func)
    return p


def add_gait_parser(sub, func) -> argparse.ArgumentParser:
    """The `gait` subcommand's flags (issue 12's contract)."""
    p = sub.add_parser("gait", help="turn a clip's steps into a balanced robot gait at the control cycle",
                       description="Retarget a walking or dancing clip into robot motion at its control cycle whose "
                                   "zero moment point stays over its feet: feet flat and still on the ground, the "
                                   "swing legs through the person's representative points, the waist balanced "
                                   "by preview control. Writes the bake CSV layout, one row per control cycle.")
    add_clip_arguments(p, robot_help="robot description (.urdf) with <inertial> masses")
    add_control_cycle(p, "200 Hz, a 5 ms period", GAIT_MIN_PERIOD_S)
    p.add_argument("--sensitivity", type=float, default=1.0,
                   help="how much of the person's swing style to keep: higher keeps more of its turning points "
                        "(default 1)")
    p.add_argument("--merge-s", type=float, default=0.1, metavar="S",
                   help="turning points of a swing closer than this become one (default 0.1 s)")
    upper = p.add_mutually_exclusive_group()
    upper.add_argument("--upper-body", dest="upper_body", action="store_true", default=True,
                       help="arms and torso follow the clip (default)")
    upper.add_argument("--no-upper-body", dest="upper_body", action="store_false",
                       help="arms and torso hold the clip's median posture")
    p.add_argument("--waist", choices=["auto", "rolled", "upright"], default="auto",
                   help="legs without an ankle roll: the waist rolls and yaws to carry the body over a flat foot "
                        "(rolled; balanced, about 1.3 times the CPU time) or stays upright (upright; faster, its "
                        "ZMP may leave the feet); auto (the default) rolls it exactly where the legs need it")
    p.add_argument("--contacts", default="auto", metavar="auto|FILE.json",
                   help="the clip's foot contacts: detected (auto, the default) or a contacts file in 0-based "
                        "clip frames")
    add_self_collision(p)
    add_outputs(p, "CSV file to write (bake CSV layout, one row per control cycle)")
    add_source_up(p)
    p.set_defaults(func=func)
    return p


def add_balance_parser(sub, func) -> argparse.ArgumentParser:
    """The `balance` subcommand's flags (issue 12's contract)."""
    p = sub.add_parser("balance", help="ZMP against the support polygon for a robot motion (bake CSV)",
                       description="The balance readout of a motion in the bake CSV layout: the multibody "
                                   "zero moment point against the support polygon of the feet on the ground.")
    p.add_argument("--motion", required=True, help="robot motion in the bake CSV layout (time_s, root pose, joints); "
                   "an exported playback file (.csv with its .meta.json, .npz) is read in its own units")
    p.add_argument("--robot", required=True, help="robot description (.urdf) with <inertial> masses")
    p.add_argument("--report", help="JSON report to write")
    p.add_argument("--per-frame", action="store_true", help="also write zmp_m, com_m and support_margin_m per frame")
    p.add_argument("--overwrite", action="store_true", help="replace an existing report")
    p.set_defaults(func=func)
    return p


# The gait's shortest control period (10 kHz): the walk at 4 kHz takes 13 s and 0.6 GB, at 1e9 Hz it asked
# for 60 GB and ended in a MemoryError's traceback (Generate Gait's Control Period goes down to 0.5 ms).
GAIT_MIN_PERIOD_S = 1e-4


def add_control_cycle(p: argparse.ArgumentParser, default: str, shortest: float = MIN_PERIOD_S) -> None:
    """--rate HZ | --period S (one or the other; read by control_period with the same `shortest`)."""
    cycle = p.add_mutually_exclusive_group()
    cycle.add_argument("--rate", type=float, metavar="HZ",
                       help=f"control rate in Hz (default: {default}; at most {1 / shortest:g})")
    cycle.add_argument("--period", type=float, metavar="SECONDS",
                       help=f"control period in seconds (instead of --rate; at least {shortest:g})")


def playback_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--settings", metavar="EXPORT.json", help="export settings (.json): format, rate_hz, units, limits, retime, ...")
    p.add_argument("--format", choices=list(FORMATS), help="playback format (default: csv)")
    add_control_cycle(p, "100 Hz, a 10 ms period")
    p.add_argument("--units", choices=["rad", "deg"], help="revolute joint units (default: rad; deg: csv, npz)")
    p.add_argument("--accel-limit", dest="acceleration_limit", type=float, metavar="A",
                   help="acceleration limit for every joint, rad/s^2 (m/s^2 for prismatic joints)")
    p.add_argument("--retime", action="store_true", help="slow down the segments that break velocity or "
                                                         "acceleration limits")
    p.add_argument("--allow-violations", action="store_true", help="write even if limits are broken")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    p.add_argument("--no-free-joint", dest="no_free_joint", action="store_true",
                   help="mujoco-keyframes without the free joint (qpos = joints only), for a fixed-base "
                        "MJCF such as an arm; refused if the root moves")
    p.add_argument("--frame-rate", dest="frame_rate", choices=["auto", "scene", "bake"],
                   help="a .blend's action: the frame rate that makes its frames seconds when the scene's and "
                        "the bake's differ (default auto: refused then); a .bvh or .fbx clip is timed by its own "
                        "frame time (export refuses scene|bake with one; batch and settings files leave them be)")


def export_settings(args: argparse.Namespace) -> ExportSettings:
    """ExportSettings from --settings (JSON), then the flags given on the command line."""
    settings = ExportSettings.load(args.settings) if args.settings else ExportSettings()
    changes: dict = {}
    period = control_period(args)
    if period is not None:
        changes["period_s"] = period
    for flag in ("format", "units", "acceleration_limit", "frame_rate"):
        if getattr(args, flag) is not None:
            changes[flag] = getattr(args, flag)
    for flag in ("retime", "allow_violations", "overwrite"):
        if getattr(args, flag):
            changes[flag] = True
    if args.no_free_joint:
        changes["mujoco_free_joint"] = False
    return dataclasses.replace(settings, **changes).validate()


def clip_range(text: str | None, count: int) -> tuple[int, int]:
    """--frames START:END (0-based, END exclusive, either side may be left out) within a clip of `count`
    frames; an END past the clip is cut to it with a warning."""
    if not text:
        return 0, count
    try:
        start_text, end_text = text.split(":")
        start = int(start_text) if start_text.strip() else 0
        end = int(end_text) if end_text.strip() else count
    except ValueError:
        raise CommandError(f"--frames {text!r}: expected START:END, e.g. 0:240") from None
    if start < 0 or end < 0:  # '-100:' baked the whole clip with a warning where a slice takes the last 100
        raise CommandError(f"--frames {text!r}: frames are 0-based, 0 or more (the clip has {count}: 0:{count}); "
                           "a negative frame does not count from the end")
    clamped = start, min(end, count)
    if clamped[1] <= clamped[0]:
        raise CommandError(f"--frames {text!r}: no frames in range (the clip has {count})")
    if clamped != (start, end):  # a slice would clamp silently; a user asking for more should hear it
        warnings.warn(f"--frames {text!r}: the clip has {count} frames (0:{count}); using {clamped[0]}:{clamped[1]}")
    return clamped


def check_output(path: Path, overwrite: bool) -> Path:
    """Fail before the slow work if the result could not be written."""
    if path.exists() and not overwrite:
        raise CommandError(f"{path}: file exists (pass --overwrite to replace it)")
    if not path.parent.is_dir():
        raise CommandError(f"{path}: folder {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise CommandError(f"{path}: folder {path.parent} is not writable")
    return path


def refuse_folder(path: Path, flag: str = "--source", what: str = "clip file",
                  elsewhere: str = "batch --inputs takes a folder") -> None:
    """A folder given where one file goes is said as such (it read 'not found')."""
    if Path(path).is_dir():
        raise CommandError(f"{path}: a folder, not a {what} ({flag} takes one {what.split()[0]}"
                           + (f"; {elsewhere})" if elsewhere else ")"))


def check_outputs(paths: list, overwrite: bool, inputs: list = ()) -> list[Path | None]:
    """check_output for each given path (None and "" stay None), and no two of them, nor an
    output and an input, the same file: `--report` given the CSV's name would replace the CSV,
    and an output named like the clip would replace the user's clip."""
    out = [check_output(Path(p).absolute(), overwrite) if p else None for p in paths]
    seen: dict[Path, Path] = {Path(p).resolve(): Path(p) for p in inputs if p}
    for path in out:
        if path is None:
            continue
        if path.resolve() in seen:
            raise CommandError(f"{path}: given as two of the command's files ({seen[path.resolve()]}); "
                               "each output needs a name of its own")
        seen[path.resolve()] = path
    return out


INPUT_FLAGS = ("source", "robot", "mapping", "contacts", "settings", "motion")  # flags that name files read


def command_inputs(args: argparse.Namespace) -> list:
    """The files a command reads (its clip, robot, preset, contacts file, settings, motion): no output may
    be one of them, even with --overwrite (a report named like the URDF replaced the URDF)."""
    found = []
    for flag in INPUT_FLAGS:
        value = getattr(args, flag, None)
        for item in value if isinstance(value, list) else [value]:
            if item and str(item) not in ("auto", "off"):
                found.append(item)
    return found


def check_contacts(args: argparse.Namespace) -> None:
    """--contacts FILE.json must exist before the slow work starts."""
    if args.contacts in ("auto", "off"):
        return
    path = Path(args.contacts).absolute()
    refuse_folder(path, "--contacts", "contacts file", "")
    if not path.is_file():
        raise CommandError(f"{path}: contacts file not found")


def control_period(args: argparse.Namespace, shortest: float = MIN_PERIOD_S) -> float | None:
    """--rate HZ or --period S as seconds, None when neither is given; a bad value names its flag.
    shortest: the shortest period taken (a mistyped rate asked for more samples than memory holds)."""
    if args.rate is not None:
        if not (args.rate > 0 and period_allowed(1.0 / args.rate, shortest)):  # inf: a period of 0; nan: not > 0
            raise CommandError(f"--rate {args.rate:g}: expected a positive number of Hz, at most {1 / shortest:g}")
        return 1.0 / args.rate
    if args.period is not None:
        if not period_allowed(args.period, shortest):
            raise CommandError(f"--period {args.period:g}: expected a positive number of seconds, at least "
                               f"{shortest:g}")
        return args.period
    return None


def write_report(path: Path | None, report: dict, overwrite: bool) -> None:
    """REPORT.json, atomically (nothing half-written)."""
    if path is not None:
        write_text_atomic(path, json.dumps(report, indent=2) + "\n", overwrite=overwrite)


def print_warnings(warnings, prefix: str = "") -> None:
    for warning in warnings:
        print(f"warning: {prefix}{warning}", file=sys.stderr)


def parse_arguments(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """parser.parse_args, but a flag the subcommand does not know is refused by the subcommand's
    parser (its usage and prog), not the top-level one: argparse's own parse_args printed
    `usage: PROG [-h] COMMAND ...`, which does not say which flags `gait` or `balance` take."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = getattr(args, "command", None)
        # a flag before the subcommand is the top-level parser's, not the subcommand's to refuse
        after = command in argv and all(flag in argv[argv.index(command) + 1:] for flag in unknown)
        refusing = (getattr(parser, "subcommands", {}).get(command) if after else None) or parser
        refusing.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def run_command(parser: argparse.ArgumentParser, argv: list[str], prog: str, errors: tuple,
                message=str) -> int:
    """Parse and run a subcommand; bad input (`errors`) is one line on stderr and exit code 1;
    Ctrl-C is one line and exit code 130 (the shell's code for SIGINT), not a traceback."""
    try:
        args = parse_arguments(parser, list(argv))
    except SystemExit as ex:  # --help or a usage error: argparse already printed
        return ex.code if isinstance(ex.code, int) else 1
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except errors as ex:  # one line, not a traceback, for bad input
        print(f"{prog}: error: {message(ex)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # outputs are written atomically: nothing half-written is left
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
