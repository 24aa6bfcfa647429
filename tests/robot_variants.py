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
from core.model.mesh_paths import resolve_mesh_path
from core.model.urdf import Geometry, Robot, parse_urdf_string


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
        if link.inertial is not None:
            i = link.inertial.inertia
            tensor = " ".join(f'{k}="{v:.12g}"' for k, v in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
                                                                 (i[0, 0], i[0, 1], i[0, 2], i[1, 1], i[1, 2], i[2, 2])))
            lines.append(f'    <inertial>{_origin(link.inertial.origin)}<mass value="{link.inertial.mass:.12g}"/>'
                         f"<inertia {tensor}/></inertial>")
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


# ------------------------------------------------------------- synthetic humanoids ---

def humanoid(root: str = "pelvis", arms: str = "down", arm_end: str = "hand", leg_end: str = "foot",
             waist: int = 1, head: bool = True, stacked: float = 0.02) -> Robot:
    """A simple humanoid URDF of another shape than the bundled robots.

    root: "pelvis" or "torso" (the legs then hang from the waist joints); arms: "down" or
    "sideways" in the zero pose; arm_end: "elbow" (the forearm is the last link, no wrist),
    "hand" (a fixed hand link after the wrist) or "wrist" (ends at a wrist link);
    leg_end: "ankle" (the leg ends at an ankle pitch link) or "foot" (a foot link with a box
    sole); waist: 0-3 joints; stacked: offset between a hip's or shoulder's stacked joints.
    """
    links: list[str] = []
    joints: list[str] = []

    def link(name, box=None):
        geo = ""
        if box is not None:
            size, xyz = box
            geo = (f'<collision><origin xyz="{xyz}"/><geometry><box size="{size}"/></geometry></collision>')
        links.append(f'<link name="{name}">{geo}</link>')

    def joint(name, parent, child, xyz, axis="0 1 0", lower=-2.5, upper=2.5, kind="revolute", rpy="0 0 0"):
        limit = f'<limit lower="{lower}" upper="{upper}" effort="50" velocity="20"/>' if kind != "fixed" else ""
        joints.append(f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
                      f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{limit}</joint>')

    link("pelvis")
    link("torso")
    chain = "pelvis"
    for k, axis in enumerate(["0 0 1", "1 0 0", "0 1 0"][:waist]):
        name = f"waist_{k}"
        link(name)
        joint(f"{name}_joint", chain, name, "0 0 0.05" if k == 0 else "0 0 0", axis, -0.8, 0.8)
        chain = name
    joint("torso_mount", chain, "torso", f"0 0 {0.3 if waist else 0.35}", kind="fixed")
    if head:
        link("head")
        joint("neck_joint", "torso", "head", "0 0 0.25", "0 0 1", -1.0, 1.0)
    for side, sign in (("left", 1), ("right", -1)):
        # leg: hip pitch/roll/yaw stacked, knee, ankle pitch (+ foot)
        prev = "pelvis"
        for k, (part, axis) in enumerate((("hip_pitch", "0 1 0"), ("hip_roll", "1 0 0"), ("hip_yaw", "0 0 1"))):
            name = f"{side}_{part}"
            link(name)
            xyz = f"0 {sign * 0.09} -0.05" if k == 0 else f"0 0 {-stacked}"
            lo, hi = (-0.5, 2.0) if part == "hip_roll" and side == "left" else (-2.0, 0.5) if part == "hip_roll" else (-2.5, 2.5)
            joint(f"{name}_joint", prev, name, xyz, axis, lo, hi)
            prev = name
        link(f"{side}_knee")
        joint(f"{side}_knee_joint", prev, f"{side}_knee", "0 0 -0.4", "0 1 0", -0.1, 2.6)
        link(f"{side}_ankle_pitch", None if leg_end == "foot" else ("0.2 0.08 0.04", "0.05 0 -0.05"))
        joint(f"{side}_ankle_pitch_joint", f"{side}_knee", f"{side}_ankle_pitch", "0 0 -0.4", "0 1 0", -0.9, 0.6)
        if leg_end == "foot":
            link(f"{side}_foot", ("0.2 0.08 0.04", "0.05 0 -0.03"))
            joint(f"{side}_ankle_roll_joint", f"{side}_ankle_pitch", f"{side}_foot", "0 0 -0.02", "1 0 0", -0.3, 0.3)
        # arm: shoulder pitch/roll/yaw stacked, elbow (+ wrist, + hand)
        prev = "torso"
        for k, (part, axis) in enumerate((("shoulder_pitch", "0 1 0"), ("shoulder_roll", "1 0 0"),
                                          ("shoulder_yaw", "0 0 1"))):
            name = f"{side}_{part}"
            link(name)
            xyz = f"0 {sign * 0.2} 0.2" if k == 0 else f"0 {sign * stacked} 0"
            rpy = f"{sign * 1.5707963} 0 0" if part == "shoulder_roll" and arms == "sideways" else "0 0 0"
            joint(f"{name}_joint", prev, name, xyz, axis, -3.0, 3.0, rpy=rpy)
            prev = name
        link(f"{side}_elbow")
        joint(f"{side}_elbow_joint", prev, f"{side}_elbow", "0 0 -0.25", "0 1 0", -2.5, 0.1)
        if arm_end in ("wrist", "hand"):
            link(f"{side}_wrist")
            joint(f"{side}_wrist_joint", f"{side}_elbow", f"{side}_wrist", "0 0 -0.22", "0 0 1", -1.5, 1.5)
        if arm_end == "hand":
            link(f"{side}_hand", ("0.03 0.08 0.1", "0 0 -0.05"))
            joint(f"{side}_hand_mount", f"{side}_wrist", f"{side}_hand", "0 0 -0.03", kind="fixed")
        elif arm_end == "elbow":
            link(f"{side}_forearm_end", ("0.03 0.03 0.03", "0 0 0"))
            joint(f"{side}_forearm_mount", f"{side}_elbow", f"{side}_forearm_end", "0 0 -0.22", kind="fixed")
    text = '<?xml version="1.0"?>\n<robot name="humanoid">\n' + "\n".join(links + joints) + "\n</robot>\n"
    robot = parse_urdf_string(text, "humanoid")
    return rooted_at(robot, "torso") if root == "torso" else robot


# ------------------------------------------- third sweep: other descriptions of G1 ---

def _placed(g: Geometry, t: np.ndarray) -> Geometry:
    return dataclasses.replace(g, origin=t @ g.origin)


def _merged_inertial(a, b, t: np.ndarray):
    """a and b (b placed by t in a's frame) as one body: mass, centre of mass, inertia about it."""
    if b is None or b.mass <= 0:
        return a
    if a is None or a.mass <= 0:
        return dataclasses.replace(b, origin=t @ b.origin)
    parts = [(a.mass, a.origin, a.inertia), (b.mass, t @ b.origin, b.inertia)]
    mass = a.mass + b.mass
    com = sum(m * o[:3, 3] for m, o, _ in parts) / mass
    inertia = np.zeros((3, 3))
    for m, o, i in parts:
        d = o[:3, 3] - com
        inertia += o[:3, :3] @ i @ o[:3, :3].T + m * (d @ d * np.eye(3) - np.outer(d, d))
    origin = np.eye(4)
    origin[:3, 3] = com
    return dataclasses.replace(a, mass=mass, origin=origin, inertia=inertia)


def fixed_merged(robot: Robot) -> Robot:
    """Every fixed joint collapsed: its child's shapes and mass join the parent link, the
    child's own joints hang from the parent (URDF exporters that "merge fixed links")."""
    links = {n: dataclasses.replace(link, visuals=list(link.visuals), collisions=list(link.collisions))
             for n, link in robot.links.items()}
    joints = list(robot.joints)
    while True:
        fixed = next((j for j in joints if j.type == "fixed" and j.parent in links), None)
        if fixed is None:
            break
        parent, child, t = links[fixed.parent], links.pop(fixed.child), fixed.origin
        parent.visuals += [_placed(g, t) for g in child.visuals]
        parent.collisions += [_placed(g, t) for g in child.collisions]
        parent.inertial = _merged_inertial(parent.inertial, child.inertial, t)
        joints = [dataclasses.replace(j, parent=fixed.parent, origin=t @ j.origin) if j.parent == fixed.child else j
                  for j in joints if j is not fixed]
    return Robot(robot.name, links, joints, robot.root_link, robot.source_path)


def with_frames(robot: Robot, frames: dict[str, tuple[str, np.ndarray]], inside: dict[str, np.ndarray]) -> Robot:
    """Extra fixed frames: leaves `frames` (name -> (parent link, origin)), like an IMU or a
    camera, and frames `inside` a chain (joint name -> origin): the joint then hangs from a new
    fixed link placed there on its parent, its own origin re-expressed so nothing moves."""
    from core.model.transforms import invert_transform
    from core.model.urdf import Joint, Link

    links, joints = dict(robot.links), []
    for name, (parent, origin) in frames.items():
        links[name] = Link(name)
        joints.append(Joint(f"{name}_joint", "fixed", parent, name, np.asarray(origin, float)))
    for j in robot.joints:
        if j.name in inside:
            frame = f"{j.name}_frame"
            links[frame] = Link(frame)
            joints.append(Joint(f"{frame}_joint", "fixed", j.parent, frame, inside[j.name]))
            j = dataclasses.replace(j, parent=frame, origin=invert_transform(inside[j.name]) @ j.origin)
        joints.append(j)
    return Robot(robot.name, links, joints, robot.root_link, robot.source_path)


def retyped(robot: Robot, types: dict[str, str]) -> Robot:
    """Joints of another type ("continuous": the same axis without limits)."""
    joints = [dataclasses.replace(j, type=types[j.name], lower=None, upper=None) if j.name in types else j
              for j in robot.joints]
    return Robot(robot.name, robot.links, joints, robot.root_link, robot.source_path)


def slide_inserted(robot: Robot, joint: str, travel: float) -> Robot:
    """A prismatic joint of +-`travel` metres (along the child's z) inserted just after `joint`:
    a telescopic segment, zero where the original stood."""
    from core.model.urdf import Joint, Link

    j = robot.joint(joint)
    slide = f"{j.child}_slide"
    links = dict(robot.links)
    links[slide] = Link(slide)
    joints = []
    for k in robot.joints:
        if k.parent == j.child:
            k = dataclasses.replace(k, parent=slide)
        joints.append(k)
    joints.append(Joint(f"{slide}_joint", "prismatic", j.child, slide, np.eye(4), np.array([0.0, 0.0, 1.0]),
                        -travel, travel, 0.5, 100.0))
    return Robot(robot.name, links, joints, robot.root_link, robot.source_path)


def mimicking(robot: Robot, follower: str, leader: str, multiplier: float = 1.0) -> Robot:
    from core.model.urdf import Mimic

    joints = [dataclasses.replace(j, mimic=Mimic(leader, multiplier, 0.0)) if j.name == follower else j
              for j in robot.joints]
    return Robot(robot.name, robot.links, joints, robot.root_link, robot.source_path)


def random_root_poses(rng: np.random.Generator, frames: int) -> np.ndarray:
    """Root poses (F, 4, 4) turned about random axes by up to half a turn either way and placed at
    normally distributed points (metres): a robot's links checked away from the world's origin."""
    root = np.tile(np.eye(4), (frames, 1, 1))
    axis = rng.normal(size=(frames, 3))
    root[:, :3, :3] = axis_angle_to_matrix(axis / np.linalg.norm(axis, axis=1, keepdims=True),
                                           rng.uniform(-np.pi, np.pi, frames))
    root[:, :3, 3] = rng.normal(size=(frames, 3))
    return root


# ------------------------------------------- session 13: G1 described at other sizes and names ---

def _scaled_geometry(g: Geometry, s: float) -> Geometry:
    origin = g.origin.copy()
    origin[:3, 3] *= s
    return dataclasses.replace(g, origin=origin, scale=g.scale * s if g.kind == "mesh" else g.scale,
                               size=None if g.size is None else g.size * s,
                               radius=None if g.radius is None else g.radius * s,
                               length=None if g.length is None else g.length * s)


def scaled_robot(robot: Robot, s: float) -> Robot:
    """The robot `s` times as large, of the same density: lengths (joint and shape origins, shapes,
    prismatic limits) times s, masses times s^3, inertia tensors times s^5. Angles and speeds stay."""
    from core.model.urdf import Link

    links = {}
    for name, link in robot.links.items():
        inertial = link.inertial
        if inertial is not None:
            origin = inertial.origin.copy()
            origin[:3, 3] *= s
            inertial = dataclasses.replace(inertial, mass=inertial.mass * s ** 3, origin=origin,
                                           inertia=inertial.inertia * s ** 5)
        links[name] = Link(name, [_scaled_geometry(g, s) for g in link.visuals],
                           [_scaled_geometry(g, s) for g in link.collisions], inertial)
    joints = []
    for j in robot.joints:
        origin = j.origin.copy()
        origin[:3, 3] *= s
        lengths = j.type == "prismatic"
        joints.append(dataclasses.replace(j, origin=origin,
                                          lower=j.lower * s if lengths and j.lower is not None else j.lower,
                                          upper=j.upper * s if lengths and j.upper is not None else j.upper))
    return Robot(robot.name, links, joints, robot.root_link, robot.source_path)


def renamed_robot(robot: Robot, rename) -> Robot:
    """Every link and joint renamed by `rename` (old name -> new name), e.g. side words dropped for
    'L_'/'R_' prefixes or plain numbers: only the URDF's names change."""
    from core.model.urdf import Link, Mimic

    links = {rename(n): Link(rename(n), link.visuals, link.collisions, link.inertial)
             for n, link in robot.links.items()}
    joints = [dataclasses.replace(j, name=rename(j.name), parent=rename(j.parent), child=rename(j.child),
                                  mimic=None if j.mimic is None else Mimic(rename(j.mimic.joint), j.mimic.multiplier,
                                                                           j.mimic.offset))
              for j in robot.joints]
    return Robot(robot.name, links, joints, rename(robot.root_link), robot.source_path)


def sided_prefixes(name: str) -> str:
    """'left_knee_joint' -> 'L_knee_joint', 'right_hip_roll_link' -> 'R_hip_roll_link': no side words."""
    for word, letter in (("left_", "L_"), ("right_", "R_")):
        if name.startswith(word):
            return letter + name[len(word):]
    return name


def numbered(robot: Robot) -> Robot:
    """Links named 'link0'..'linkN' and joints 'joint0'..'jointM' in the URDF's order: no name says
    what or which side a part is."""
    links = {n: f"link{k}" for k, n in enumerate(robot.links)}
    joints = {j.name: f"joint{k}" for k, j in enumerate(robot.joints)}
    return renamed_robot(robot, lambda n: links.get(n) or joints[n])


def reordered(robot: Robot, seed: int = 0) -> Robot:
    """The same robot with its links and joints listed in a shuffled order (a URDF written by
    another exporter): joint order decides nothing about the robot."""
    rng = np.random.default_rng(seed)
    names = list(robot.links)
    links = {names[k]: robot.links[names[k]] for k in rng.permutation(len(names))}
    joints = [robot.joints[k] for k in rng.permutation(len(robot.joints))]
    return Robot(robot.name, links, joints, robot.root_link, robot.source_path)


def frames_turned(robot: Robot, turns: dict[str, np.ndarray]) -> Robot:
    """The same robot with the frames of the links in `turns` (name -> 3x3) turned: the joint into
    such a link is placed turned (its axis re-expressed), and everything the link holds (shapes,
    inertial, child joints) is re-expressed in the turned frame, so no body moves. A foot whose
    frame's x points sideways, a pelvis frame facing another way (exporters choose freely)."""
    from core.model.urdf import Link

    def turn(name: str) -> np.ndarray:
        t = np.eye(4)
        t[:3, :3] = np.asarray(turns.get(name, np.eye(3)), float)
        return t

    back = {name: np.linalg.inv(turn(name)) for name in robot.links}
    links = {}
    for name, link in robot.links.items():
        inertial = link.inertial
        if inertial is not None:
            inertial = dataclasses.replace(inertial, origin=back[name] @ inertial.origin)
        links[name] = Link(name, [_placed(g, back[name]) for g in link.visuals],
                           [_placed(g, back[name]) for g in link.collisions], inertial)
    joints = [dataclasses.replace(j, origin=back[j.parent] @ j.origin @ turn(j.child),
                                  axis=turn(j.child)[:3, :3].T @ np.asarray(j.axis, float))
              for j in robot.joints]
    return Robot(robot.name, links, joints, robot.root_link, robot.source_path)


def massless(robot: Robot) -> Robot:
    """The robot without any <inertial> (a URDF written for kinematics only)."""
    links = {n: dataclasses.replace(link, inertial=None) for n, link in robot.links.items()}
    return Robot(robot.name, links, robot.joints, robot.root_link, robot.source_path)


def sped(robot: Robot, speeds: dict[str, float]) -> Robot:
    """Joints whose names end in a key of `speeds` turned at most that fast (rad/s): the same
    legs made slower, as another robot's are (Romeo's hip yaw 0.32 rad/s, hip pitch 2.09)."""
    joints = [dataclasses.replace(j, velocity=next((v for k, v in speeds.items() if j.name.endswith(k)), j.velocity))
              for j in robot.joints]
    return Robot(robot.name, robot.links, joints, robot.root_link, robot.source_path)
