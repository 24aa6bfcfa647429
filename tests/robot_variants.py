"""Other URDFs of the same robot: re-rooted at another link, or with another zero pose.

Invariance tests bake a clip onto each variant and require the same motion in
the world as on the original. Variants are written as URDF text and parsed back,
so the reader is part of what is tested; meshes are referenced by absolute path.
"""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from core.model.reroot import reroot
from core.model.transforms import axis_angle_to_matrix
from core.model.urdf import Geometry, Robot, resolve_mesh_path


def _origin(t: np.ndarray) -> str:
    xyz = " ".join(f"{v:.9g}" for v in t[:3, 3])
    with warnings.catch_warnings():  # at +-90 degrees of pitch scipy says so; the matrix still round-trips
        warnings.simplefilter("ignore", UserWarning)
        rpy = " ".join(f"{v:.12g}" for v in Rotation.from_matrix(t[:3, :3]).as_euler("xyz"))
    return f'<origin xyz="{xyz}" rpy="{rpy}"/>'


def _geometry(g: Geometry, robot: Robot) -> str:
    if g.kind == "mesh":
        path = resolve_mesh_path(g.filename, robot.source_path)
        scale = " ".join(f"{v:.9g}" for v in g.scale)
        return f'<mesh filename="{path or g.filename}" scale="{scale}"/>'
    if g.kind == "box":
        return f'<box size="{" ".join(f"{v:.9g}" for v in g.size)}"/>'
    if g.kind == "sphere":
        return f'<sphere radius="{g.radius:.9g}"/>'
    return f'<cylinder radius="{g.radius:.9g}" length="{g.length:.9g}"/>'


def write_urdf(robot: Robot, path: Path) -> Path:
    lines = ['<?xml version="1.0"?>', f'<robot name="{robot.name}">']
    for name, link in robot.links.items():
        lines.append(f'  <link name="{name}">')
        for tag, shapes in (("visual", link.visuals), ("collision", link.collisions)):
            for g in shapes:
                lines.append(f"    <{tag}>{_origin(g.origin)}<geometry>{_geometry(g, robot)}</geometry></{tag}>")
        lines.append("  </link>")
    for j in robot.joints:
        lines.append(f'  <joint name="{j.name}" type="{j.type}">')
        lines.append(f'    <parent link="{j.parent}"/><child link="{j.child}"/>{_origin(j.origin)}')
        lines.append(f'    <axis xyz="{" ".join(f"{v:.12g}" for v in j.axis)}"/>')
        if j.type != "fixed":
            limits = {"lower": j.lower, "upper": j.upper, "velocity": j.velocity, "effort": j.effort}
            attrs = " ".join(f'{k}="{v:.12g}"' for k, v in limits.items() if v is not None)
            lines.append(f"    <limit {attrs}/>")
        if j.mimic is not None:
            lines.append(f'    <mimic joint="{j.mimic.joint}" multiplier="{j.mimic.multiplier}" offset="{j.mimic.offset}"/>')
        lines.append("  </joint>")
    lines.append("</robot>")
    path.write_text("\n".join(lines) + "\n")
    return path


def rooted_at(robot: Robot, link: str) -> Robot:
    """The same robot with its URDF rooted at `link` (legs hanging from the waist when the torso)."""
    return reroot(robot, link).robot


def zero_shifted(robot: Robot, shifts: dict[str, float]) -> Robot:
    """Joints whose zero is turned by `shifts` (radians about their own axis): the child side's
    zero pose moves, limits shift to match, so value q on the original is q - shift here."""
    joints = []
    for j in robot.joints:
        if j.name in shifts:
            s = shifts[j.name]
            turn = np.eye(4)
            turn[:3, :3] = axis_angle_to_matrix(np.asarray(j.axis, float), s)
            j = dataclasses.replace(j, origin=j.origin @ turn,
                                    lower=None if j.lower is None else j.lower - s,
                                    upper=None if j.upper is None else j.upper - s)
        joints.append(j)
    return Robot(robot.name, robot.links, joints, robot.root_link, robot.source_path)
