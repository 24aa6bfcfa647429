"""A foot lifts off where its leg lets go of the ground, and lands where the leg reaches it, within
the clip frame its contact ends or starts on (issue 12).

Contacts are flags on the clip's frames: a foot flagged down on one frame and up on the next left
the ground somewhere between the two, which at 30 Hz is 33 ms. The gait's stance ran to the end of
that frame while the waist (the bake's, on the same frames) already rose and went on toward the
front foot: a rear leg straight by then dragged its foot, rolled onto its toe edge, off the ground
over the last cycles of its "stance" (the walk resampled to 30 Hz onto the G1: a 13.4 mm slide;
at 120 Hz the frame is 8 ms and the same leg kept its knee bent), and the waist's height fitted
for such cycles fought the height the next stance needs, each round of the fit undoing the last
(a rear foot at its ankle's limit asking 2 cm up, the front leg straight 5 ms later asking 2 cm
down: the walk resampled in memory to 30 Hz stood on neither foot at 2.43-2.57 s). So where a foot that is down is not
where its goal is while the other foot is down, over the cycles next to its lift-off (touch-down)
within that frame, after (before) cycles where it stands, its swing starts (ends) there instead; a
foot that does not stand there either (the H1's, off their goals through whole stances) keeps its
times.
"""
from __future__ import annotations

import numpy as np

from ..model.transforms import pose_matrices
from .correction import STAND_TOL_M, TURN_TOL_RAD, Corrector, air_share
from .foot_path import FootPath
from .legs import pose_errors
from ..feet.contacts import Contacts
from .phases import Swing


def swing_where_feet_let_go(corrector: Corrector, q: np.ndarray, root_pos: np.ndarray, paths: dict[int, FootPath],
                            swings: dict[str, list[Swing]], limits: dict[str, list[tuple[float, float]]]) -> int:
    """Move each lift-off earlier over the cycles just before it, and each touch-down later over
    those just after it, where the foot, though down, is not where its goal is (q (N, n) the legs
    solved under the waist at root_pos (N, 3)) while the other feet are down, to a cycle where it
    stands; limits: per side and swing, the earliest lift-off and the latest touch-down (s). The
    paths' down flags and swing knots, the swings' times and the corrector's air shares change in
    place. Returns how many lift-offs and touch-downs moved."""
    moved = 0
    for leg in corrector.legs:
        path = paths[leg.foot]
        ends = _stance_ends(path.times, swings[path.side], limits[path.side])
        rows = np.unique(np.concatenate([np.r_[np.arange(lowest, last + 1), np.arange(first, highest + 1)]
                                         for last, first, lowest, highest in ends] or [np.zeros(0, int)]))
        rows = rows[(rows >= 0) & (rows < len(q))]
        if not len(rows):
            continue
        miss, tilt, turn = pose_errors(corrector.tree, [leg], q[rows], pose_matrices(corrector.root_rot[rows],
                                       root_pos[rows]), {leg.foot: path.poses[rows]})
        loose = np.zeros(len(q), dtype=bool)  # only the cycles next to the swings are looked at
        loose[rows] = (miss >= STAND_TOL_M) | (tilt >= corrector.level_tol) | (turn >= TURN_TOL_RAD)
        held = np.all([other.down for link, other in paths.items() if link != leg.foot], axis=0)
        changed = False
        for knots, swing, (last, first, lowest, highest) in zip(path.swings, swings[path.side], ends):
            lift, touch = last, first
            while lift > lowest and path.down[lift] and loose[lift] and held[lift]:
                lift -= 1
            while touch < highest and path.down[touch] and loose[touch] and held[touch]:
                touch += 1
            if loose[lift] or not path.down[lift]:  # a foot that did not stand before is not letting go
                lift = last
            if loose[touch] or not path.down[touch]:
                touch = first
            if lift < last:
                path.down[lift + 1:last + 1] = False
                swing.lift_off_s = knots.times[0] = float(path.times[lift])
            if touch > first:
                path.down[first:touch] = False
                swing.touch_down_s = knots.times[-1] = float(path.times[touch])
            if lift < last or touch > first:
                path.refresh([knots])
                changed = True
                moved += (lift < last) + (touch > first)
        if changed:
            corrector.down[leg.foot] = path.down
            corrector.air_share[leg.foot] = air_share(path.down, corrector.period)
    return moved


def _stance_ends(times: np.ndarray, swings: list[Swing], limits: list[tuple[float, float]]) -> list[tuple[int, ...]]:
    """Per swing, cycles (indices into times (N,) s): the stance's last before it, its first after it
    (a foot is down outside (lift-off, touch-down)), the earliest the lift-off may move to and the
    latest the touch-down may."""
    return [(int(np.searchsorted(times, swing.lift_off_s + 1e-9)) - 1,
             int(np.searchsorted(times, swing.touch_down_s - 1e-9)),
             int(np.searchsorted(times, earliest - 1e-9)), int(np.searchsorted(times, latest + 1e-9)) - 1)
            for swing, (earliest, latest) in zip(swings, limits)]


def swing_limits(swings: dict[str, list[Swing]], given: Contacts, frame_s: float) -> dict[str, list[tuple[float, float]]]:
    """Per side and swing, the earliest lift-off and latest touch-down (s) swing_where_feet_let_go may
    move to: within the clip frame of each, and a lift-off back to the given contacts' own where the
    gait's contacts held the foot down longer for a double support (core.balance.phases.gait_contacts)
    while the person's foot was already up. The walk's left foot landing 20 frames later (262-281 taken
    out of its contact) had the right held 20 frames past its lift-off, its sole tilting 5.5 degrees
    under a leg gone on with the person. (Touch-downs moved the same way changed the walk as detected:
    its last landing one cycle later, margin 19.5 -> 18.5 mm; they stay within their frame.)"""
    out = {}
    for side, items in swings.items():
        flags = given.feet.get(side)
        out[side] = []
        for s in items:
            earliest = s.lift_off_s - frame_s
            if flags is not None:  # back over the frames the person's foot was already up
                lift = min(len(flags), max(0, int(np.floor(s.lift_off_s * given.fps + 1e-9))))
                while lift > 0 and not flags[lift - 1]:
                    lift -= 1
                earliest = min(earliest, lift / given.fps)
            out[side].append((earliest, s.touch_down_s + frame_s))
    return out
