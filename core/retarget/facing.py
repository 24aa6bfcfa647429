"""Where a legged robot faces, read from its body, and the robot as every stage solves it.

REP 103 puts +x forward in a robot's base, but not every URDF follows it: the G1 whose pelvis
frame is turned 90 degrees about the vertical faces +y. Auto-map's sides and toes, planting's
split of a foot's turn into heading and tilt, and the gait's waist all read the root's x as
forward, so such a robot baked another motion (joints up to 1.3 rad apart). The forward is
found from the body instead (across the hip line, toward the toes: no names, so a names-free
robot works too), once per robot, and the robot is hung from a root frame turned to face it
(core.model.reroot); the bake and the gait give joints and the root pose back in the URDF's
own root frame. A URDF written Y-up (example-robot-data's human.urdf) is first stood up the same
way (core.retarget.body_parts.upright_turn: the legs hang, the shoulders rise above the hips).
"""
from __future__ import annotations

import numpy as np

from ..feet.geometry import body_points
from ..model.kinematics import KinematicTree
from ..model.reroot import Rerooted, hung_from
from .body_parts import BodyParts, Skeleton, find_body_parts, robot_skeleton, upright_turn

# A turn smaller than this is none: a URDF facing +x keeps its own root frame, to the bit.
FACING_TOL_RAD = 1e-9
HIP_GAP_M = 0.01  # legs whose corresponding joints are closer across than this do not give the hip line
TOE_SIDE_M = 0.005  # the feet's middle must be this far ahead of the ankles to say which way is forward


def body_forward(tree: KinematicTree, sk: Skeleton, parts: BodyParts) -> np.ndarray | None:
    """The horizontal unit direction (3,) the robot faces in its root frame, zero pose: across its
    hip line (the legs' first joints at least HIP_GAP_M apart), toward the side the feet reach
    past the ankles; None without two legs or a hip line. Feet that say nothing (no geometry, or
    as long behind as ahead) keep the side of the root's +x."""
    if len(parts.legs) != 2:
        return None
    across = None
    for a, b in zip(*parts.legs):
        gap = (sk.points[a] - sk.points[b]) * [1.0, 1.0, 0.0]
        if np.linalg.norm(gap) > HIP_GAP_M:
            across = gap
            break
    if across is None:
        return None
    forward = np.array([-across[1], across[0], 0.0]) / np.linalg.norm(across)
    ahead = sum(_toe_side(tree, leg, forward) for leg in parts.legs)
    sign = np.sign(ahead) if abs(ahead) > TOE_SIDE_M else (1.0 if forward[0] >= 0.0 else -1.0)
    return sign * forward


def _toe_side(tree: KinematicTree, leg: list[int], forward: np.ndarray) -> float:
    """How far (m) the middle of the foot's extent along `forward` lies ahead of its ankle (the
    leg's last jointed link's origin), in the zero pose."""
    moving = [n for n in leg if tree.qindex[n] >= 0]
    if not moving:
        return 0.0
    ankle = moving[-1]
    zero = tree.zero_pose()[ankle]
    body = body_points(tree, ankle)
    along = (body.points @ zero[:3, :3].T) @ forward  # relative to the ankle's origin
    return 0.5 * float(along.max() + along.min())


def facing_turn(tree: KinematicTree, sk: Skeleton | None = None, parts: BodyParts | None = None) -> np.ndarray | None:
    """The turn (3, 3) about the vertical whose x is where the robot faces in `tree`'s root frame
    (body_forward); None when it is +x within FACING_TOL_RAD or the body does not say."""
    if sk is None or parts is None:
        sk = robot_skeleton(tree)
        parts = find_body_parts(sk)
    forward = body_forward(tree, sk, parts)
    if forward is None:
        return None
    angle = float(np.arctan2(forward[1], forward[0]))
    if abs(angle) <= FACING_TOL_RAD:
        return None
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def solved_robot(tree: KinematicTree, link: str) -> tuple[KinematicTree, Rerooted | None]:
    """The robot as the bake, the gait and the stream solve it: hung from `link` (the mapping's
    robot_root, its pelvis; core.model.reroot.hung_from) with its root frame turned to face where
    the robot does (facing_turn, found once per robot); and the re-rooting (None: `tree` itself).
    An unknown or empty `link` leaves `tree` as it is."""
    if not link or link not in tree.robot.links:
        return tree, None
    hung, rerooted = hung_from(tree, link)
    cache = tree.__dict__.setdefault("_facing", {})
    if link not in cache:
        cache[link] = standing_turn(tree, hung, link)
    turn = cache[link]
    return (hung, rerooted) if turn is None else hung_from(tree, link, turn)


def up_note(tree: KinematicTree, link: str) -> str | None:
    """What was assumed when the robot does not stand along +z of its URDF root's frame or of
    `link`'s (a URDF written Y-up), in words for the mapping's notes and the report; else None."""
    solved_robot(tree, link)
    for frame, turn in ((tree.robot.root_link, upright_turn(tree)),
                        (link, tree.__dict__.get("_facing", {}).get(link))):
        if turn is not None and abs(turn[2, 2] - 1.0) > FACING_TOL_RAD:
            k = int(np.argmax(np.abs(turn[:, 2])))
            up = ("+" if turn[k, 2] > 0 else "-") + "xyz"[k]
            return (f"the robot stands along {up} of {frame}'s frame, not +z (its legs hang the other way, "
                    f"its shoulders above its hips): read and baked standing that way up")
    return None


def standing_turn(tree: KinematicTree, hung: KinematicTree, link: str) -> np.ndarray | None:
    """The turn (3, 3) of `hung`'s root frame (`tree` hung from `link`) that stands the robot up
    (its z the body's up: upright_turn) and faces it forward (its x: facing_turn); None for none."""
    up = upright_turn(hung)
    if up is None:
        return facing_turn(hung)
    turn = facing_turn(hung_from(tree, link, up)[0])
    return up if turn is None else up @ turn
