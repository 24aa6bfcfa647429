"""Swing phases and flight phases from the contacts planted feet already use (core.feet).

A swing runs from a foot's lift-off to its touch-down, between two contacts of that
foot; a flight is a span where the body falls freely (a hop, a run), which a gait on
the robot's own balance cannot have: those clips are refused naming the times.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..feet.contacts import Contacts, flags_to_intervals
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


def flight_phases(motion: SourceMotion, pelvis: str, min_s: float = FLIGHT_MIN_S) -> list[tuple[float, float]]:
    """(start_s, end_s) of the spans where the actor is in the air: the pelvis (bone `pelvis`)
    falls freely (vertical acceleration below -FALLING_G g, low-passed at 6 Hz) for longer
    than min_s. Ballistic motion is the evidence; contact flags miss a foot rolling on its toe."""
    z = motion.heads[:, motion.index(pelvis), 2:3]
    if len(z) < 16:
        return []
    dt = 1.0 / motion.fps
    z = butterworth_lowpass(z, motion.fps, 6.0)[:, 0] if 6.0 < 0.45 * motion.fps else z[:, 0]
    acc = np.gradient(np.gradient(z, dt), dt)
    spans = flags_to_intervals(acc < -FALLING_G * GRAVITY)
    return [(a * dt, b * dt) for a, b in spans if (b - a) * dt > min_s]


def refuse_flight(motion: SourceMotion, pelvis: str) -> None:
    """BalanceError naming the flight times of a clip the robot cannot do on its own balance."""
    flights = flight_phases(motion, pelvis)
    if flights:
        times = ", ".join(f"{a:.2f}-{b:.2f} s" for a, b in flights[:6]) + (" ..." if len(flights) > 6 else "")
        raise BalanceError(f"clip {motion.name!r} has {len(flights)} flight phase(s), the body falling freely "
                           f"({times}): a robot on its own balance cannot leave the ground; "
                           "cut the clip or use the plain bake")
