"""What bone and link names say: side, body part, and bones that are not part of the body.

Names are evidence, not a list: a name is split into words (prefixes such as
`mixamorig:` and `Bip01`, separators, camelCase, `.L`/`_l` suffixes), and the
words are looked up. This reads CMU/BVH (`LeftUpLeg`, `LHipJoint`), Mixamo,
Rigify (`DEF-thigh.L`), Unreal (`thigh_l`), SMPL (`L_Hip`), 3ds Max Biped
(`Bip01 L Thigh`) and simulation characters (`left_hip`) alike. Geometry and
motion decide; names settle what geometry leaves open and flag what looks wrong.
"""
from __future__ import annotations

import re

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_PREFIX = re.compile(r"^(mixamorig\d*|bip\d*|def|org|mch|b|bn|jnt|j|bone)$", re.I)

LEFT, RIGHT = {"l", "left", "lft", "lf"}, {"r", "right", "rgt", "rt"}
ROLE_WORDS = {
    "leg": {"leg", "upleg", "thigh", "hip", "calf", "shin", "knee", "ankle", "foot", "toe", "toes", "ball",
            "lowerleg", "upperleg", "heel"},
    "arm": {"arm", "upperarm", "forearm", "lowerarm", "elbow", "wrist", "hand", "shoulder", "clavicle", "collar",
            "finger", "fingers", "thumb", "index", "middle", "ring", "pinky", "palm"},
    "head": {"head", "neck", "lowerneck", "upperneck", "skull", "jaw", "eye", "headtop"},
    "spine": {"spine", "chest", "abdomen", "pelvis", "hips", "back", "lowerback", "torso", "waist", "belly"},
}
# Bones that ride along but are not the body: IK/FK targets and poles, props, twist and
# helpers, rig mechanics (a robot's roll joint is no helper). They are never a limb's end when the body offers one.
AUXILIARY = {"ik", "fk", "target", "pole", "prop", "weapon", "sword", "gun", "shield", "twist", "ctrl",
             "control", "helper", "mch", "org", "socket", "attach", "attachment", "dummy", "null", "locator",
             "marker", "camera", "light"}


def words(name: str, prefixes: bool = False) -> list[str]:
    """Lower-case words of a name; prefixes such as `mixamorig:` and `DEF-` dropped unless asked for."""
    parts = [w for chunk in re.split(r"[^A-Za-z0-9]+", name) for w in _WORD.findall(chunk)]
    while not prefixes and len(parts) > 1 and _PREFIX.match(parts[0]):
        parts = parts[1:]
    return [p.lower() for p in parts if not p.isdigit()]


def _glued_side(name: str) -> str:
    """A side letter glued to a body word: CMU `lhand`, `rfingers`, `LThumb`."""
    low = name.lower()
    for side, letter in (("left", "l"), ("right", "r")):
        rest = low.split(":")[-1]
        if rest.startswith(letter) and any(rest[1:].startswith(w) for ws in ROLE_WORDS.values() for w in ws):
            return side
    return ""


def side(name: str) -> str:
    """"left", "right" or "" when the name does not say (or says both)."""
    ws = set(words(name))
    left, right = bool(ws & LEFT), bool(ws & RIGHT)
    if left != right:
        return "left" if left else "right"
    return "" if left else _glued_side(name)


def role(name: str) -> str:
    """The body part a name points at ("leg", "arm", "head", "spine"), or ""."""
    ws = set(words(name))
    if auxiliary(name):
        return ""
    hits = [r for r, vocab in ROLE_WORDS.items() if ws & vocab]
    if "leg" in hits and "arm" in hits:  # "ForeArm" is an arm, "UpLeg" a leg: the body word wins
        hits = [r for r in hits if r not in ("leg", "arm")] + (["arm"] if ws & {"arm", "forearm", "upperarm"} else ["leg"])
    return hits[0] if len(hits) == 1 else ""


def continues(child: str, parent: str) -> bool:
    """The child's name says it is the same bone cut in two: Rigify's DEF-thigh.L.001 after
    DEF-thigh.L, or a twist segment."""
    def base(name: str) -> str:
        return re.sub(r"([._-]\d+)+$", "", re.sub(r"([._-]\d+)(?=[._-][lr]$)", "", name, flags=re.I)).lower()
    return base(child) == base(parent) or "twist" in words(child)


def auxiliary(name: str) -> bool:
    """A bone that is not part of the body (an IK target, a prop, a twist helper, Rigify's ORG-/MCH-)."""
    return bool(set(words(name, prefixes=True)) & AUXILIARY)


END_WORDS = {"end", "nub"}  # Blender's FBX leaf bones (Foot_end), Mixamo's (HeadTop_End), 3ds Max's (Finger0Nub)


def end_marker(name: str) -> bool:
    """Named as a bone that only marks where its parent ends."""
    ws = words(name)
    return bool(ws) and ws[-1] in END_WORDS


def majority_role(names: list[str]) -> tuple[str, float]:
    """The role most of `names` point at, and the share of the names that say anything that do."""
    roles = [r for r in (role(n) for n in names) if r]
    if not roles:
        return "", 0.0
    best = max(set(roles), key=roles.count)
    return best, roles.count(best) / len(roles)


_RIG_PREFIX = re.compile(r"^(ORG|MCH|DEF|CTRL|CTL)[-_.]", re.I)


def deform_skeleton(names: list[str], parents: list[int], deform: list[bool]) -> tuple[list[int], list[int]] | None:
    """(bones kept, their parents as positions in the kept list) when a rig's deforming bones are
    the body and the rest is rig machinery (Rigify: DEF- bones, driven by ORG-, MCH- and
    controls); None when every bone deforms or too few do to be a body.

    A kept bone hangs from its nearest deforming ancestor, or from the deforming bone its
    nearest mechanism ancestor stands for (Rigify's ORG-spine -> DEF-spine): Rigify parents
    DEF-thigh.L to ORG-spine, not to a deforming bone.
    """
    kept = [i for i, d in enumerate(deform) if d]
    if len(kept) == len(names) or len(kept) < 8:
        return None
    position = {i: k for k, i in enumerate(kept)}
    by_base = {}
    for i in kept:
        by_base.setdefault(_RIG_PREFIX.sub("", names[i]), i)
    out = []
    for i in kept:
        parent, a = -1, parents[i]
        while a >= 0:
            stand_in = by_base.get(_RIG_PREFIX.sub("", names[a]))
            if deform[a] and a != i:
                parent = position[a]
                break
            if stand_in is not None and stand_in != i and not _descends(parents, stand_in, i):
                parent = position[stand_in]
                break
            a = parents[a]
        out.append(parent)
    return _parents_first(kept, out)


def _parents_first(kept: list[int], parents: list[int]) -> tuple[list[int], list[int]]:
    """The same forest with every parent listed before its children (a cycle is cut at its first
    bone, which becomes a root)."""
    order, placed, state = [], set(), {}
    def visit(k: int) -> None:
        if k in placed:
            return
        state[k] = "open"
        p = parents[k]
        if p >= 0 and state.get(p) == "open":
            parents[k] = -1
        elif p >= 0:
            visit(p)
        placed.add(k)
        state[k] = "done"
        order.append(k)
    for k in range(len(kept)):
        visit(k)
    new = {k: n for n, k in enumerate(order)}
    return [kept[k] for k in order], [new[parents[k]] if parents[k] >= 0 else -1 for k in order]


def _descends(parents: list[int], node: int, ancestor: int) -> bool:
    while node >= 0:
        if node == ancestor:
            return True
        node = parents[node]
    return False
