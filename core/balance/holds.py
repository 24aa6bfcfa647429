"""A clip that holds its first or last pose (standing before and after a walk, bench/bench_gait.py's
10 s clip) walks the gait of the clip without its holds, the robot standing over each (issue 12).

Planned and balanced with its holds, the H1's 10 s clip was a chaotic draw (worst margin -27 to +5 mm from
four starts that differ by rounding, session 16): the lateral programme carried the standing ends' long
double supports across the clip, and the passes turned that millimetre of path into centimetres of ZMP.
Without its holds the clip is the walk, so its gait is the walk's. The walk's gait does not start still,
though (the person is mid-stride: the G1's CoM at 0.28 m/s), so over each hold the robot stands with its feet
and arms still while its waist runs up into the walk (out of it), by multibody passes that fade out over the
walk's first (last) second. Holds inside a clip (a one-leg pose) keep the whole path.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..feet.contacts import Contacts
from ..model.kinematics import KinematicTree
from ..model.transforms import pose_matrices
from ..motion.source import SourceMotion, held_frames
from .correction import ANDERSON_MEMORY, Balanced, CorrectionSettings, Corrector, _Mixer, rms_error
from .foot_path import FootPath, SwingKnots
from .inertia import MassModel, multibody_zmp
from .phases import Swing
from .plan import GaitPlan
from .preview import PreviewGains, PreviewSettings, follow_zmp


@dataclass(frozen=True)
class EndHolds:
    """Frames a clip holds its first pose after frame 0 (lead) and its last pose before its last frame
    (trail), each a hold longer than core.retarget.pipeline.HELD_S; 0 where it does not."""

    lead: int
    trail: int
    frames: int  # the whole clip's

    def __bool__(self) -> bool:
        return bool(self.lead or self.trail)

    @property
    def inner(self) -> slice:
        """The clip's frames without its holds, each held pose once."""
        return slice(self.lead, self.frames - self.trail)


def end_holds(motion: SourceMotion, longer_s: float) -> EndHolds:
    """The holds at a clip's ends (core.motion.source.held_frames): none for a clip held throughout
    (nothing but a pose: no walk to stand around) or one whose pose is never held."""
    held = held_frames(motion, longer_s)
    frames = motion.frames
    moving = np.flatnonzero(~held[1:]) + 1  # frames after the first that are in no hold
    if len(moving) == 0:
        return EndHolds(0, 0, frames)
    lead = int(moving[0]) - 1 if held[1] else 0  # frames 0..lead are the first pose
    trail = frames - 1 - int(moving[-1]) if held[-1] else 0  # the last trail+1 frames the last pose
    if frames - lead - trail < 2:
        return EndHolds(0, 0, frames)
    return EndHolds(lead, trail, frames)


def inner_contacts(contacts, holds: EndHolds, resolve: Callable[[object], Contacts | None]):
    """The contacts for the clip without its holds: "auto" and "off" as they are (detected on the walk,
    which the detector reads as the walk: on the held clip it read another one), given flags sliced
    (resolve(contacts): them as Contacts over the whole clip, core.feet.report.resolve_contacts)."""
    if isinstance(contacts, str) or contacts is None:
        return contacts
    given: Contacts | None = resolve(contacts)
    return None if given is None else given.sliced(holds.inner.start, holds.inner.stop)


def _later(warnings: list[str], shift_s: float) -> None:
    """Warnings about the clip without its holds, their times ("1.04-1.07 s") put on the whole clip's."""
    def shifted(match: re.Match) -> str:
        return f"{float(match[1]) + shift_s:.2f}-{float(match[2]) + shift_s:.2f} s"
    warnings[:] = [re.sub(r"(\d+\.\d+)-(\d+\.\d+) s\b", shifted, warning) for warning in warnings]


def stand_over_holds(tree: KinematicTree, plan: GaitPlan, balanced: Balanced, model: MassModel, lead_s: float,
                     samples: int, preview: PreviewSettings, settings: CorrectionSettings,
                     warnings: list[str]) -> tuple[GaitPlan, Balanced]:
    """The gait (plan, balanced) of the clip without its holds, over the whole clip's samples (samples, from
    0 every plan period): the robot stands over the first lead_s (rounded to a whole cycle) in the gait's first
    pose and to the end in its last, its feet, arms and waist's rotation and height held, the waist running up
    into the gait's motion and settling out of it (_run_up). Times shift by the lead; the multibody ZMP and CoM
    are measured again on the padded motion, as the balance readout of the written CSV measures them, and the
    cart-table ZMP on the padded target; the walk's warnings (changed in place) name the whole clip's times."""
    period = float(plan.times[1] - plan.times[0]) if len(plan.times) > 1 else preview.period_s
    inner = len(plan.times)
    lead = min(int(round(lead_s / period)), samples - inner)
    trail = samples - inner - lead
    shift = lead * period
    times = np.arange(samples) * period
    _later(warnings, shift)

    def pad(values: np.ndarray) -> np.ndarray:
        return np.concatenate([np.repeat(values[:1], lead, axis=0), values, np.repeat(values[-1:], trail, axis=0)])

    paths = {link: _shifted_path(path, times, shift, pad) for link, path in plan.paths.items()}
    swings = {side: [Swing(s.foot, s.lift_off_s + shift, s.touch_down_s + shift) for s in items]
              for side, items in plan.swings.items()}
    target = pad(plan.target)
    padded = replace(plan, times=times, paths=paths, swings=swings, root_rot=pad(plan.root_rot),
                     height=pad(plan.height), q=pad(plan.q), target=target)
    q, root_position = pad(balanced.q), pad(balanced.root_position)
    inside = min(int(round(RUN_UP_S / period)), inner // 2)  # the run-ups' windows do not meet
    for span in (slice(0, lead), slice(lead + inner, samples)):
        if span.stop > span.start and inside > 1:
            _run_up(tree, padded, model, settings, q, root_position, span, inside, balanced.com_height_m)
    zmp, com = multibody_zmp(tree, q, pose_matrices(padded.root_rot, root_position), 1.0 / period, model=model)
    com_path, cart_zmp = follow_zmp(target, preview)
    com_path[lead:lead + inner] = balanced.com_path
    return padded, replace(balanced, q=q, root_position=root_position, com_path=com_path, cart_zmp=cart_zmp,
                           zmp=zmp, com=com)


RUN_UP_S = 1.0  # the gait's first (last) second, which the run-up from standing (to standing) may move: the G1's
#                10 s clip, passes 12 / 16 / 16: 0.5 s 7.2 mm RMS over the run-up (they diverge), 1.0 s 1.9 mm, 1.5 s
#                worst margin +18.3 against +19.8 mm (session 16)
RUN_UP_PASSES = 16
MEASURED_PAST_S = 0.3  # the ZMP of a run-up measured this far past it (the low-pass's edge is not its)


def _run_up(tree: KinematicTree, plan: GaitPlan, model: MassModel, settings: CorrectionSettings, q: np.ndarray,
            root_position: np.ndarray, hold: slice, inside: int, com_height: float) -> None:
    """The waist moved over a hold and the gait's `inside` samples next to it (q, root_position and, for the
    rolled waist, plan.root_rot changed in place) by multibody passes (as correction.refine, Kajita et al. 2003)
    until the ZMP follows the target: the gait starts (ends) moving (the G1 walk's CoM at 0.28 m/s, its wrist at
    10 rad/s: the person is mid-stride), which from (to) standing takes a run-up, the feet where they stand and
    the rest of the body held. The corrections fade out over the gait's samples, so the walk beyond is its own."""
    period = float(plan.times[1] - plan.times[0])
    samples = len(plan.times)
    leading = hold.start == 0
    window = slice(0, hold.stop + inside) if leading else slice(hold.start - inside, samples)
    fade = 0.5 + 0.5 * np.cos(np.linspace(0.0, np.pi, inside))  # 1 at the hold, 0 a run-up away
    free = np.r_[np.ones(hold.stop - hold.start), fade] if leading else np.r_[fade[::-1], np.ones(hold.stop - hold.start)]
    past = int(round(MEASURED_PAST_S / period))
    measured = slice(max(0, window.start - past), min(samples, window.stop + past))  # the passes move the window
    inner = slice(window.start - measured.start, window.stop - measured.start)
    free = np.r_[np.zeros(inner.start), free, np.zeros(measured.stop - measured.start - inner.stop)][:, None]
    corrector = Corrector(tree, plan.legs, model, {link: path.poses[measured] for link, path in plan.paths.items()},
                          {link: path.down[measured] for link, path in plan.paths.items()}, plan.root_rot[measured],
                          root_position[measured, 2].copy(), q[measured].copy(), period, settings, plan.level_tol,
                          plan.rolled)
    preview = PreviewSettings(period, com_height, settings.q, settings.r, settings.preview_s)
    gains = PreviewGains.build(preview)
    moved, placed = q[measured].copy(), root_position[measured].copy()
    xy = placed[:, :2].copy()
    mixer = _Mixer(ANDERSON_MEMORY)
    best = None
    for index in range(RUN_UP_PASSES):
        zmp, _ = corrector.zmp(moved, placed)  # the readout's, the links no leg moves weighed once
        error = plan.target[measured] - zmp
        score = rms_error(error[inner])
        if best is None or score < best[0]:
            best = (score, moved[inner], placed[inner], corrector.root_rot[inner])
        if score < settings.tolerance_m or index == RUN_UP_PASSES - 1:
            break
        correction, _ = follow_zmp(error[inner], preview, gains)
        xy[inner] += mixer.step(xy[inner], settings.gain * correction * free[inner])
        moved, placed = corrector.solve(moved, xy, quick=True, span=inner)
    _, q[window], root_position[window], plan.root_rot[window] = best


def _shifted_path(path: FootPath, times: np.ndarray, shift: float, pad) -> FootPath:
    """A foot's path over the padded samples: standing where it stood at the gait's ends, its swings'
    knots later by shift."""
    swings = [SwingKnots(knots.times + shift, knots.poses, list(knots.kinds)) for knots in path.swings]
    return FootPath(path.side, times, pad(path.poses), pad(path.down), path.body, swings, pad(path.placed))
