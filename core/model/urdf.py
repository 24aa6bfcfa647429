"""URDF reader: links, joints and geometry of a robot as plain numpy data.

Pure Python (standard-library expat + numpy) so it runs headless in tests and
inside Blender alike. Every problem is a URDFError naming the file, the
element and the line, so a user can fix a broken robot description without a
debugger. Inertial, material, transmission and simulator tags are ignored:
retargeting only needs the kinematic tree and something to draw.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

import numpy as np

from .transforms import make_transform, rpy_to_matrix

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
MOVABLE_TYPES = ("revolute", "continuous", "prismatic")
_AXIS_TYPES = ("revolute", "continuous", "prismatic", "planar")
_SHAPES = ("mesh", "box", "cylinder", "sphere")


class URDFError(ValueError):
    """A URDF that cannot be used; the message names file, element and line."""


@dataclass(eq=False)
class Geometry:
    """One visual or collision shape, placed by `origin` in its link frame."""

    kind: str
    origin: np.ndarray = field(default_factory=lambda: np.eye(4))
    filename: str | None = None
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))
    size: np.ndarray | None = None
    radius: float | None = None
    length: float | None = None


@dataclass(eq=False)
class Inertial:
    """A link's mass (kg), centre of mass and rotational inertia (kg m^2) about it, in the
    inertial frame `origin` (placed in the link frame)."""

    mass: float
    origin: np.ndarray = field(default_factory=lambda: np.eye(4))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


@dataclass(eq=False)
class Link:
    name: str
    visuals: list[Geometry] = field(default_factory=list)
    collisions: list[Geometry] = field(default_factory=list)
    inertial: Inertial | None = None


@dataclass
class Mimic:
    """This joint's value = multiplier * value(joint) + offset."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0
    line: int = field(default=0, compare=False)  # the <mimic>'s line in the file (0: not from a file)


@dataclass(eq=False)
class Joint:
    """A URDF joint; `origin` maps the joint frame into the parent link frame."""

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray = field(default_factory=lambda: np.eye(4))
    axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    lower: float | None = None
    upper: float | None = None
    velocity: float | None = None
    effort: float | None = None
    mimic: Mimic | None = None

    @property
    def movable(self) -> bool:
        """True for the one-degree-of-freedom types the retargeter can drive."""
        return self.type in MOVABLE_TYPES


@dataclass(eq=False)
class Robot:
    """A validated kinematic tree. Treat as immutable: lookups are indexed once."""

    name: str
    links: dict[str, Link]
    joints: list[Joint]
    root_link: str
    source_path: Path | None = None
    _by_name: dict[str, Joint] = field(init=False, repr=False, default_factory=dict)
    _by_child: dict[str, Joint] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._by_name = {j.name: j for j in self.joints}
        self._by_child = {j.child: j for j in self.joints}

    @property
    def movable_joints(self) -> list[Joint]:
        """Free movable joints in URDF order; mimic joints are driven, so left out."""
        return [j for j in self.joints if j.movable and j.mimic is None]

    def joint(self, name: str) -> Joint:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"robot {self.name!r} has no joint {name!r}") from None

    def mimic_source(self, name: str) -> tuple[Joint, float, float]:
        """(leader, multiplier, offset) with value(name) = multiplier * value(leader) + offset, a
        mimic of a mimic followed to the joint that is no mimic (the parser refuses circles)."""
        joint = self.joint(name)
        multiplier, offset = 1.0, 0.0
        for _ in range(len(self.joints) + 1):
            if joint.mimic is None:
                return joint, multiplier, offset
            offset += multiplier * joint.mimic.offset
            multiplier *= joint.mimic.multiplier
            joint = self.joint(joint.mimic.joint)
        raise URDFError(f"robot {self.name!r}: mimic joint {name!r} follows a circle of mimic joints")

    def parent_joint(self, link: str) -> Joint | None:
        """The joint whose child is `link`; None for the root link."""
        if link not in self.links:
            raise KeyError(f"robot {self.name!r} has no link {link!r}")
        return self._by_child.get(link)

    def child_joints(self, link: str) -> list[Joint]:
        if link not in self.links:
            raise KeyError(f"robot {self.name!r} has no link {link!r}")
        return [j for j in self.joints if j.parent == link]

    def path(self, base_link: str, tip_link: str) -> list[str]:
        """Link names from base_link down to tip_link, both included."""
        chain = [tip_link]
        while chain[-1] != base_link:
            joint = self.parent_joint(chain[-1])
            if joint is None:
                self.parent_joint(base_link)  # KeyError if base is unknown
                raise URDFError(f"robot {self.name!r}: link {tip_link!r} does not "
                                f"descend from link {base_link!r}")
            chain.append(joint.parent)
        return chain[::-1]


# --------------------------------------------------------------------- XML ---

@dataclass(eq=False)
class _Node:
    """Minimal element with its source line (ElementTree does not keep lines)."""

    tag: str
    attrib: dict[str, str]
    line: int
    children: list[_Node] = field(default_factory=list)

    def find(self, tag: str) -> _Node | None:
        return next((c for c in self.children if c.tag == tag), None)

    def findall(self, tag: str) -> list[_Node]:
        return [c for c in self.children if c.tag == tag]


def _read_xml(data: bytes | str, source: str) -> _Node:
    """Parse with expat so each element remembers the line it started on."""
    parser = expat.ParserCreate()
    stack: list[_Node] = []
    top: list[_Node] = []

    def start(tag: str, attrib: dict[str, str]) -> None:
        node = _Node(tag, attrib, parser.CurrentLineNumber)
        (stack[-1].children if stack else top).append(node)
        stack.append(node)

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda tag: stack.pop()
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise URDFError(f"{source}, line {exc.lineno}: not well-formed XML: "
                        f"{expat.ErrorString(exc.code)}") from None
    return top[0]


def _err(source: str, what: str, line: int | None, msg: str) -> URDFError:
    where = f"{source}, line {line}" if line else source
    return URDFError(f"{where}: {what}: {msg}")


def _floats(node: _Node, attr: str, counts: tuple[int, ...], src: str,
            what: str) -> np.ndarray | None:
    """Attribute as finite floats (None if absent); the error names the attribute."""
    text = node.attrib.get(attr)
    if text is None:
        return None
    try:
        vals = [float(t) for t in text.split()]
    except ValueError:
        vals = []
    if len(vals) not in counts or not all(math.isfinite(v) for v in vals):
        need = "a number" if counts == (1,) else " or ".join(map(str, counts)) + " numbers"
        raise _err(src, what, node.line,
                   f"<{node.tag}> attribute {attr}={text!r} is not {need}")
    return np.array(vals, dtype=float)


def _num(node: _Node, attr: str, src: str, what: str, required: bool = False,
         default: float | None = None) -> float | None:
    vals = _floats(node, attr, (1,), src, what)
    if vals is None:
        if required:
            raise _err(src, what, node.line, f"<{node.tag}> needs attribute {attr}")
        return default
    return float(vals[0])


def _origin(owner: _Node, src: str, what: str) -> np.ndarray:
    """<origin xyz rpy> child of `owner` as a 4x4 transform (identity if absent)."""
    node = owner.find("origin")
    if node is None:
        return np.eye(4)
    xyz = _floats(node, "xyz", (3,), src, what)
    rpy = _floats(node, "rpy", (3,), src, what)
    rot = rpy_to_matrix(rpy) if rpy is not None else np.eye(3)
    return make_transform(rot, xyz if xyz is not None else np.zeros(3))


# ------------------------------------------------------------------- links ---

def _shape(node: _Node, origin: np.ndarray, src: str, what: str) -> Geometry:
    geo = Geometry(kind=node.tag, origin=origin)
    if node.tag == "mesh":
        geo.filename = node.attrib.get("filename")
        if not geo.filename:
            raise _err(src, what, node.line, "<mesh> needs attribute filename")
        scale = _floats(node, "scale", (1, 3), src, what)
        geo.scale = np.ones(3) if scale is None else np.broadcast_to(scale, 3).copy()
    elif node.tag == "box":
        geo.size = _floats(node, "size", (3,), src, what)
        if geo.size is None:
            raise _err(src, what, node.line, "<box> needs attribute size")
    else:
        geo.radius = _num(node, "radius", src, what, required=True)
        if node.tag == "cylinder":
            geo.length = _num(node, "length", src, what, required=True)
    return geo


def _geometries(link: _Node, tag: str, src: str, what: str) -> list[Geometry]:
    """Shapes of all <visual> or <collision> children; unknown shapes are skipped."""
    out = []
    for elem in link.findall(tag):
        geo = elem.find("geometry")
        if geo is None or not geo.children:
            raise _err(src, what, elem.line, f"<{tag}> needs a <geometry> with a shape")
        shape = next((c for c in geo.children if c.tag in _SHAPES), None)
        if shape is not None:  # e.g. <capsule>: not URDF standard, nothing to draw
            out.append(_shape(shape, _origin(elem, src, what), src, what))
    return out


def _link(node: _Node, src: str) -> Link:
    name = node.attrib.get("name")
    if not name:
        raise _err(src, "<link>", node.line, "missing name attribute")
    what = f"link '{name}'"
    return Link(name, _geometries(node, "visual", src, what),
                _geometries(node, "collision", src, what), _inertial(node, src, what))


def _inertial(link: _Node, src: str, what: str) -> Inertial | None:
    """<inertial>: mass, origin and the inertia tensor (ixx ixy ixz iyy iyz izz); None if absent."""
    node = link.find("inertial")
    if node is None:
        return None
    mass_node = node.find("mass")
    if mass_node is None:
        raise _err(src, what, node.line, "<inertial> needs a <mass value=...>")
    mass = _num(mass_node, "value", src, what, required=True)
    if mass < 0:
        raise _err(src, what, mass_node.line, f"<mass> value={mass!r} is negative")
    tensor = np.zeros((3, 3))
    inertia = node.find("inertia")
    if inertia is not None:
        names = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        ixx, ixy, ixz, iyy, iyz, izz = (_num(inertia, n, src, what, default=0.0) for n in names)
        tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return Inertial(float(mass), _origin(node, src, what), tensor)


# ------------------------------------------------------------------ joints ---

def _link_ref(node: _Node, tag: str, src: str, what: str) -> str:
    ref = node.find(tag)
    if ref is None or not ref.attrib.get("link"):
        raise _err(src, what, node.line, f"needs <{tag} link=\"...\"/>")
    return ref.attrib["link"]


def _axis(node: _Node, jtype: str, src: str, what: str) -> np.ndarray:
    """Unit axis; zero only matters for types that move along it."""
    elem = node.find("axis")
    xyz = _floats(elem, "xyz", (3,), src, what) if elem is not None else None
    if xyz is None:
        return np.array([1.0, 0.0, 0.0])
    norm = float(np.linalg.norm(xyz))
    if norm < 1e-12:
        if jtype in _AXIS_TYPES:
            raise _err(src, what, elem.line, "<axis> xyz is zero")
        return np.array([1.0, 0.0, 0.0])
    return xyz / norm


def _limits(node: _Node, jtype: str, src: str, what: str) -> tuple:
    """(lower, upper, velocity, effort); revolute/prismatic must bound position."""
    lim = node.find("limit")
    if lim is None:
        if jtype in ("revolute", "prismatic"):
            raise _err(src, what, node.line, f"{jtype} joint needs <limit lower upper>")
        return None, None, None, None
    velocity = _num(lim, "velocity", src, what)
    effort = _num(lim, "effort", src, what)
    if jtype not in ("revolute", "prismatic"):
        return None, None, velocity, effort
    # The URDF spec defaults a missing bound to 0: such a joint is held there.
    lower = _num(lim, "lower", src, what, default=0.0)
    upper = _num(lim, "upper", src, what, default=0.0)
    if lower > upper:
        raise _err(src, what, lim.line, f"<limit> lower {lower} > upper {upper}")
    return lower, upper, velocity, effort


def _mimic(node: _Node, src: str, what: str) -> Mimic | None:
    elem = node.find("mimic")
    if elem is None:
        return None
    if not elem.attrib.get("joint"):
        raise _err(src, what, elem.line, "<mimic> needs attribute joint")
    return Mimic(elem.attrib["joint"],
                 _num(elem, "multiplier", src, what, default=1.0),
                 _num(elem, "offset", src, what, default=0.0), elem.line)


def _joint(node: _Node, src: str) -> Joint:
    name = node.attrib.get("name")
    if not name:
        raise _err(src, "<joint>", node.line, "missing name attribute")
    what = f"joint '{name}'"
    jtype = node.attrib.get("type")
    if jtype not in JOINT_TYPES:
        raise _err(src, what, node.line,
                   f"type {jtype!r} is not one of {', '.join(JOINT_TYPES)}")
    lower, upper, velocity, effort = _limits(node, jtype, src, what)
    return Joint(name, jtype, _link_ref(node, "parent", src, what),
                 _link_ref(node, "child", src, what), _origin(node, src, what),
                 _axis(node, jtype, src, what), lower, upper, velocity, effort,
                 _mimic(node, src, what))


# -------------------------------------------------------------------- tree ---

def _unique(nodes: list[_Node], kind: str, src: str) -> None:
    seen: dict[str, int] = {}
    for node in nodes:
        name = node.attrib.get("name", "")
        if name in seen:
            raise _err(src, f"{kind} '{name}'", node.line,
                       f"duplicate {kind} name (first defined on line {seen[name]})")
        seen[name] = node.line


def _check_joints(links: dict[str, Link], joints: list[Joint], lines: list[int],
                  src: str) -> None:
    """Each joint joins two known links and each link has at most one parent."""
    parent_of: dict[str, str] = {}
    names = {j.name for j in joints}
    for joint, line in zip(joints, lines):
        what = f"joint '{joint.name}'"
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in links:
                raise _err(src, what, line, f"{role} link '{link}' is not defined")
        if joint.parent == joint.child:
            raise _err(src, what, line, f"link '{joint.child}' is its own parent")
        if joint.child in parent_of:
            raise _err(src, what, line, f"link '{joint.child}' already has parent "
                       f"joint '{parent_of[joint.child]}' (a link may have only one)")
        parent_of[joint.child] = joint.name
        if joint.mimic and (joint.mimic.joint not in names or joint.mimic.joint == joint.name):
            raise _err(src, what, joint.mimic.line or line, f"<mimic> joint '{joint.mimic.joint}' is not "
                       "another joint of this robot")
    _check_mimic_circles(joints, lines, src)


def _check_mimic_circles(joints: list[Joint], lines: list[int], src: str) -> None:
    """Mimic joints that follow each other round: no joint drives them."""
    by_name = {j.name: j for j in joints}
    for joint, line in zip(joints, lines):
        seen = [joint.name]
        lead = joint
        while lead.mimic is not None:
            lead = by_name[lead.mimic.joint]
            if lead.name in seen:
                if lead is joint:  # said once, at the first joint of the circle
                    raise _err(src, f"joint '{joint.name}'", line, "<mimic> joints follow each other in a "
                               f"circle ({' -> '.join(seen + [lead.name])}): no joint drives them")
                break
            seen.append(lead.name)


def _find_root(links: dict[str, Link], joints: list[Joint], lines: dict[str, int],
               src: str) -> str:
    """The single parentless link, after checking every link hangs below it."""
    children = {j.child for j in joints}
    roots = [name for name in links if name not in children]
    if not roots:
        raise _err(src, "<robot>", None, "has no root link (the joints form a cycle)")
    if len(roots) > 1:
        found = ", ".join(f"'{r}'" for r in roots)
        raise _err(src, f"link '{roots[1]}'", lines[roots[1]], "is a second root link "
                   f"(no parent joint); a robot needs exactly one, found {found}")
    reached, todo = {roots[0]}, [roots[0]]
    while todo:
        link = todo.pop()
        for joint in joints:
            if joint.parent == link and joint.child not in reached:
                reached.add(joint.child)
                todo.append(joint.child)
    lost = [name for name in links if name not in reached]
    if lost:
        raise _err(src, f"link '{lost[0]}'", lines[lost[0]],
                   f"not reachable from root '{roots[0]}' (the joints form a cycle)")
    return roots[0]


def _build(top: _Node, src: str, path: Path | None) -> Robot:
    if top.tag != "robot":
        raise _err(src, f"<{top.tag}>", top.line, "root element must be <robot>")
    if not top.attrib.get("name"):
        raise _err(src, "<robot>", top.line, "missing name attribute")
    link_nodes, joint_nodes = top.findall("link"), top.findall("joint")
    if not link_nodes:
        raise _err(src, "<robot>", top.line, "defines no links")
    links = {link.name: link for link in (_link(n, src) for n in link_nodes)}
    _unique(link_nodes, "link", src)
    joints = [_joint(n, src) for n in joint_nodes]
    _unique(joint_nodes, "joint", src)
    _check_joints(links, joints, [n.line for n in joint_nodes], src)
    root = _find_root(links, joints, {n.attrib["name"]: n.line for n in link_nodes}, src)
    return Robot(top.attrib["name"], links, joints, root, path)


def parse_urdf(path: str | os.PathLike) -> Robot:
    """Read and validate a URDF file; URDFError (naming the path) if unusable."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise URDFError(f"{path}: cannot read URDF file: {exc.strerror or exc}") from None
    return _build(_read_xml(data, str(path)), str(path), path.resolve())


def parse_urdf_string(text: str, source: str = "<string>") -> Robot:
    """Validate URDF text; `source` is only used in error messages."""
    return _build(_read_xml(text, source), source, None)
