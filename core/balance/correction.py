"""Balance correction of a gait (issue 12, step 8): the waist moves until the multibody ZMP
follows the target.

First the cart-table preview controller turns the target ZMP into a centre-of-mass path.
Then each pass: move the waist until the whole-body CoM follows that path (the feet where
they stand, legs solved again), compute the multibody ZMP of the result (every link's mass
and inertia, angular momentum included), and feed its error to the target through the same
controller as a CoM correction (Kajita et al. 2003). Where a foot that is down cannot be
reached (a leg stretched too far, an ankle past its range in a crouch), the waist's height
changes as little as lets it stand, smoothly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.ndimage import distance_transform_edt, maximum_filter1d, uniform_filter1d

from ..model.kinematics import KinematicTree, ancestor_path
from ..model.posing import Poser
from ..model.transforms import pose_matrices
from .inertia import LinkMotion, MassModel, centre_of_mass, multibody_zmp, rigid_bodies, zmp_of
from .legs import LegIK, leg_length, pose_errors, solve_legs, within_reach
from .planar_leg import planar_legs, standing_legs
from .sagittal import SagittalWaist
from .stance import fit_waist
from .waist import calm_height, keep_tilt
from .preview import PreviewGains, PreviewSettings, follow_zmp

MAX_ZMP_ERROR_M = 0.3  # the most of one sample's multibody ZMP error a pass corrects
PLAN_ROUNDS = 4  # rounds that make the feet's plan stand before the multibody passes
PRIOR_RAMP_S = 0.1  # a leg leaving the ground leans on the person's posture over this long
COM_TRACKING_STEPS = 2
STAND_TOL_M = 0.001
TURN_TOL_RAD = 0.005  # a standing foot turned this far slides half a millimetre at a 10 cm toe
HEIGHT_STEPS_M = np.array([-0.02, 0.02, -0.04, 0.04, -0.07, 0.07, -0.1, 0.1, -0.14, 0.14])  # waist height changes tried,
#                 the smallest first, down before up
ROLLED_HEIGHT_STEPS_M = np.r_[-0.01, 0.01, HEIGHT_STEPS_M]  # the rolled waist (sagittal.py) tries 1 cm first: a
#   trailing leg a few millimetres short needs less than 2 cm, and 2 cm spread over 0.4 s each way sent other samples'
#   legs to their limits, whose raise in the next round undid the lowering (H1 walk: a trailing foot 14 mm up at
#   6.05 s, worst margin -25 mm; with 1 cm first +6 mm)
HEIGHT_SMOOTH_S = 0.4  # the waist's height changes this smoothly where a foot cannot stand
RIGID_LEGS = True  # the passes' ZMP weighs each leg's rigid parts as one body (inertia.rigid_bodies)


@dataclass
class CorrectionSettings:
    passes: int = 24
    gain: float = 1.5  # of each pass's CoM correction applied: the waist moves the CoM less than itself
    q: float = 1.0
    r: float = 1e-6
    preview_s: float = 1.6
    reach: float = 0.97  # share of a leg's straight length it may stretch to
    tolerance_m: float = 0.002  # multibody ZMP RMS error to the target at which the passes stop
    # the rolled waist (core.balance.sagittal): each double support's yaw turned back as the plan's heading turns
    # (the feet stand still), within the standing hips' twist. Off by default: it mends the H1 walk standing before
    # and after (ZMP RMS 48 -> 3.3 mm, outside 11.6 -> 0 %) and the plain walk's figures (+1.3 -> +9.9 mm margin),
    # but its passes then amplify a 1e-6 m start difference to millimetres (README, session 12)
    turn_back_yaw: bool = False


@dataclass
class Balanced:
    q: np.ndarray  # (N, n)
    root_position: np.ndarray  # (N, 3)
    com_path: np.ndarray  # (N, 2) the corrected CoM path the waist follows
    cart_zmp: np.ndarray  # (N, 2) the cart-table ZMP of the first path
    zmp: np.ndarray  # (N, 2) the multibody ZMP of the result
    com: np.ndarray  # (N, 3)
    com_height_m: float
    height_change_m: float  # the most the waist's height changed so the feet could stand


class Corrector:
    """The robot, its legs, the feet's goals and the waist's height and rotation over the samples
    of one gait; the waist's horizontal path is what the correction moves."""

    def __init__(self, tree: KinematicTree, legs: list[LegIK], model: MassModel, goals: dict[int, np.ndarray],
                 down: dict[int, np.ndarray], root_rot: np.ndarray, height: np.ndarray, rest: np.ndarray,
                 period_s: float, settings: CorrectionSettings, level_tol: float = np.radians(1.0),
                 sagittal_waist: bool = False):
        self.tree, self.legs, self.model, self.goals, self.down = tree, legs, model, goals, down
        self.root_rot, self.height, self.period, self.settings = root_rot, height, period_s, settings
        self.rest = rest  # (N, n) the retargeted angles: legs restart from them, on the person's branch
        self.level_tol = level_tol  # radians a standing foot may tilt (core.balance.support.level_tolerance)
        self.air_share = {foot: air_share(d, period_s) for foot, d in down.items()}
        self.full_reach = [leg_length(tree, leg) for leg in legs]  # a swing foot is pulled in only past it
        self.split: _SplitBody | None = None
        self._com_poser: Poser | None = None
        self.tilt_kept = np.ones(len(root_rot))  # share of the plan's waist tilt kept so the feet stand (stance.py)
        self.base_rot = root_rot  # the plan's waist rotation; root_rot is the waist's as last solved
        self.command: np.ndarray | None = None  # (N, 2) the best pass's waist command (refine)
        # legs without an ankle roll, asked for (GaitSettings.sagittal_waist): the waist rolls across (sagittal.py)
        # legs without an ankle roll (the H1): their height fit moves only the way a cause asks, the waist rolled
        # or upright (stance.fit_waist)
        planar = planar_legs(tree, legs)
        self.planar = planar is not None
        planar = planar if sagittal_waist else None
        self.family = None if planar is None else SagittalWaist(
            tree, planar, model, rest, {foot: 1.0 - share for foot, share in self.air_share.items()}, period_s,
            settings.turn_back_yaw)
        if self.family is not None:  # a standing foot keeps its place and heading, its sole rolling a little instead
            self.legs = standing_legs(tree, legs)
        self.height_steps = HEIGHT_STEPS_M if self.family is None else ROLLED_HEIGHT_STEPS_M

    def solve(self, q: np.ndarray, xy: np.ndarray, quick: bool = False,
              span: slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """Legs solved for the waist over xy (N, 2) at its height: (q, root position (N, 3)).
        A swing foot out of reach aims at the nearest point it can reach. quick: from q alone,
        without restarts (the waist moved a little from where q was solved). span: only these
        samples are solved again (the others keep q's legs)."""
        if self.family is not None:  # the command is where the upright waist would be: rolled there
            self.root_rot, root_pos = self.family.place(xy, self.height, self.base_rot, q, self.goals)
            span = slice(None)  # placed as one path, the waist moved everywhere: every sample's legs follow
        else:
            root_pos = np.column_stack([xy, self.height])
        q = q.copy()
        q[span] = self._legs(q[span], pose_matrices(self.root_rot[span], root_pos[span]), quick, span)
        return q, root_pos

    def _legs(self, q: np.ndarray, root: np.ndarray, quick: bool = False, span: slice = slice(None)) -> np.ndarray:
        """The legs (of samples span, given as q (S, n)) solved under the waist at root (S, 4, 4); a
        swing foot out of reach aims at the nearest point it can reach."""
        air = {foot: ~down[span] for foot, down in self.down.items()}
        goals = within_reach(self.tree, self.legs, self.full_reach, q, root,
                             {foot: goal[span] for foot, goal in self.goals.items()}, air)
        solved, _ = solve_legs(self.tree, self.legs, q, root, goals, self.rest[span],
                               {foot: share[span] for foot, share in self.air_share.items()}, quick=quick,
                               period_s=self.period)
        return solved

    def legs_under(self, q: np.ndarray, root: np.ndarray, span: slice = slice(None)) -> np.ndarray:
        """The legs of samples span (given as q (S, n)) solved again under the waist poses root (S, 4, 4),
        the waist where it is (a foot's goal changed, not the balance)."""
        return self._legs(q, root, span=span)

    def lateral_range(self, q: np.ndarray, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For legs without an ankle roll: the direction across the waist's heading (N, 2), how far
        along it the whole-body CoM reaches each way (lo, hi (N,), metres) with the feet that are down
        standing, the waist over xy (N, 2) rolled to each end of its range (core.balance.sagittal),
        and the CoM's height between those ends (N,)."""
        ends = []
        for side in (-1.0, 1.0):
            rot, pos = self.family.leaning(xy, self.height, self.base_rot, q, self.goals, side)
            root = pose_matrices(rot, pos)
            ends.append(centre_of_mass(self.tree, self._legs(q, root), root, self.model))
        forward = self.base_rot[:, :2, 0] / np.linalg.norm(self.base_rot[:, :2, 0], axis=1, keepdims=True)
        across = np.column_stack([-forward[:, 1], forward[:, 0]])
        reach = np.array([np.einsum("fi,fi->f", across, end[:, :2]) for end in ends])
        return across, reach.min(axis=0), reach.max(axis=0), (ends[0][:, 2] + ends[1][:, 2]) / 2.0

    def standing(self, q: np.ndarray, root: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """True where every foot that is down is where its goal is (position and level), for
        samples `rows` (all by default) with q and root given at those rows."""
        rows = np.arange(len(q)) if rows is None else rows
        # legs without an ankle roll: the foot's turn is the waist's yaw on its family (sagittal.py), which
        # no height mends; asked of the height fit, a trial height that happened to turn the foot 5 mrad
        # less raised the waist by up to 14 cm over 0.8 s (H1 walk), the stance leg hanging off its foot
        turn_tol = TURN_TOL_RAD if self.family is None else np.inf
        ok = np.ones(len(rows), dtype=bool)
        for leg in self.legs:
            miss, tilt, turn = pose_errors(self.tree, [leg], q, root, {leg.foot: self.goals[leg.foot][rows]})
            ok &= ~self.down[leg.foot][rows] | ((miss < STAND_TOL_M) & (tilt < self.level_tol) & (turn < turn_tol))
        return ok

    def fit_height(self, q: np.ndarray, xy: np.ndarray, solved: np.ndarray | None = None) -> float:
        """Raise or lower the waist where a foot that is down cannot be reached (a leg stretched
        too far, or bent past its ankle's range in a deep crouch): the smallest change of height
        that stands, smoothed; returns the largest change (metres). solved: the waist's position
        (N, 3) for which q already has the legs solved (no solve again); the rolled waist stands
        off the command xy (sagittal.py), and judged over xy the H1 walk's fine fit found 1622 of
        1657 samples not standing and no height that stood (a trailing leg 18 mm off its foot)."""
        if solved is None:
            q, root_pos = self.solve(q, xy)
        else:
            root_pos = solved
        bad = np.flatnonzero(~self.standing(q, pose_matrices(self.root_rot, root_pos)))
        if len(bad) == 0:
            return 0.0
        width = max(1, int(round(HEIGHT_SMOOTH_S / self.period)))
        need = fit_waist(self, q, root_pos, bad, self.height_steps, width, _envelope)  # the tilt first (stance.py)
        if self.family is None:
            height = _bounded(self.height, need, width)
        else:  # the rolled waist as before: with _bounded the H1 walk's worst margin +10.8 -> +4.4 mm, slide 2.8 mm
            height = (self.height + _envelope(np.clip(need, 0.0, None), width)
                      - _envelope(np.clip(-need, 0.0, None), width))
        self.height = calm_height(height, 1.0 / self.period)
        return float(np.abs(need).max())

    def track(self, q: np.ndarray, xy: np.ndarray, com_path: np.ndarray, fit: bool = False):
        """Shift the waist until the whole-body CoM's ground projection follows com_path (N, 2),
        with fit its height first fitted so the feet stand: (q, root position, xy, height change)."""
        xy = xy.copy()
        changed = self.fit_height(q, xy) if fit else 0.0
        for _ in range(COM_TRACKING_STEPS):
            q, root_pos = self.solve(q, xy)
            com = self.centre_of_mass(q, pose_matrices(self.root_rot, root_pos))
            xy += com_path - com[:, :2]
        if fit:
            q, root_pos, again = self.solve_standing(q, xy)
            return q, root_pos, xy, max(changed, again)
        q, root_pos = self.solve(q, xy)
        return q, root_pos, xy, changed

    def solve_standing(self, q: np.ndarray, xy: np.ndarray, rounds: int = 1,
                       settle: Callable[[np.ndarray, np.ndarray], object] | None = None
                       ) -> tuple[np.ndarray, np.ndarray, float]:
        """solve, then fit_height, then the legs again from where they got where the height
        moved: (q, root position, the largest height change). settle(q, root position): called
        with the legs solved before each fit (it may change which feet are down)."""
        q, root_pos = self.solve(q, xy)
        changed = 0.0
        for _ in range(rounds):
            height, rot = self.height, self.root_rot
            if settle is not None:
                settle(q, root_pos)
            changed = max(changed, self.fit_height(q, xy, solved=root_pos))
            moved = np.flatnonzero((height != self.height) | (rot != self.root_rot).any(axis=(1, 2)))
            if len(moved) == 0:
                break
            q, root_pos = self.solve(q, xy, span=slice(moved[0], moved[-1] + 1))  # where the waist moved
        return q, root_pos, changed

    def zmp(self, q: np.ndarray, root_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Multibody ZMP (N, 2) and CoM (N, 3), as the balance readout computes it (to rounding:
        the links no leg moves are weighed once, core.balance.inertia.LinkMotion)."""
        if self.split is None:
            self.split = _SplitBody(self.tree, self.legs, self.model)
        if len(self.split.fixed.links) == 0 or len(self.split.moving.links) == 0:
            return multibody_zmp(self.tree, q, pose_matrices(self.root_rot, root_pos), 1.0 / self.period,
                                 model=self.model)
        return self.split.zmp(q, self.root_rot, root_pos, 1.0 / self.period)

    def centre_of_mass(self, q: np.ndarray, root: np.ndarray) -> np.ndarray:
        """Whole-body centre of mass (F, 3) as inertia.centre_of_mass gives it (to rounding), the
        links posed frames last (core.model.posing) instead of the whole tree's forward."""
        if self._com_poser is None:
            self._com_poser = Poser(self.tree, self.model.links)
        poses = self._com_poser(q, root)
        total = np.zeros((3, len(q)))
        for link, mass, local in zip(self.model.links, self.model.mass, self.model.com_local):
            pose = poses[int(link)]
            total += mass * (pose.cols[0] * local[0] + pose.cols[1] * local[1] + pose.cols[2] * local[2] + pose.pos)
        return (total / self.model.total).T

    def untilt(self, kept: np.ndarray) -> None:
        """Keep only `kept` (N,) of the waist's tilt (core.balance.stance)."""
        self.root_rot = keep_tilt(self.root_rot, kept)
        self.base_rot = keep_tilt(self.base_rot, kept)
        self.tilt_kept = self.tilt_kept * kept


class _SplitBody:
    """The multibody ZMP over the same samples again and again while only the legs and the
    waist's position change (the correction's passes): the links no leg joint moves turn with
    the waist's fixed rotation and the other joints, so their motion is computed once and
    carried by the waist's translation; only the legs' links are weighed at every call."""

    def __init__(self, tree: KinematicTree, legs: list[LegIK], model: MassModel):
        self.tree = tree
        moved = {link for leg in legs for link in leg.links}
        below = np.array([any(link in moved for link in ancestor_path(tree.parent, 0, int(k))) for k in model.links])
        # the legs' rigid parts as one body each (the H1's ankle with its six 1 g parts: 22 links posed and filtered
        # at every pass, 10 now); the links no leg moves are posed once a waist rotation, as they were
        self.moving = rigid_bodies(tree, model.subset(below)) if RIGID_LEGS else model.subset(below)
        self.fixed = model.subset(~below)
        self.model = MassModel(np.r_[self.moving.links, self.fixed.links], np.r_[self.moving.mass, self.fixed.mass],
                               np.r_[self.moving.com_local, self.fixed.com_local],
                               np.r_[self.moving.inertia_local, self.fixed.inertia_local])
        self.others = np.setdiff1d(np.arange(tree.dof), np.concatenate([leg.columns for leg in legs]))
        self.key: tuple | None = None
        self.still: LinkMotion | None = None
        self.poser = Poser(tree, self.moving.links)  # the legs' links posed at every pass, frames last
        self.fixed_poser = Poser(tree, self.fixed.links)

    def zmp(self, q: np.ndarray, root_rot: np.ndarray, root_pos: np.ndarray, fps: float):
        if self.key is None or not (np.array_equal(self.key[0], q[:, self.others])
                                    and np.array_equal(self.key[1], root_rot)):
            self.key = (q[:, self.others].copy(), root_rot.copy())
            self.still = _motion(self.fixed_poser, self.fixed, q, pose_matrices(root_rot, np.zeros((len(q), 3))), fps)
        # the legs' links, and the others carried by the waist's translation, in one low-pass
        both = _motion(self.poser, self.moving, q, pose_matrices(root_rot, root_pos), fps, (self.still, root_pos))
        return zmp_of(both, self.model)


def _motion(poser: Poser, model: MassModel, q: np.ndarray, root: np.ndarray, fps: float,
            carrying: tuple[LinkMotion, np.ndarray] | None = None) -> LinkMotion:
    """The model's links moving as q (F, n) under root (F, 4, 4) move them, posed frames last
    (core.model.posing: a third of KinematicTree.poses' time; the same to rounding); carrying: as
    LinkMotion.of_parts joins it."""
    poses = poser(q, root)
    cols = np.stack([poses[int(k)].cols for k in model.links], axis=2)  # (3, 3, K, F): [b, a] = R[a, b]
    pos = np.stack([poses[int(k)].pos for k in model.links], axis=1)  # (3, K, F)
    return LinkMotion.of_parts(cols.transpose(3, 2, 1, 0), pos.transpose(2, 1, 0), model, fps, carrying=carrying)


def _envelope(need: np.ndarray, width: int) -> np.ndarray:
    """A smooth curve never below need (N,) >= 0: a running maximum, then two running means no
    wider than half of it."""
    if not (need > 0).any():
        return need
    out = maximum_filter1d(need, 2 * width + 1, mode="nearest")
    for _ in range(2):
        out = uniform_filter1d(out, width | 1, mode="nearest")
    return out


def _bounded(height: np.ndarray, need: np.ndarray, width: int) -> np.ndarray:
    """The waist's height (N,) moved where samples could not stand (need (N,) metres, 0 where none) as
    heights, not increments: a sample asking up sets a floor and one asking down a ceiling, each held
    `width` samples either way and eased there, never short of the sample's own ask; where they
    meet, down wins (a stance leg straight off its foot). Spread as increments, the cut walk's raise
    for a crouch the robot cannot make (the person's waist 14 cm lower 0.3 s on) reached back to the
    left stance before it, whose leg was straight already: that foot 7-14 mm up at 1.7-1.8 s."""
    out = height
    for way in (1.0, -1.0):  # way * height: a floor either way
        asked = way * need > 0
        if not asked.any():
            continue
        held = maximum_filter1d(np.where(asked, way * (height + need), -np.inf), 2 * width + 1, mode="nearest")
        near = np.isfinite(held)
        level = np.where(near, np.maximum(held, way * out), way * out)
        for _ in range(2):
            level = uniform_filter1d(level, width | 1, mode="nearest")
        out = way * np.where(near, np.maximum(level, way * out), way * out)
    return out


def air_share(down: np.ndarray, period_s: float) -> np.ndarray:
    """How much a leg leans on the person's posture at each sample (N,): 0 where its foot is down
    (N,), easing to 1 over PRIOR_RAMP_S in the air (1 throughout for a foot never down)."""
    if not down.any():
        return np.ones(len(down))
    ramp = max(1, int(round(PRIOR_RAMP_S / period_s)))
    return _ease(np.clip(distance_transform_edt(~down) / ramp, 0.0, 1.0))


def _ease(s: np.ndarray) -> np.ndarray:
    return s * s * (3.0 - 2.0 * s)


def balance(corrector: Corrector, q: np.ndarray, offset: np.ndarray, com_height: float, target: np.ndarray,
            plan: Callable[[np.ndarray, np.ndarray], bool] | None = None,
            path: tuple[np.ndarray, np.ndarray] | None = None, passes: int | None = None) -> Balanced:
    """The waist path whose multibody ZMP follows target (N, 2).

    First the cart-table CoM path at com_height, the waist `offset` (N, 2) from it; with that
    path the plan is made to stand: the waist's height fitted, and plan(q, root poses) may move
    the feet's goals in place (returning whether it did), up to PLAN_ROUNDS times. Then each
    multibody pass feeds the ZMP's error through the preview controller and moves the waist by
    the CoM correction it gives (Kajita et al. 2003). path: (CoM, cart-table ZMP) (N, 2) planned
    elsewhere (core.balance.lateral), taken instead of the preview controller's. passes: the
    multibody passes at most (the settings' passes by default)."""
    settings = corrector.settings
    preview = PreviewSettings(corrector.period, com_height, settings.q, settings.r, settings.preview_s)
    gains = PreviewGains.build(preview)
    com_path, cart_zmp = follow_zmp(target, preview, gains) if path is None else path
    xy = com_path + offset
    changed = 0.0
    q, root_pos, xy, changed = corrector.track(q, xy, com_path, fit=True)
    for _ in range(PLAN_ROUNDS):  # the plan moves swing feet only: the stances stand as fitted
        if plan is None or not plan(q, pose_matrices(corrector.root_rot, root_pos)):
            break
        q, root_pos = corrector.solve(q, xy)
    q, root_pos, xy, _ = corrector.track(q, xy, com_path)
    q, root_pos, com_path, zmp, com = refine(corrector, q, root_pos, xy, com_path, target, com_height,
                                             settings.passes if passes is None else passes)
    return Balanced(q, root_pos, com_path, cart_zmp, zmp, com, com_height, changed)


def refine(corrector: Corrector, q: np.ndarray, root_pos: np.ndarray, xy: np.ndarray, com_path: np.ndarray,
           target: np.ndarray, com_height: float, passes: int, stall_share: float | None = None,
           measured: tuple[np.ndarray, np.ndarray] | None = None):
    """Multibody passes from the legs q and waist root_pos over xy (N, 2): each feeds the ZMP's
    error to target (N, 2) through the preview controller and moves the waist by the CoM
    correction it gives (Kajita et al. 2003), accelerated (_Mixer). They stop at the settings'
    tolerance or once a pass does stall_share (STALL_SHARE by default; inf: never) worse than the
    best: (q, root_pos, com_path, zmp, com) of the best pass. measured: the start's (ZMP, CoM) where
    the caller has them (corrector.zmp of q and root_pos as they stand: the margin rounds')."""
    stall_share = STALL_SHARE if stall_share is None else stall_share
    settings = corrector.settings
    preview = PreviewSettings(corrector.period, com_height, settings.q, settings.r, settings.preview_s)
    gains = PreviewGains.build(preview)
    mixer = _Mixer(ANDERSON_MEMORY)
    best = None
    for index in range(max(1, passes)):
        zmp, com = corrector.zmp(q, root_pos) if index or measured is None else measured
        error = target - zmp
        score = rms_error(error)
        if best is None or score < best[0]:
            best = (score, q, root_pos, com_path, zmp, com, corrector.root_rot, xy,
                    None if corrector.family is None else corrector.family.params)
        elif score > best[0] * (1.0 + stall_share):  # past its best: the passes oscillate from here
            break
        if score < settings.tolerance_m or index == passes - 1:  # the last pass only measures
            break
        size = np.linalg.norm(error, axis=1, keepdims=True)
        error *= np.minimum(1.0, MAX_ZMP_ERROR_M / np.maximum(size, 1e-12))  # one bad sample cannot throw the body
        correction, _ = follow_zmp(error, preview, gains)
        step = mixer.step(xy, settings.gain * correction)
        com_path = com_path + step
        xy = xy + step  # the waist carries most of the body: the CoM follows it closely
        q, root_pos = corrector.solve(q, xy, quick=True)  # small moves: from q alone
    corrector.root_rot = best[6]  # the waist's rotation with the best pass (legs without ankle roll turn it)
    corrector.command = best[7]
    if corrector.family is not None:  # the rolled waist's next placement starts from the best pass's
        corrector.family.params = best[8]
    return best[1:6]


ANDERSON_MEMORY = 4
STALL_SHARE = 0.1  # a pass this much worse than the best so far ends the passes


def rms_error(error: np.ndarray) -> float:
    """The RMS length of errors (N, 2), metres (0 without samples)."""
    return float(np.sqrt(np.mean(np.sum(error ** 2, axis=1)))) if len(error) else 0.0


class _Mixer:
    """Anderson acceleration of the fixed-point passes x <- x + f(x): the next step also uses
    how the last few steps changed the correction (a secant model of the multibody response),
    which the cart-table model alone gets wrong by the legs' and arms' own dynamics."""

    def __init__(self, memory: int):
        self.memory = memory
        self.xs: list[np.ndarray] = []
        self.fs: list[np.ndarray] = []

    def step(self, x: np.ndarray, f: np.ndarray) -> np.ndarray:
        self.xs, self.fs = (self.xs + [x.ravel().copy()])[-self.memory - 1:], (self.fs + [f.ravel().copy()])[-self.memory - 1:]
        if len(self.xs) < 2:
            return f
        dx = np.diff(np.array(self.xs), axis=0).T
        df = np.diff(np.array(self.fs), axis=0).T
        gamma = np.linalg.lstsq(df, f.ravel(), rcond=1e-8)[0]
        return (f.ravel() - (dx + df) @ gamma).reshape(f.shape)
