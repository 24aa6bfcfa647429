"""The waist's turn against the feet it stands on: inside what the legs' hip-yaw joints allow.

A person pivots on a planted foot and turns the body far past it (a dance turn); a robot
whose foot stays flat and still on the ground can turn its waist only as far as its leg's
vertical joint reaches. Each sample's waist heading is held inside the headings every foot
that is down allows (with a margin), the change low-passed so the waist still turns
smoothly; the turn then happens at the next step, as a robot would make it.
"""
from __future__ import annotations

import numpy as np

from ..model.kinematics import KinematicTree
from ..model.same_bits import same_bits
from ..model.transforms import axis_angle_to_matrix
from ..motion.filtering import butterworth_lowpass
from .legs import LegIK

YAW_MARGIN = 0.8  # share of a hip-yaw joint's range the waist may use
MAX_TWIST_RAD = np.pi / 4  # and never more than a person's hip turns, whatever the joint allows
TURN_SMOOTH_HZ = 2.0
TURN = 2.0 * np.pi


def heading(rotation: np.ndarray) -> np.ndarray:
    """Heading about world z (…,) of rotations (…, 3, 3): where their x axis points on the ground."""
    return same_bits(np.arctan2, rotation[..., 1, 0], rotation[..., 0, 0])  # strided: see core.model.same_bits


def yaw_bounds(tree: KinematicTree, leg: LegIK, share: float = YAW_MARGIN) -> tuple[float, float]:
    """(lowest, highest) heading of the foot relative to the waist that the leg's vertical
    joint allows, `share` of its range; a leg without one gets no turn at all."""
    if leg.twist < 0:
        return 0.0, 0.0
    col = leg.columns[leg.twist]
    low, high = np.sort(leg.twist_sign * np.array([tree.lower[col], tree.upper[col]]))
    return float(max(share * low, -MAX_TWIST_RAD)), float(min(share * high, MAX_TWIST_RAD))


def wrap(angle: np.ndarray) -> np.ndarray:
    """Angles into [-pi, pi). numpy's float remainder is slow (a divmod an element); an angle already
    within a turn of -pi gets the same bits without it (its remainder is itself), and one within a turn
    either side its remainder's bits by one sum (Sterbenz: fmod's x - 2 pi is exact there, and below 0
    the remainder is fmod's x plus 2 pi, one rounded sum): the hip aims' far solution, a quarter of its angles."""
    shifted = angle + np.pi
    if np.ndim(shifted) == 0:
        return shifted % TURN - np.pi
    low, high = shifted < 0.0, shifted >= TURN
    if not (low | high).any():
        return shifted - np.pi
    if shifted.dtype != np.float64 or ((shifted < -TURN) | (shifted >= 2.0 * TURN)).any():
        return np.where(low | high, shifted % TURN, shifted) - np.pi
    shifted += low * TURN - high * TURN  # + 2 pi, - 2 pi or + 0 (exact: the products of 0 and 1)
    return shifted - np.pi


def held_headings(waist: np.ndarray, feet: list[tuple[np.ndarray, np.ndarray, tuple[float, float]]]) -> np.ndarray:
    """Waist headings (N,) held inside what each down foot allows: feet are (foot heading (N,),
    down (N,), (low, high) bounds of foot minus waist heading)."""
    out = waist.copy()
    low = np.full(len(waist), -np.inf)
    high = np.full(len(waist), np.inf)
    for foot, down, (lo, hi) in feet:
        centre = wrap(foot - (lo + hi) / 2.0 - waist)  # the waist may sit in [foot - hi, foot - lo]
        half = (hi - lo) / 2.0
        low = np.where(down, np.maximum(low, centre - half), low)
        high = np.where(down, np.minimum(high, centre + half), high)
    bounded = np.isfinite(low)
    empty = bounded & (low > high)
    shift = np.where(bounded, np.clip(0.0, low, high), 0.0)
    shift = np.where(empty, (low + high) / 2.0, shift)
    return out + shift


def limit_turn(root_rot: np.ndarray, feet: list[tuple[np.ndarray, np.ndarray, tuple[float, float]]],
               rate_hz: float) -> np.ndarray:
    """Waist rotations (N, 3, 3) turned about world z so their heading stays where the down feet
    allow; the turn added is smooth (low-passed at TURN_SMOOTH_HZ)."""
    waist = np.unwrap(heading(root_rot))
    change = held_headings(waist, feet) - waist
    if len(change) > 16 and TURN_SMOOTH_HZ < 0.45 * rate_hz:
        change = butterworth_lowpass(change[:, None], rate_hz, TURN_SMOOTH_HZ, order=2)[:, 0]
    return axis_angle_to_matrix(np.array([0.0, 0.0, 1.0]), change) @ root_rot


def keep_tilt(rotation: np.ndarray, share: float) -> np.ndarray:
    """Rotations (N, 3, 3) with `share` of their tilt from upright (0: an upright waist at the
    same heading; 1: unchanged): a pelvis leaning like the person's costs the legs reach."""
    up = rotation[:, 2, :]  # the world's up in the waist's frame (rows are world axes)
    axis = np.cross(np.array([0.0, 0.0, 1.0]), up)
    sin = np.linalg.norm(axis, axis=1)
    angle = same_bits(np.arctan2, sin, up[:, 2])
    axis = np.where(sin[:, None] > 1e-12, axis / np.maximum(sin, 1e-12)[:, None], [1.0, 0.0, 0.0])
    # turning the waist by (1 - share) of its tilt about its own axis brings its up toward the world's
    return rotation @ axis_angle_to_matrix(axis, (1.0 - share) * angle)


MAX_RISE_ACCELERATION = 0.3 * 9.81  # m/s^2: the waist rises and drops no harder (the feet must stay pressed)


def calm_height(height: np.ndarray, rate_hz: float, limit: float = MAX_RISE_ACCELERATION) -> np.ndarray:
    """The waist's height (N,) low-passed until it accelerates up or down by at most `limit`:
    a person dropping into a crouch nearly falls freely, which would lift a robot's feet."""
    out = height
    cutoff = 4.0
    while len(height) > 16 and cutoff > 0.05:
        acc = np.gradient(np.gradient(out, 1.0 / rate_hz), 1.0 / rate_hz)
        if np.abs(acc[2:-2]).max() <= limit:
            break
        out = butterworth_lowpass(height[:, None], rate_hz, cutoff, order=2)[:, 0]
        cutoff *= 0.8
    return out


def undipped_height(planted: np.ndarray, person: np.ndarray, counted: np.ndarray | None = None) -> np.ndarray:
    """The planted bake's waist height (F,) metres kept from dipping below the person's (the
    unplanted bake's, F,) by more than it does as a rule (their median difference): planting pins
    a foot the person swings and pulls the waist down to reach it, a dip no step of the gait needs
    (the H1 walk: 0.76-0.80 m at 6.0-6.4 s where the person's stays at 1.01-1.06 m). The person's
    own crouches are kept. counted: (F,) the frames the rule is taken over (a held pose once: the 10 s
    clip's held ends moved it 14 mm)."""
    apart = person - planted
    floor = person - float(np.median(apart if counted is None else apart[counted]))
    return np.maximum(planted, floor)
