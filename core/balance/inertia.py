"""Mass properties over frames: whole-body centre of mass and the multibody ZMP.

Every link with an URDF <inertial> is a rigid body: its mass at its centre of mass and
its rotational inertia about it. Over frames (first axis, seconds from fps) the ZMP on
flat ground z = ground_z is where the moment of gravity and inertia forces has no
horizontal component:

    p_x = (sum m (z'' + g) x - sum m x'' (z - ground) - sum dL_y/dt) / sum m (z'' + g)
    p_y = (sum m (z'' + g) y - sum m y'' (z - ground) + sum dL_x/dt) / sum m (z'' + g)

with L = R I R^T w each link's angular momentum about its own centre of mass.
Derivatives are central differences over frames.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.kinematics import FIXED, KinematicTree
from ..motion.filtering import butterworth_lowpass

GRAVITY = 9.81  # m/s^2
ACCELERATION_CUTOFF_HZ = 6.0  # body motion that matters for balance is slower; capture jitter is not
EDGE_S = 0.5  # a motion's ends are held still this long before it is low-passed


class BalanceError(ValueError):
    """The robot or the motion cannot be weighed; the message names what is missing."""


@dataclass
class MassModel:
    """The robot's links that have mass: index, mass (kg), centre of mass and inertia tensor
    about it (kg m^2), both in the link frame."""

    links: np.ndarray  # (K,)
    mass: np.ndarray  # (K,)
    com_local: np.ndarray  # (K, 3)
    inertia_local: np.ndarray  # (K, 3, 3)

    @property
    def total(self) -> float:
        return float(self.mass.sum())

    def subset(self, keep: np.ndarray) -> "MassModel":
        """The links where keep (K,) is true."""
        return MassModel(self.links[keep], self.mass[keep], self.com_local[keep], self.inertia_local[keep])

    @classmethod
    def build(cls, tree: KinematicTree) -> "MassModel":
        links, mass, com, inertia = [], [], [], []
        for i, name in enumerate(tree.link_names):
            inertial = tree.robot.links[name].inertial
            if inertial is None or inertial.mass <= 0:
                continue
            rot = inertial.origin[:3, :3]
            links.append(i)
            mass.append(inertial.mass)
            com.append(inertial.origin[:3, 3])
            inertia.append(rot @ inertial.inertia @ rot.T)
        if not links:
            raise BalanceError(f"robot {tree.robot.name!r}: no link has an <inertial> with a positive mass; "
                               "balance needs the URDF's masses (the retarget itself does not)")
        _check_bodies_weighed(tree)
        return cls(np.array(links), np.array(mass), np.array(com), np.array(inertia))


def rigid_bodies(tree: KinematicTree, model: MassModel) -> MassModel:
    """The model with each link a fixed joint holds to its parent weighed as part of the first moving link
    above it: one rigid body, its mass, centre of mass and inertia about that (the parallel axes added); a
    body of one link keeps its numbers. The same CoM; the same ZMP but for the low-pass, which smooths a
    body's points, not its parts': micrometres for light parts (the H1's twelve 1 g foot spheres and ankle
    links riding on its ankles, fewer links to pose and filter), millimetres for a heavy one swung fast (the
    G1's 1 kg head)."""
    owner = {}
    for k in model.links:
        link, shift = int(k), np.eye(4)
        while link > 0 and tree.kind[link] == FIXED:
            shift = tree.origins[link] @ shift
            link = int(tree.parent[link])
        owner[int(k)] = (link, shift)
    bodies = list(dict.fromkeys(link for link, _ in owner.values()))
    mass, com, inertia = [], [], []
    for body in bodies:
        parts = [i for i, k in enumerate(model.links) if owner[int(k)][0] == body]
        if len(parts) == 1 and int(model.links[parts[0]]) == body:
            mass.append(model.mass[parts[0]])
            com.append(model.com_local[parts[0]])
            inertia.append(model.inertia_local[parts[0]])
            continue
        turns = [owner[int(model.links[i])][1] for i in parts]
        points = np.array([t[:3, :3] @ model.com_local[i] + t[:3, 3] for i, t in zip(parts, turns)])
        weights = model.mass[parts]
        centre = weights @ points / weights.sum()
        total = np.zeros((3, 3))
        for i, t, point in zip(parts, turns, points):
            d = point - centre
            turned = t[:3, :3] @ model.inertia_local[i] @ t[:3, :3].T
            total += turned + model.mass[i] * (d @ d * np.eye(3) - np.outer(d, d))
        mass.append(weights.sum())
        com.append(centre)
        inertia.append(total)
    return MassModel(np.array(bodies), np.array(mass), np.array(com), np.array(inertia))


def _check_bodies_weighed(tree: KinematicTree) -> None:
    """A body a joint moves, drawn with geometry, has mass: one without is a description missing
    its <inertial>, and weighing the robot without it moves the ZMP by centimetres (a G1 knee
    left out: the walk's worst margin -514 mm against -469). Massless links between two joints
    (no geometry) and fixed sensors, logos and tool frames are fine as URDF allows."""
    bare = []
    for i, name in enumerate(tree.link_names):
        link = tree.robot.links[name]
        moving_body = i == 0 or tree.kind[i] != FIXED
        if moving_body and (link.visuals or link.collisions) and (link.inertial is None or link.inertial.mass <= 0):
            bare.append(name)
    if bare:
        raise BalanceError(f"robot {tree.robot.name!r}: link {bare[0]!r} moves and has geometry but no <inertial> "
                           f"with a positive mass{f' ({len(bare) - 1} more)' if len(bare) > 1 else ''}; balance "
                           "and gait weigh every body (give it its mass; the retarget itself does not need it)")


def _link_poses(tree: KinematicTree, q: np.ndarray, root: np.ndarray, model: MassModel) -> np.ndarray:
    return tree.forward(q, root)[:, model.links]  # (F, K, 4, 4)


def centre_of_mass(tree: KinematicTree, q: np.ndarray, root: np.ndarray, model: MassModel | None = None) -> np.ndarray:
    """Whole-body centre of mass (F, 3), metres, world; root: (F, 4, 4) root link poses."""
    model = model or MassModel.build(tree)
    poses = _link_poses(tree, q, root, model)
    com = np.einsum("fkij,kj->fki", poses[..., :3, :3], model.com_local) + poses[..., :3, 3]
    return np.einsum("k,fki->fi", model.mass, com) / model.total


def multibody_zmp(tree: KinematicTree, q: np.ndarray, root: np.ndarray, fps: float, ground_z: float = 0.0,
                  model: MassModel | None = None,
                  cutoff_hz: float = ACCELERATION_CUTOFF_HZ) -> tuple[np.ndarray, np.ndarray]:
    """(ZMP (F, 2) on the ground, centre of mass (F, 3)), metres, world.

    Positions and momenta are low-passed at cutoff_hz before they are differentiated: a
    millimetre of jitter at 120 Hz is 14 m/s^2, more than gravity."""
    model = model or MassModel.build(tree)
    return zmp_of(link_motion(tree, q, root, fps, model, cutoff_hz), model, ground_z)


def link_motion(tree: KinematicTree, q: np.ndarray, root: np.ndarray, fps: float, model: MassModel,
                cutoff_hz: float = ACCELERATION_CUTOFF_HZ) -> "LinkMotion":
    """The model's links moving as joint positions q (F, n) with root poses (F, 4, 4) move them."""
    return LinkMotion.of(_link_poses(tree, q, root, model), model, fps, cutoff_hz)


def ground_push(motion: "LinkMotion", model: MassModel) -> np.ndarray:
    """(F,) the ground's vertical push the motion needs, sum m (z'' + g), as a share of the
    robot's weight: 1 standing still, near 0 or below where the body falls or is thrown up (a
    hop's flight, a leg swung down fast: the feet would leave the ground). The ZMP divides by
    it, so there it is undefined, not far away."""
    return (model.mass * (motion.acc[..., 2] + GRAVITY)).sum(axis=1) / (model.total * GRAVITY)


def com_push(com: np.ndarray, fps: float) -> np.ndarray:
    """ground_push of a motion unfiltered, from its whole-body centre of mass (F, 3) alone: the sum
    of m (z'' + g) over the links is M (z_com'' + g), so no link need be moved to know it."""
    return 1.0 + _second_derivative(com[:, 2], 1.0 / fps) / GRAVITY


@dataclass
class LinkMotion:
    """What the ZMP needs of some links over frames: each one's centre of mass (F, K, 3) and its
    low-passed acceleration (F, K, 3), and the rate of change of their summed angular momentum
    about their own centres (F, 3). Everything is linear in the positions, so a group of links
    that only moves with the root's translation keeps its share (moved_by)."""

    com: np.ndarray
    acc: np.ndarray
    torque: np.ndarray

    @classmethod
    def of(cls, poses: np.ndarray, model: MassModel, fps: float,
           cutoff_hz: float = ACCELERATION_CUTOFF_HZ) -> "LinkMotion":
        """poses (F, K, 4, 4) of the model's links."""
        return cls.of_parts(poses[..., :3, :3], poses[..., :3, 3], model, fps, cutoff_hz)

    @classmethod
    def of_parts(cls, rot: np.ndarray, pos: np.ndarray, model: MassModel, fps: float,
                 cutoff_hz: float = ACCELERATION_CUTOFF_HZ,
                 carrying: tuple["LinkMotion", np.ndarray] | None = None) -> "LinkMotion":
        """of, the links' rotations (F, K, 3, 3) and positions (F, K, 3) given apart. The arithmetic runs on
        each entry's (K, F) block: contiguous where they are views of entry-major frames-last arrays
        (rot[f, k, a, b] = cols[b, a, k, f], the poses' columns stacked: core.balance.correction._motion), copied
        so otherwise. On strided (F, K) views numpy copied every operand through its buffers. carrying: (other
        links' motion, a translation (F, 3)): those links moved_by it joined after these (joined). Every
        low-pass of the call (the links' CoMs, their momentum, the translation) is one filter call on their
        columns side by side: each column filtered as alone, a call costing mostly per call."""
        frames_last = abs(rot.strides[0]) < abs(rot.strides[1])  # frames vary faster than links in memory
        cols = _blocks(rot.transpose(3, 2, 1, 0))  # (3, 3, K, F): [b, a] every link's R[a, b] over the frames
        places = _blocks(pos.transpose(2, 1, 0))  # (3, K, F)
        com = np.empty(pos.shape)  # R c + p, by hand: einsum over rows of three is slow
        c = model.com_local[:, :, None]
        for a in range(3):
            com[..., a] = (cols[0, a] * c[:, 0] + cols[1, a] * c[:, 1] + cols[2, a] * c[:, 2] + places[a]).T
        dt = 1.0 / fps
        # R I R^T omega = R I Omega, Omega = R^T omega the body's rate (each link's own frame), summed over links
        body = _body_rates(cols, dt)
        inertia = model.inertia_local[..., None]
        spun = [inertia[:, a, 0] * body[0] + inertia[:, a, 1] * body[1] + inertia[:, a, 2] * body[2] for a in range(3)]
        summed = np.empty((len(rot), 3))
        for a in range(3):
            summed[:, a] = _over_links(cols[0, a] * spun[0] + cols[1, a] * spun[1] + cols[2, a] * spun[2], frames_last)
        smooth = _smooth_each([com, summed] + ([] if carrying is None else [carrying[1]]), fps, cutoff_hz)
        acc = _second_derivative(smooth[0], dt)
        momentum = smooth[1]
        torque = np.gradient(momentum, dt, axis=0) if len(momentum) > 1 else np.zeros_like(momentum)
        motion = cls(com, acc, torque)
        if carrying is None:
            return motion
        other, shift = carrying
        return motion.joined(other.shifted(shift, _second_derivative(smooth[2], dt)))

    def moved_by(self, shift: np.ndarray, fps: float, cutoff_hz: float = ACCELERATION_CUTOFF_HZ) -> "LinkMotion":
        """The same links carried by a translation shift (F, 3) over the frames."""
        return self.shifted(shift, _second_derivative(_smooth(shift, fps, cutoff_hz), 1.0 / fps))

    def shifted(self, shift: np.ndarray, acc: np.ndarray) -> "LinkMotion":
        """moved_by, the translation's acceleration (F, 3) given (its low-pass's second derivative)."""
        return LinkMotion(self.com + shift[:, None], self.acc + acc[:, None], self.torque)

    def joined(self, other: "LinkMotion") -> "LinkMotion":
        """These links and other's (over the same frames) as one motion, other's links after these."""
        return LinkMotion(np.concatenate([self.com, other.com], axis=1), np.concatenate([self.acc, other.acc], axis=1),
                          self.torque + other.torque)


def zmp_of(motion: LinkMotion, model: MassModel, ground_z: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(ZMP (F, 2), centre of mass (F, 3)) of the model's links moving as `motion`."""
    com, acc, torque = motion.com, motion.acc, motion.torque
    m = model.mass[None, :]
    vertical = m * (acc[..., 2] + GRAVITY)  # (F, K)
    height = com[..., 2] - ground_z
    denominator = vertical.sum(axis=1)
    zmp_x = ((vertical * com[..., 0]).sum(1) - (m * acc[..., 0] * height).sum(1) - torque[:, 1]) / denominator
    zmp_y = ((vertical * com[..., 1]).sum(1) - (m * acc[..., 1] * height).sum(1) + torque[:, 0]) / denominator
    whole = np.einsum("k,fki->fi", model.mass, com) / model.total
    return np.stack([zmp_x, zmp_y], axis=1), whole


def _smooth(x: np.ndarray, fps: float, cutoff_hz: float) -> np.ndarray:
    """Zero-phase low-pass over frames of any shape (F, ...); short clips and low rates pass.
    The ends are held still for EDGE_S before filtering: a motion is taken to start and end
    standing, and the filter's own edge padding would read accelerations into the first and
    last tenths of a second."""
    return _smooth_each([x], fps, cutoff_hz)[0]


def _smooth_each(parts: list[np.ndarray], fps: float, cutoff_hz: float) -> list[np.ndarray]:
    """_smooth of each of parts (F, ...) over the same frames, their columns side by side in one filter
    call (the filter runs each column alone: the same bits as a call each)."""
    if len(parts[0]) < 16 or cutoff_hz <= 0 or cutoff_hz >= 0.45 * fps:
        return parts
    flat = [x.reshape(len(x), -1) for x in parts]
    edge = max(1, int(round(EDGE_S * fps)))
    padded = np.pad(np.concatenate(flat, axis=1), ((edge, edge), (0, 0)), mode="edge")
    smooth = butterworth_lowpass(padded, fps, cutoff_hz, order=2)[edge:-edge]  # order 2: little ringing at a step
    cuts = np.cumsum([f.shape[1] for f in flat])[:-1]
    return [part.reshape(x.shape) for part, x in zip(np.split(smooth, cuts, axis=1), parts)]


def _second_derivative(x: np.ndarray, dt: float) -> np.ndarray:
    if len(x) < 3:
        return np.zeros_like(x)
    return np.gradient(np.gradient(x, dt, axis=0), dt, axis=0)


def _blocks(x: np.ndarray) -> np.ndarray:
    """x (..., K, F) with every (K, F) block contiguous and the blocks in order (a view where they are)."""
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def _over_links(x: np.ndarray, frames_last: bool) -> np.ndarray:
    """The sum over the links (F,) of x (K, F) in the order numpy summed each layout's (F, K) products: link after
    link on frames-last views (the passes' ZMP), pairwise along the links of frames-first poses (the readout's)."""
    return x.sum(axis=0) if frames_last else np.ascontiguousarray(x.T).sum(axis=1)


def _gradient_last(x: np.ndarray, dt: float) -> np.ndarray:
    """np.gradient(x, dt, axis=-1) of a contiguous x (..., F), F >= 2, to the bit: the central differences as
    one run over the flattened array (the rows' ends, where that run mixes two rows, written after by the
    one-sided differences), not a strided slice per row."""
    out = np.empty_like(x)
    flat, run = x.reshape(-1), out.reshape(-1)
    np.subtract(flat[2:], flat[:-2], out=run[1:-1])
    np.divide(run[1:-1], 2.0 * dt, out=run[1:-1])
    out[..., 0] = (x[..., 1] - x[..., 0]) / dt
    out[..., -1] = (x[..., -1] - x[..., -2]) / dt
    return out


def _body_rates(cols: np.ndarray, dt: float) -> list[np.ndarray]:
    """Angular velocity in each body's own frame, R^T omega = vee(R^T dR/dt), as its three parts
    (K, F) each, of rotations given by their columns (3, 3, K, F), [b, a] = R[a, b] (contiguous:
    LinkMotion.of_parts): only the products the three parts need (the whole 3x3 product per link
    and frame was a BLAS call each, a fifth of the multibody ZMP's time)."""
    if cols.shape[-1] < 2:
        return [np.zeros(cols.shape[2:]) for _ in range(3)]
    turn = _gradient_last(cols, dt)
    out = []
    for a, b in ((2, 1), (0, 2), (1, 0)):  # (R^T dR)[a, b] - (R^T dR)[b, a], halved
        out.append(0.5 * (cols[a, 0] * turn[b, 0] + cols[a, 1] * turn[b, 1]
                          + cols[a, 2] * turn[b, 2] - cols[b, 0] * turn[a, 0]
                          - cols[b, 1] * turn[a, 1] - cols[b, 2] * turn[a, 2]))
    return out
