"""Swing phases and flight phases from the contacts planted feet already use (core.feet).

A swing runs from a foot's lift-off to its touch-down, between two contacts of that
foot; a flight is a span where the body falls freely (a hop, a run), which a gait on
the robot's own balance cannot have: those clips are refused naming the times.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..chains.mapping import Mapping
from ..feet.contacts import Contacts, flags_to_intervals, foot_landmarks
from ..motion.filtering import butterworth_lowpass
from ..motion.source import SourceMotion
from .inertia import GRAVITY, BalanceError


@dataclass
class Swing:
    foot: str
    lift_off_s: float
    touch_down_s: float


def swing_phases(contacts: Contacts) -> dict[str, list[Swing]]:
    """Per foot, its swings between two contacts (a foot in the air at the clip's start or end
    has no lift-off or touch-down there, so that span is not a swing)."""
    out = {}
    for side, flags in contacts.feet.items():
        air = flags_to_intervals(~flags)
        out[side] = [Swing(side, start / contacts.fps, end / contacts.fps)
                     for start, end in air if start > 0 and end < len(flags)]
    return out


FALLING_G = 0.8  # the pelvis falls at this share of gravity or more: nothing holds it up
FLIGHT_MIN_S = 0.05


def flight_phases(motion: SourceMotion, pelvis: str, min_s: float = FLIGHT_MIN_S,
                  metres_per_unit: float = 1.0) -> list[tuple[float, float]]:
    """(start_s, end_s) of the spans where the actor is in the air: the pelvis (bone `pelvis`)
    falls freely (vertical acceleration below -FALLING_G g, low-passed at 6 Hz) for longer
    than min_s. Ballistic motion is the evidence; contact flags miss a foot rolling on its toe.
    Gravity is in metres: metres_per_unit is the clip's (clip_metres_per_unit)."""
    z = motion.heads[:, motion.index(pelvis), 2:3] * metres_per_unit
    if len(z) < 16:
        return []
    dt = 1.0 / motion.fps
    z = butterworth_lowpass(z, motion.fps, 6.0)[:, 0] if 6.0 < 0.45 * motion.fps else z[:, 0]
    acc = np.gradient(np.gradient(z, dt), dt)
    spans = flags_to_intervals(acc < -FALLING_G * GRAVITY)
    return [(a * dt, b * dt) for a, b in spans if (b - a) * dt > min_s]


def refuse_flight(motion: SourceMotion, pelvis: str, metres_per_unit: float = 1.0) -> None:
    """BalanceError naming the flight times of a clip the robot cannot do on its own balance."""
    flights = flight_phases(motion, pelvis, metres_per_unit=metres_per_unit)
    if flights:
        times = ", ".join(f"{a:.2f}-{b:.2f} s" for a, b in flights[:6]) + (" ..." if len(flights) > 6 else "")
        raise BalanceError(f"clip {motion.name!r} has {len(flights)} flight phase(s), the body falling freely "
                           f"({times}): a robot on its own balance cannot leave the ground; "
                           "cut the clip or use the plain bake")


ADULT_LEG_M = 0.95  # an adult's leg along its bones, hip to toe tip (CMU subject 131: 0.99 m)
UNIT_SIZES = (1.0, 0.01, 0.001)  # metres, centimetres (Mixamo, most FBX), millimetres


def clip_metres_per_unit(motion: SourceMotion, mapping: Mapping) -> float:
    """Metres per clip unit, from the actor's leg length: a BVH or FBX says nothing of its units,
    and free fall is 9.81 m/s^2 only in metres. A leg within a factor 1.6 of an adult's in
    metres, centimetres or millimetres is taken in those units (a child, a tall actor); any
    other unit (CMU's original BVH: about 17.7 per metre) is scaled to an adult's leg."""
    legs = [foot.leg_length for foot in foot_landmarks(motion, mapping).values()]
    if not legs:
        return 1.0
    leg = float(np.mean(legs))
    for size in UNIT_SIZES:
        if 1 / 1.6 <= leg * size / ADULT_LEG_M <= 1.6:
            return size
    return ADULT_LEG_M / leg


MIN_SWING_S = 0.15  # a shorter span in the air is a foot rolling on its toe, not a step
DOUBLE_SUPPORT_S = 0.2  # the robot shifts its weight between the feet over at least this long


def gait_contacts(contacts: Contacts, min_swing_s: float = MIN_SWING_S,
                  double_support_s: float = DOUBLE_SUPPORT_S,
                  heights: dict[str, np.ndarray] | None = None) -> tuple[Contacts, list[str]]:
    """Contacts a robot can walk: one foot down at every moment, and a double support of at
    least double_support_s at each step (the lift-off waits).

    Where the flags have both feet up and the body did not fall (a foot rolling on its toe,
    a late heel strike), the foot whose keeping down leaves more steps of both feet is kept down;
    where that ties, the foot lower over that time (`heights` (F,) per foot, its sole's lowest
    point in clip units), which carries the weight: not whichever side is named first (the flags
    of the same walk read back from an FBX differ by a frame, and the choice, by then the time
    left in the air, flipped and the G1's worst margin went from 19 to 11 mm)."""
    feet = {side: flags.copy() for side, flags in contacts.feet.items()}
    notes: list[str] = []
    sides = [s for s in ("left", "right") if s in feet]
    if len(sides) != 2:
        return contacts, notes
    fps = contacts.fps
    shortest = max(1, int(round(min_swing_s * fps)))
    kept: list[str] = []
    for a, b in flags_to_intervals(~feet["left"] & ~feet["right"]):
        options = []
        for side in sides:
            trial = feet[side].copy()
            trial[a:b] = True
            _fill_short_swings(trial, shortest)
            other = feet[sides[1] if side == sides[0] else sides[0]]
            # the steps of both feet that survive, then the lower foot, then the time in the air they keep
            low = -float(np.mean(heights[side][a:b])) if heights and side in heights else 0.0
            options.append((len(_swings(trial)) + len(_swings(other)), low, (~trial).sum() + (~other).sum(),
                            side, trial))
        *_, side, trial = max(options, key=lambda o: o[:3])
        feet[side] = trial
        kept.append(f"the {side} at {a / fps:.2f}-{b / fps:.2f} s")
    if kept:  # one line for the clip: a walk reads both feet up at most of its steps (toe rolls)
        notes.append("both feet are up but the body does not fall (a foot rolling on its toe, a late heel strike), "
                     "so one foot stays down: " + ", ".join(kept))
    need = max(1, int(round(double_support_s * fps)))
    for side, other in (sides, sides[::-1]):
        for start, _ in flags_to_intervals(feet[side]):  # `side` lands at `start` on the `other` foot
            if start == 0 or not feet[other][start - 1]:
                continue
            after = feet[other][start:]
            lift = start + (int(np.argmin(after)) if not after.all() else len(after))
            if lift >= len(feet[other]) or lift - start >= need:
                continue
            swing_end = lift + (int(np.argmax(feet[other][lift:])) if feet[other][lift:].any() else 0)
            later = max(lift, min(start + need, swing_end - shortest))  # the other foot lifts later
            feet[other][lift:later] = True
            missing = need - (later - start)
            air = ~feet[side][:start][::-1]  # back from the landing: how long `side` was in the air
            landing_swing = int(np.argmin(air)) if not air.all() else start
            earlier = min(missing, max(0, landing_swing - shortest))  # and `side` lands earlier
            if earlier > 0:
                feet[side][start - earlier:start] = True
    return Contacts(feet, fps), notes


def _swings(flags: np.ndarray) -> list[tuple[int, int]]:
    return [(a, b) for a, b in flags_to_intervals(~flags) if a > 0 and b < len(flags)]


def _fill_short_swings(flags: np.ndarray, shortest: int) -> None:
    for a, b in _swings(flags):
        if b - a < shortest:
            flags[a:b] = True
