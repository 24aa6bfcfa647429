"""One BVH clip file baked onto one URDF robot, and exported: the one code path the extension's
command line and `robot-retarget-core` share for BVH/URDF inputs, so their files are the same bytes.

Frames are 0-based clip frames, the clip's rate is the BVH's Frame Time, and the world is Blender's
(core.motion.bvh reads a clip the way Blender's importer shows it). The math runs on one BLAS
thread (core.library.blas): the same bytes in Blender, in a worker and in a plain Python.
"""
from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..chains.mapping import Mapping
from ..feet.contacts import contacts_option, range_contacts
from ..model.kinematics import KinematicTree
from ..model.urdf import parse_urdf
from ..motion.bake_csv import BakeTable
from ..motion.bvh import load_bvh
from ..motion.source import SourceMotion
from ..playback import ExportSettings, JointLimits, PlaybackMeta, prepare_playback, require_within_limits
from ..playback.formats import write_playback
from ..playback.mimic import mimic_joints, mimic_limit_warnings
from ..playback.report import export_report, playback_summary
from ..retarget import RetargetResult, auto_map, retarget
from ..retarget.automap import automap_frames
from ..retarget.summary import report_summary
from .arguments import CommandError, clip_range, refuse_folder
from .blas import one_blas_thread

NEEDS_BLENDER = (".fbx", ".blend")


@dataclass
class RobotModel:
    """A robot read once (per process or worker) and the mapping preset to use on it (None: auto-map)."""

    path: Path
    tree: KinematicTree
    mapping: Mapping | None = None
    mapping_path: Path | None = None  # the preset's file, which errors name
    settings: dict = dataclasses.field(default_factory=dict)  # retarget settings over the preset's (command flags)

    @property
    def name(self) -> str:
        return self.tree.robot.name


def load_robot(path, mapping_path=None, settings: dict | None = None) -> RobotModel:
    """Parse the URDF (and the mapping preset); errors name the file. settings: retarget settings
    (core.chains.mapping.RetargetSettings fields) over the preset's or auto-map's."""
    path = Path(path).absolute()
    refuse_folder(path, "--robot", "robot URDF", "")
    if not path.is_file():
        raise CommandError(f"{path}: robot URDF not found")
    if mapping_path is not None and not Path(mapping_path).is_file():
        raise CommandError(f"{mapping_path}: mapping preset not found")
    mapping = Mapping.load(mapping_path) if mapping_path is not None else None
    tree = KinematicTree(parse_urdf(path))
    if mapping is not None:
        mapping.check_names(str(Path(mapping_path).absolute()), links=tree.link_names, robot=tree.robot.name)
    return RobotModel(path, tree, mapping, Path(mapping_path).absolute() if mapping_path is not None else None,
                      dict(settings or {}))


def read_clip(path, up: str = "Y") -> SourceMotion:
    """A BVH clip as source motion; other clip types need Blender's importers."""
    path = Path(path).absolute()
    refuse_folder(path)
    suffix = path.suffix.lower()
    if suffix in NEEDS_BLENDER:
        raise CommandError(f"{path}: {suffix} files need Blender: use the extension's command "
                           "(blender -b -c robot_retarget ...)")
    if suffix != ".bvh":
        raise CommandError(f"{path}: unsupported clip type {suffix!r} (use .bvh or .fbx)")
    if not path.is_file():
        raise CommandError(f"{path}: source clip not found")
    return load_bvh(path).to_source_motion(up=up)


def motion_frames(motion: SourceMotion, frames) -> SourceMotion:
    """The clip at some of its frames (a slice or an index array over the first axis)."""
    return dataclasses.replace(motion, heads=motion.heads[frames], tails=motion.tails[frames],
                               root_rotation=motion.root_rotation[frames])


@dataclass
class ClipBake:
    """A clip baked: the retarget result, the mapping used, the keyed samples, the action's name
    and the first baked frame (0-based in the clip)."""

    result: RetargetResult
    mapping: Mapping
    table: BakeTable
    name: str
    start: int = 0


@dataclass
class ClipInput:
    """A clip read for a bake or a gait: the motion, its mapping, the 0-based frames [start, end) to
    use, the contacts to plant there, and the reader's notes (for the report's warnings)."""

    motion: SourceMotion
    mapping: Mapping
    start: int
    end: int
    contacts: object
    notes: list[str]

    @property
    def frames(self) -> SourceMotion:
        return motion_frames(self.motion, slice(self.start, self.end))


def clip_input(source, robot: RobotModel, frames: str | None, contacts: str | None, up: str) -> ClipInput:
    """Read a BVH clip, map it (the robot's preset, else auto-map over its whole motion; the robot's
    settings over either) and read
    `contacts` (auto, off or a file; None: off) for `frames` (START:END, 0-based): auto on the whole
    clip cut to the range, so where a range begins does not move its feet."""
    with warnings.catch_warnings(record=True) as caught:  # the reader's notes go in the report, not to stderr
        warnings.simplefilter("always")
        motion = read_clip(source, up)
        start, end = clip_range(frames, motion.frames)
    mapping = robot.mapping
    if mapping is not None:
        mapping.check_names(str(robot.mapping_path or "mapping preset"), bones=motion.bone_names, source=motion.name)
    if mapping is None:
        spread = automap_frames(0, motion.frames - 1).astype(int)
        with one_blas_thread():
            mapping = auto_map(motion_frames(motion, spread), robot.tree)
    mapping = mapping.with_settings(**robot.settings)
    planted = range_contacts(contacts_option(contacts, motion.frames, start, end, motion.fps), motion, mapping,
                             start, end)
    return ClipInput(motion, mapping, start, end, planted, [str(note.message) for note in caught])


def bake_clip_file(source, robot: RobotModel, frames: str | None = None, contacts: str | None = None,
                   up: str = "Y") -> ClipBake:
    """Read a BVH clip, map it and bake `frames` (START:END, 0-based) with `contacts` (clip_input)."""
    clip = clip_input(source, robot, frames, contacts, up)
    with one_blas_thread():
        result = retarget(clip.frames, robot.tree, clip.mapping, contacts=clip.contacts)
    result.report["warnings"][:0] = clip.notes
    return ClipBake(result, clip.mapping, bake_table(result), f"{robot.name}|{Path(source).stem}", clip.start)


def bake_table(result: RetargetResult) -> BakeTable:
    """The bake CSV's rows: time from 0 s at the clip's rate, root pose, joints."""
    return BakeTable(result.joint_names, np.arange(len(result.q)) / result.fps, result.root_position,
                     result.root_quaternion, result.q)


def bake_report(bake: ClipBake, source, robot: RobotModel, out: Path) -> dict:
    """REPORT.json of `bake`: the retarget report plus the files involved and the action's name."""
    return dict(bake.result.report, source_file=str(Path(source).absolute()), robot_file=str(robot.path),
                out=str(out), action=bake.name)


def export_bake(bake: ClipBake, robot: RobotModel, out: Path, settings: ExportSettings, source,
                generator: str) -> tuple[dict, str]:
    """Resample the bake at the control cycle, check the limits, write `out` atomically.

    Returns REPORT.json of `export` and its summary lines (bake, then export)."""
    limits = JointLimits.from_tree(robot.tree, settings.acceleration_limit, settings.joint_acceleration_limits)
    with one_blas_thread():
        result = prepare_playback(bake.table, limits, settings)
    require_within_limits(result, settings.allow_violations)
    mimic = mimic_joints(robot.tree.robot)
    result.warnings += mimic_limit_warnings(result.track, mimic)
    source = str(Path(source).absolute())
    meta = PlaybackMeta(robot=robot.name, source=source, limits=limits, violations=result.violations,
                        retimed_seconds_added=result.retimed_seconds_added, generator=generator, mimic=mimic)
    paths = write_playback(out, result.track, settings.format, meta, degrees=settings.units == "deg",
                           overwrite=settings.overwrite, free_joint=settings.mujoco_free_joint)
    report = dict(export_report(bake.result.report, result, settings, paths), source_file=source,
                  out=str(out), action=bake.name, robot_file=str(robot.path))
    return report, "\n".join([report_summary(bake.result.report), playback_summary(result, bake.name)])
