"""The mechanism's side of waypoint orientation: how well a robot arm holds a pose.

At a via position the effector can be turned many ways; some leave the arm
near a singularity (little manipulability) or holding its links far out
against gravity. This module holds the chain (base link to tip link, with
the URDF's link masses), its kinematics, a batched damped-least-squares IK
inside the joint limits, and the objectives:

- "manipulability": Yoshikawa's measure sqrt(det(J J^T)) of the 6 x n
  geometric Jacobian J at the tip, larger is better;
- "torque" (also "gravity"): the sum of squared gravity torques over the
  chain's joints, from the URDF <inertial> masses and centres of mass,
  smaller is better.

Which candidate orientation wins at each via point is path_optimum's
choice; the lookup table over the workspace is table's. numpy only;
positions in metres in the robot's root-link frame, angles in radians,
batch first.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from xml.etree import ElementTree

import numpy as np

from ..model.kinematics import FIXED, REVOLUTE, KinematicTree
from ..model.transforms import axis_angle_to_matrix, matrix_to_quat, quat_to_matrix
from .orientations import quat_between, quat_mul

OBJECTIVES = ("manipulability", "gravity", "torque")  # "torque" is "gravity": least gravity torque
GRAVITY = (0.0, 0.0, -9.81)  # m/s^2, robot root frame with z up


@dataclass(frozen=True)
class IKSettings:
    """Damped least squares: small steps that stay well-behaved near singularities.

    Lengths are in arm lengths (MechanismChain.length), so the robot in
    millimetres or twice as large settles on the same joints: damping and
    rotation_weight in metres would weigh the null space of a redundant arm
    otherwise at every scale (the Panda x2 moved 0.115 rad, x0.5 3.5 rad).
    """

    iterations: int = 80
    damping: float = 0.05        # lambda of (J J^T + lambda^2 I), J's linear rows in arm lengths per rad
    rotation_weight: float = 0.5  # arm lengths per rad: how much residual rotation counts against position
    max_step: float = 0.3        # rad (prismatic: arm lengths) per iteration and joint
    position_tol: float = 1e-3   # arm lengths: reached when closer
    rotation_tol: float = 1e-2   # rad
    patience: int = 8            # iterations without progress before a row gives up
    min_progress: float = 1e-3   # relative error decrease that counts as progress
    chunk: int = 2048            # problems per batch (bounds memory)


@dataclass(eq=False)
class MechanismChain:
    """A robot chain from its base link to the effector, with link masses for gravity."""

    tree: KinematicTree
    tip: int                # tree link index of the effector
    links: np.ndarray       # (J,) tree links below the chain's movable joints, base to tip
    columns: np.ndarray     # (C,) q columns the IK moves (mimic joints follow their leader)
    rest_q: np.ndarray      # (n,) rad: joints off the chain stay here
    seed: np.ndarray        # (C,) rad: IK start
    mass: np.ndarray        # (L,) kg per tree link
    com: np.ndarray         # (L, 3) m, centre of mass in each link frame
    gravity: np.ndarray = field(default_factory=lambda: np.array(GRAVITY))
    candidates: np.ndarray = field(default_factory=lambda: candidate_orientations())
    ik: IKSettings = field(default_factory=IKSettings)
    base: int = 0           # tree link index the chain hangs from (its frame is the positions' frame)
    length: float = 1.0     # m, the arm's size (chain_length): the unit of the IK's lengths


# -------------------------------------------------------------- building ---

def read_inertials(path) -> dict[str, tuple[float, np.ndarray]]:
    """{link: (mass kg, centre of mass (3,) m in the link frame)} from a URDF's <inertial> tags.

    core.urdf keeps only kinematics and geometry, so masses are read here.
    """
    try:
        root = ElementTree.parse(str(path)).getroot()
    except (OSError, ElementTree.ParseError) as exc:
        raise ValueError(f"{path}: cannot read inertial data: {exc}") from None
    out = {}
    for link in root.iter("link"):
        inertial = link.find("inertial")
        mass = None if inertial is None else inertial.find("mass")
        if mass is None:
            continue
        origin = inertial.find("origin")
        xyz = origin.get("xyz", "0 0 0") if origin is not None else "0 0 0"
        try:
            out[link.get("name")] = (float(mass.get("value")), np.array([float(v) for v in xyz.split()]))
        except (TypeError, ValueError):
            raise ValueError(f"{path}: link {link.get('name')!r} has a bad <inertial> mass or origin") from None
    return out


def make_chain(tree: KinematicTree, tip_link: str, base_link: str | None = None, *,
               inertials: dict | None = None, gravity=GRAVITY, seed=None, rest_q=None,
               candidates=None, ik: IKSettings | None = None) -> MechanismChain:
    """The chain from base_link (default: the root) to tip_link of a robot.

    inertials default to the <inertial> tags of the robot's URDF file; the
    IK seed defaults to the middle of each joint's range.
    """
    path = tree.path(base_link or tree.link_names[0], tip_link)
    # the base's own joint is above it: the chain moves the joints below the base only
    links = np.array([i for i in path[1:] if tree.kind[i] != FIXED and tree.qindex[i] >= 0], dtype=int)
    if links.size == 0:
        raise ValueError(f"no movable joint between {base_link or tree.link_names[0]!r} and {tip_link!r}")
    columns = np.unique(tree.qindex[links])
    if inertials is None:
        source = getattr(tree.robot, "source_path", None)
        inertials = read_inertials(source) if source else {}
    mass = np.array([inertials.get(n, (0.0, None))[0] for n in tree.link_names])
    com = np.array([inertials[n][1] if n in inertials else np.zeros(3) for n in tree.link_names])
    lo, hi = joint_limits(tree, columns)
    rest = np.clip(np.zeros(tree.dof), tree.lower, tree.upper) if rest_q is None else np.asarray(rest_q, float)
    return MechanismChain(
        tree=tree, tip=tree.link_index(tip_link), links=links, columns=columns, rest_q=rest,
        seed=0.5 * (lo + hi) if seed is None else np.asarray(seed, float), mass=mass, com=com,
        gravity=np.asarray(gravity, float),
        candidates=candidate_orientations() if candidates is None else np.asarray(candidates, float),
        ik=ik or IKSettings(), base=tree.link_index(base_link or tree.link_names[0]),
        length=chain_length(tree, path, links))


def chain_length(tree: KinematicTree, path, links: np.ndarray) -> float:
    """m, the sum of the joint offsets from the first moving joint to the tip (path: base to tip links):
    the arm's size, s times as large for the robot s times as large (the Panda's 1.09 m, the UR5's 1.24 m).
    Where the joints share one point (a wrist alone) 1 m, so lengths stay in metres."""
    after = list(path)[list(path).index(int(links[0])) + 1:]
    length = float(sum(np.linalg.norm(tree.origins[i][:3, 3]) for i in after))
    return length if length > 0 else 1.0


def joint_limits(tree: KinematicTree, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(C,) lower and upper limits in rad of the q columns; a joint without limits searches one turn."""
    lo, hi = tree.lower[columns], tree.upper[columns]
    return np.where(np.isfinite(lo), lo, -np.pi), np.where(np.isfinite(hi), hi, np.pi)


def random_joint_values(chain: MechanismChain, count: int, rng_seed: int = 0) -> np.ndarray:
    """(count, C) rad, uniform inside the limits, drawn joint by joint from the base to the tip: the
    same IK starts whatever order the URDF lists its joints in (a Panda file listing them shuffled
    held other via orientations, its joints 0.22 rad from the Panda's)."""
    lo, hi = joint_limits(chain.tree, chain.columns)
    along = [int(np.flatnonzero(chain.tree.qindex[chain.links] == c)[0]) for c in chain.columns]
    order = np.argsort(along, kind="stable")
    out = np.empty((count, lo.size))
    out[:, order] = np.random.default_rng(rng_seed).uniform(lo[order], hi[order], (count, lo.size))
    return out


def candidate_orientations(directions: int = 32, rolls: int = 6, axis=(0.0, 0.0, 1.0)) -> np.ndarray:
    """(directions * rolls, 4) orientations spread over SO(3): `axis` on a Fibonacci sphere, times rolls."""
    k = np.arange(directions) + 0.5
    z = 1.0 - 2.0 * k / directions
    phi = np.pi * (1.0 + 5 ** 0.5) * k
    rho = np.sqrt(1.0 - z * z)
    dirs = np.column_stack([rho * np.cos(phi), rho * np.sin(phi), z])
    swing = quat_between(np.broadcast_to(np.asarray(axis, float), dirs.shape), dirs)
    angles = 2 * np.pi * np.arange(rolls) / rolls
    roll = matrix_to_quat(axis_angle_to_matrix(np.asarray(axis, float), angles))  # (R, 4)
    return quat_mul(swing[:, None], roll[None]).reshape(-1, 4)


# ------------------------------------------------------------ kinematics ---

def base_pose(chain: MechanismChain) -> np.ndarray:
    """(4, 4) the base link in the root-link frame, the joints above it at rest."""
    return chain.tree.forward(chain.rest_q[None])[0, chain.base]


def arm_reach(chain: MechanismChain, samples: int = 4000, rng_seed: int = 0) -> tuple[np.ndarray, float]:
    """(origin (3,) m, reach m): the first moving joint's origin at rest and the farthest the tip gets
    from it over random joint values inside the limits, to tell a user how far the arm reaches."""
    q = np.vstack([chain.seed, random_joint_values(chain, samples, rng_seed)])
    frames = chain_frames(chain, q)
    origin = frames[0, chain.links[0], :3, 3]
    return origin, float(np.linalg.norm(frames[:, chain.tip, :3, 3] - origin, axis=1).max())


def chain_frames(chain: MechanismChain, qc: np.ndarray) -> np.ndarray:
    """World transforms (B, L, 4, 4) of every link for chain joint values qc (B, C)."""
    q = np.broadcast_to(chain.rest_q, (qc.shape[0], chain.tree.dof)).copy()
    q[:, chain.columns] = qc
    return chain.tree.forward(q)


def _joint_axes(chain: MechanismChain, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World axis (B, J, 3) and origin (B, J, 3) of each chain joint."""
    t = frames[:, chain.links]
    return np.einsum("bjik,jk->bji", t[..., :3, :3], chain.tree.axes[chain.links]), t[..., :3, 3]


def _per_column(chain: MechanismChain, per_joint: np.ndarray) -> np.ndarray:
    """Sum (B, J, ...) joint contributions into (B, C, ...) columns, scaled as mimic joints are."""
    out = np.zeros((per_joint.shape[0], chain.columns.size) + per_joint.shape[2:])
    col = np.searchsorted(chain.columns, chain.tree.qindex[chain.links])
    scale = chain.tree.qscale[chain.links].reshape((1, -1) + (1,) * (per_joint.ndim - 2))
    for j, c in enumerate(col):
        out[:, c] += scale[:, j] * per_joint[:, j]
    return out


def jacobian(chain: MechanismChain, frames: np.ndarray) -> np.ndarray:
    """Geometric Jacobian (B, 6, C) of the tip: linear rows, then angular rows, world frame."""
    z, p = _joint_axes(chain, frames)
    tip = frames[:, chain.tip, :3, 3]
    revolute = (chain.tree.kind[chain.links] == REVOLUTE)[None, :, None]
    linear = np.where(revolute, np.cross(z, tip[:, None] - p), z)
    angular = np.where(revolute, z, 0.0)
    return np.swapaxes(_per_column(chain, np.concatenate([linear, angular], -1)), 1, 2)


def manipulability(jac: np.ndarray) -> np.ndarray:
    """Yoshikawa's measure sqrt(det(J J^T)) per batch row: 0 at a singularity."""
    return np.sqrt(np.clip(np.linalg.det(jac @ np.swapaxes(jac, -1, -2)), 0.0, None))


def gravity_torques(chain: MechanismChain, frames: np.ndarray) -> np.ndarray:
    """Torques (B, C) in N m (N for sliders) the joints hold against gravity.

    Joint i carries every link below it: tau_i = z_i . sum_l (c_l - p_i) x m_l g.
    """
    if not np.any(chain.mass > 0):
        raise ValueError(f"robot {chain.tree.robot.name!r} has no <inertial> masses: "
                         'the "gravity" objective needs them')
    below = _below(chain)  # (J, L)
    centres = np.einsum("blik,lk->bli", frames[..., :3, :3], chain.com) + frames[..., :3, 3]
    force = chain.mass[:, None] * chain.gravity  # (L, 3) N
    moment = np.einsum("jl,bli->bji", below, np.cross(centres, force))
    z, p = _joint_axes(chain, frames)
    total = below @ force  # (J, 3)
    revolute = (chain.tree.kind[chain.links] == REVOLUTE)[None]
    tau = np.where(revolute, np.sum(z * (moment - np.cross(p, total)), -1), np.einsum("bji,ji->bj", z, total))
    return _per_column(chain, tau)


def _below(chain: MechanismChain) -> np.ndarray:
    """(J, L) 1 where tree link l is the chain joint's link or hangs below it."""
    parent = chain.tree.parent
    out = np.zeros((chain.links.size, parent.size))
    for l in range(parent.size):
        a = l
        while a >= 0:
            out[chain.links == a, l] = 1.0
            a = parent[a]
    return out


# -------------------------------------------------------------------- IK ---

@dataclass
class IKResult:
    """Batched IK outcome; `score` is -inf where the pose was not reached."""

    q: np.ndarray               # (B, C) rad
    position_error: np.ndarray  # (B,) m
    rotation_error: np.ndarray  # (B,) rad
    reached: np.ndarray         # (B,) bool
    score: np.ndarray           # (B,) objective, larger is better


def rotation_vectors(r: np.ndarray) -> np.ndarray:
    """Axis * angle (..., 3) of rotation matrices, stable near 0 and pi."""
    q = matrix_to_quat(r)  # w >= 0: angle in [0, pi]
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.where(s > 1e-12, 2.0 * np.arctan2(s, q[..., :1]) / np.where(s > 0, s, 1.0), 2.0) * v


def check_objective(objective: str) -> None:
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")


def same_objective(a: str, b: str) -> bool:
    """The names "gravity" and "torque" are one objective (least squared gravity torques)."""
    alias = {"torque": "gravity"}
    return alias.get(a, a) == alias.get(b, b)


def objective_scores(chain: MechanismChain, frames: np.ndarray, objective: str) -> np.ndarray:
    """(B,) larger is better: manipulability, or minus the summed squared gravity torques (N^2 m^2)."""
    check_objective(objective)
    if objective == "manipulability":
        return manipulability(jacobian(chain, frames))
    # "gravity" / "torque": least squared gravity torque
    return -np.sum(gravity_torques(chain, frames) ** 2, axis=-1)


def solve_ik(chain: MechanismChain, positions, quats, q0=None,
             objective: str = "manipulability") -> IKResult:
    """Joint values (B, C) putting the tip at positions (B, 3) turned by quats (B, 4)."""
    positions = np.asarray(positions, float).reshape(-1, 3)
    rotations = quat_to_matrix(np.asarray(quats, float).reshape(-1, 4))
    q = np.broadcast_to(chain.seed if q0 is None else np.asarray(q0, float),
                        (positions.shape[0], chain.columns.size))
    step = max(1, chain.ik.chunk)
    parts = [_solve_chunk(chain, positions[i:i + step], rotations[i:i + step], q[i:i + step].copy(), objective)
             for i in range(0, positions.shape[0], step)]
    return IKResult(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                      ("q", "position_error", "rotation_error", "reached", "score")))


def _solve_chunk(chain: MechanismChain, target_p: np.ndarray, target_r: np.ndarray | None,
                 q: np.ndarray, objective: str | None) -> IKResult:
    """DLS on an active set: rows leave once reached or stalled, so hopeless ones stop early.

    target_r None solves for the position only (rotation rows weigh nothing).
    """
    s, unit = chain.ik, chain.length
    lo, hi = joint_limits(chain.tree, chain.columns)
    w_rot = 0.0 if target_r is None else s.rotation_weight
    weight = np.array([1.0 / unit] * 3 + [w_rot] * 3)  # linear rows in arm lengths
    column = _column_units(chain)  # dq = column * the step solved in radians and arm lengths
    count = q.shape[0]
    p_err, r_err, best = np.full(count, np.inf), np.zeros(count), np.full(count, np.inf)
    stalled = np.zeros(count, dtype=int)
    live = np.arange(count)
    for iteration in range(s.iterations + 1):
        frames = chain_frames(chain, q[live])
        tip = frames[:, chain.tip]
        dp = target_p[live] - tip[:, :3, 3]
        dr = (np.zeros_like(dp) if target_r is None
              else rotation_vectors(target_r[live] @ np.swapaxes(tip[:, :3, :3], 1, 2)))
        p_err[live], r_err[live] = np.linalg.norm(dp, axis=1), np.linalg.norm(dr, axis=1)
        cost = p_err[live] / unit + w_rot * r_err[live]
        stalled[live] = np.where(cost < (1.0 - s.min_progress) * best[live], 0, stalled[live] + 1)
        best[live] = np.minimum(best[live], cost)
        keep = ((p_err[live] > s.position_tol * unit) | (r_err[live] > s.rotation_tol)) & (stalled[live] < s.patience)
        if iteration == s.iterations or not np.any(keep):
            break
        live, frames, dp, dr = live[keep], frames[keep], dp[keep], dr[keep]
        jac = jacobian(chain, frames) * weight[:, None] * column
        error = np.concatenate([dp, dr], axis=1) * weight
        system = jac @ np.swapaxes(jac, 1, 2) + s.damping ** 2 * np.eye(6)
        dq = np.einsum("bij,bi->bj", jac, np.linalg.solve(system, error[..., None])[..., 0])
        dq *= np.minimum(1.0, s.max_step / np.maximum(np.abs(dq).max(axis=1, keepdims=True), 1e-12))
        q[live] = np.clip(q[live] + dq * column, lo, hi)
    reached = (p_err <= s.position_tol * unit) & (r_err <= s.rotation_tol)
    score = np.full(count, -np.inf)
    if objective is not None and np.any(reached):
        score[reached] = objective_scores(chain, chain_frames(chain, q[reached]), objective)
    return IKResult(q, p_err, r_err, reached, score)


def _column_units(chain: MechanismChain) -> np.ndarray:
    """(C,) 1 for a rotating q column, the arm's length (m) for a sliding one: steps in rad and arm lengths."""
    sliding = np.zeros(chain.columns.size, bool)
    sliding[np.searchsorted(chain.columns, chain.tree.qindex[chain.links])] = chain.tree.kind[chain.links] != REVOLUTE
    return np.where(sliding, chain.length, 1.0)


def reachable(chain: MechanismChain, positions) -> np.ndarray:
    """(V,) bool: the tip can get to each position in some orientation (position-only IK)."""
    positions = np.asarray(positions, float).reshape(-1, 3)
    q = np.broadcast_to(chain.seed, (positions.shape[0], chain.columns.size)).copy()
    return _solve_chunk(chain, positions, None, q, None).reached


# ---------------------------------------------------------------- scores ---

def orientation_scores(chain: MechanismChain, positions, quats, objective: str = "manipulability",
                       restarts: int = 8, rng_seed: int = 0) -> IKResult:
    """Best objective of holding each orientation at each position over several IK starts.

    A redundant arm holds one pose in many ways; the chain's seed plus
    `restarts` random joint values inside the limits sample them.
    """
    positions = np.asarray(positions, float).reshape(-1, 3)
    quats = np.asarray(quats, float).reshape(-1, 4)
    seeds = np.vstack([chain.seed, random_joint_values(chain, restarts, rng_seed)])
    count, s = positions.shape[0], seeds.shape[0]
    result = solve_ik(chain, np.repeat(positions, s, axis=0), np.repeat(quats, s, axis=0),
                      np.tile(seeds, (count, 1)), objective)
    pick = np.arange(count) * s + np.argmax(result.score.reshape(count, s), axis=1)
    return IKResult(*(getattr(result, f)[pick] for f in ("q", "position_error", "rotation_error", "reached", "score")))
