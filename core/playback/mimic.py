"""URDF mimic joints in playback files: a driven joint written as multiplier x leader + offset.

The motion holds the free joints only (a mimic joint is no variable of the
retarget), but a simulator's model has the driven joint too: MuJoCo's qpos
lists the Panda's second finger joint, and a key without it leaves that
finger at the model's qpos0. So the formats whose joints are a model's
joints get every movable joint in URDF order, mimic ones filled in here.
A ROS JointTrajectory does not list them: ROS derives mimic joints itself
(robot_state_publisher, ros2_control), and a trajectory controller refuses
a joint it does not command.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..model.urdf import Robot
from .sampling import JointLimits, PlaybackError, PlaybackTrack, check_limits, violation_summary

LEFT_OUT = ("ros2-yaml",)  # formats that list the free joints only


@dataclass(frozen=True)
class MimicJoint:
    """A driven joint: value = multiplier * value(leader) + offset, the leader a free joint."""

    name: str
    leader: str
    multiplier: float
    offset: float
    prismatic: bool
    position: int  # its column among the robot's movable joints (URDF order, mimic ones included)
    lower: float = -math.inf  # its own URDF limits (rad|m, /s): the retarget drives the leader's only
    upper: float = math.inf
    velocity: float = math.inf


def mimic_joints(robot: Robot) -> tuple[MimicJoint, ...]:
    """The robot's mimic joints, a mimic of a mimic followed to its free leader (as KinematicTree does)."""
    movable = [j for j in robot.joints if j.movable]
    found = []
    for position, joint in enumerate(movable):
        if joint.mimic is None:
            continue
        lead, multiplier, offset = robot.mimic_source(joint.name)
        if not lead.movable:
            raise PlaybackError(f"{robot.source_path or robot.name}: mimic joint {joint.name!r} follows "
                                f"{lead.type} joint {lead.name!r}, which has no value")
        lower = -math.inf if joint.lower is None else float(joint.lower)
        upper = math.inf if joint.upper is None else float(joint.upper)
        velocity = float(joint.velocity) if joint.velocity else math.inf  # 0: none, as KinematicTree reads it
        found.append(MimicJoint(joint.name, lead.name, multiplier, offset, joint.type == "prismatic", position,
                                lower, upper, velocity))
    return tuple(found)


def with_mimic_joints(track: PlaybackTrack, mimic: tuple[MimicJoint, ...]) -> PlaybackTrack:
    """The track with each mimic joint's column inserted at its URDF place; a track that has them
    already (a file read back and written again) is left as it is, not given them twice."""
    if not mimic or all(m.name in track.joint_names for m in mimic):
        return track
    column = {name: i for i, name in enumerate(track.joint_names)}
    names, prismatic = list(track.joint_names), list(track.is_prismatic())
    values = [track.q[:, i] for i in range(len(names))]
    for joint in sorted(mimic, key=lambda m: m.position):
        if joint.name in column:
            raise PlaybackError(f"mimic joint {joint.name!r}: the motion has a column of it but not of "
                                "every mimic joint of the robot")
        if joint.leader not in column:
            raise PlaybackError(f"mimic joint {joint.name!r} follows {joint.leader!r}, which the motion "
                                f"does not have (joints {names[:3]}...)")
        names.insert(joint.position, joint.name)
        prismatic.insert(joint.position, joint.prismatic)
        values.insert(joint.position, joint.multiplier * track.q[:, column[joint.leader]] + joint.offset)
    return PlaybackTrack(names, track.period_s, track.root_position, track.root_quaternion,
                         np.column_stack(values), np.array(prismatic, dtype=bool))


def with_mimic_limits(limits: JointLimits | None, mimic: tuple[MimicJoint, ...]) -> JointLimits | None:
    """The limits with a row per mimic joint at its URDF place (its own range and velocity, no
    acceleration limit), so a file's `limits` rows name the joints its `joint_names` list."""
    if limits is None or not mimic or all(m.name in limits.joint_names for m in mimic):
        return limits
    rows = list(zip(limits.joint_names, limits.lower, limits.upper, limits.velocity, limits.acceleration,
                    limits.prismatic))
    for m in sorted(mimic, key=lambda m: m.position):
        rows.insert(m.position, (m.name, m.lower, m.upper, m.velocity, math.inf, m.prismatic))
    names, *columns = zip(*rows)
    return JointLimits(list(names), *(np.array(c, dtype=float) for c in columns[:-1]),
                       np.array(columns[-1], dtype=bool))


def mimic_info(mimic: tuple[MimicJoint, ...]) -> list[dict]:
    """The metadata rows: which written joints are driven, and how."""
    return [{"joint": m.name, "leader": m.leader, "multiplier": m.multiplier, "offset": m.offset} for m in mimic]


def mimic_limit_warnings(track: PlaybackTrack, mimic: tuple[MimicJoint, ...]) -> list[str]:
    """Warnings for mimic joints whose written values leave their own URDF limits (position,
    velocity). The retarget, the limit check and retime see the free leader only: a mimic with a
    multiplier (or its own narrower range) can break its limits where the leader keeps to its own."""
    leader = {name: i for i, name in enumerate(track.joint_names)}
    mimic = tuple(m for m in mimic if m.leader in leader)
    if not mimic:
        return []
    q = np.column_stack([m.multiplier * track.q[:, leader[m.leader]] + m.offset for m in mimic])
    inf = np.full(len(mimic), np.inf)
    limits = JointLimits([m.name for m in mimic], np.array([m.lower for m in mimic]),
                         np.array([m.upper for m in mimic]), np.array([m.velocity for m in mimic]), inf,
                         np.array([m.prismatic for m in mimic], dtype=bool))
    found = check_limits(PlaybackTrack(limits.joint_names, track.period_s, track.root_position,
                                       track.root_quaternion, q, limits.prismatic), limits)
    warnings = []
    for m in mimic:
        own = [v for v in found if v.joint == m.name]
        if own:
            rule = f"{m.multiplier:g} x {m.leader!r}" + (f" {m.offset:+g}" if m.offset else "")
            warnings.append(f"mimic joint {m.name!r} (= {rule}) leaves its "
                            f"own limits, which the export does not check or retime ({violation_summary(own)}); "
                            f"written as the URDF's mimic says: limit {m.leader!r} or fix the URDF")
    return warnings
