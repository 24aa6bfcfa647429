#!/usr/bin/env python3
"""Why the balanced walk travels less than the scaled source (issue 12's travel target), in numbers.

    .venv/bin/python bench/gait_travel.py [--robot g1|h1] [--plot /tmp/heel_off.png]   (about 2 minutes)

1. Travel: the scaled source (the actor's hips times the leg-length ratio), the gait's own bake
   planted on the gait's contacts, and the gait (its stances on the person's footprints, the
   unplanted bake's feet, each step checked with the legs) against its stances on the planted
   bake's feet, its steps not checked, and no step bound: travel and the balance figures of each.
2. Where the waist and the CoM are in each double support of the gait (share of the way from the
   rear foot to the front one, at its start and end).
3. The probe (core.balance.reach): the longest forward step the robot stands across with both
   soles flat, the waist at a share of the way from the rear foot to the front one; and with the
   rear foot rolled onto its toe edge (heel-off, core.balance.rollover) by a given angle.
--plot draws one step from the side: the legs solved for a long step with the rear heel off.

Item 1's variants swap two functions of core.balance.plan for the run (plan_stances and
check_steps): an experiment, not an option of the generator.
"""
from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.balance import plan as plan_module  # noqa: E402
from core.balance.foot_path import sole_height  # noqa: E402
from core.balance.gait import generate_gait, walkable_contacts  # noqa: E402
from core.balance.gait_report import scaled_travel  # noqa: E402
from core.balance.legs import leg_iks  # noqa: E402
from core.balance.plan import foot_sides, foot_width  # noqa: E402
from core.balance.reach import Probe  # noqa: E402
from core.balance.rollover import toe_edge  # noqa: E402
from core.balance.support import foot_bodies, foot_links  # noqa: E402
from core.feet.contacts import flags_to_intervals  # noqa: E402
from core.feet.geometry import standing_rotation  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.transforms import pose_matrices  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

FIGURES = ("travel_m", "steps_moved", "multibody_zmp_rms_error_m", "min_support_margin_m", "zmp_outside_support_pct",
           "stance_slide_m")
SHARES = (0.0, 0.15, 0.3, 0.5, 0.7, 0.85, 1.0)
TABLE_ROLLS_RAD = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
LATE_SHARE = 0.85  # the waist late in double support (measured in item 2: up to 0.86)


def _travel(pose_root: np.ndarray) -> float:
    return float(np.linalg.norm(pose_root[-1, :2] - pose_root[0, :2]))


@contextmanager
def _variant(planted_feet: bool = False, checked: bool = True, bounded: bool = True):
    """The gait with its stances on the planted bake's feet (as before RetargetResult.unplanted), or
    without check_steps, or without any step bound."""
    plan_stances, check_steps = plan_module.plan_stances, plan_module.check_steps

    def stances(clip, flags, bodies, flats, limit=None, aims=None):
        return plan_stances(clip, flags, bodies, flats, limit if bounded else None, None if planted_feet else aims)

    def check(bounds, steps, last, standing_left=None):
        return check_steps(bounds, steps, last, standing_left) if checked and bounded else np.ones(len(steps))

    plan_module.plan_stances, plan_module.check_steps = stances, check
    try:
        yield
    finally:
        plan_module.plan_stances, plan_module.check_steps = plan_stances, check_steps


def _row(name: str, report: dict) -> None:
    r = report
    print(f"  {name:52s} travel {r['travel_m']:.2f} m ({100 * r['travel_m'] / r['source_travel_m']:.0f} %), "
          f"{r['steps_moved']} moved, ZMP RMS {1000 * r['multibody_zmp_rms_error_m']:.1f} mm, worst margin "
          f"{1000 * r['min_support_margin_m']:+.1f} mm, outside {r['zmp_outside_support_pct']:.1f} %, "
          f"slide {1000 * r['stance_slide_m']:.1f} mm")


def double_supports(tree: KinematicTree, result) -> None:
    """Item 2: the waist's and CoM's share of the way from the rear foot to the front one."""
    feet = foot_links(tree)
    poses = tree.poses(result.q, pose_matrices(result.root_rotation, result.root_position), feet)
    ankles = {link: poses[link][:, :3, 3] for link in feet}
    down = {link: p[:, 2] < p[:, 2].min() + 0.003 for link, p in ankles.items()}
    both = np.logical_and.reduce(list(down.values()))
    for start, end in flags_to_intervals(both):
        if start == 0 or end >= len(both):
            continue
        rear = next(link for link in feet if not down[link][end])  # the foot that lifts next
        front = next(link for link in feet if link != rear)
        r, f = ankles[rear][start, :2], ankles[front][start, :2]
        along = (f - r) / np.linalg.norm(f - r) ** 2

        def share(x):
            return (x[start:end, :2] - r) @ along

        waist, com = share(result.root_position), share(result.com)
        print(f"  {result.time_s[start]:5.2f}-{result.time_s[end]:5.2f} s, feet {np.linalg.norm(f - r):.2f} m apart: "
              f"waist {waist[0]:.2f} -> {waist[-1]:.2f}, CoM {com[0]:.2f} -> {com[-1]:.2f}")


def probe_table(tree: KinematicTree, mapping, bake, plot: Path | None, result=None) -> None:
    """Item 3 (and the picture): the longest forward step per waist share, flat and with heel-off."""
    feet = foot_links(tree)
    bodies = dict(zip(feet, foot_bodies(tree, feet)))
    zero = tree.zero_pose()
    standing = {link: standing_rotation(bodies[link], zero[link, :3, :3]) for link in feet}
    sides = foot_sides(tree, mapping, feet)
    legs = {sides[leg.foot]: leg for leg in leg_iks(tree, feet, standing)}
    by_side = {side: link for link, side in sides.items()}
    flats = {side: standing[link] for side, link in by_side.items()}
    probe = Probe.build(tree, legs, np.median(bake.q, axis=0), float(np.median(bake.root_position[:, 2])), 0.97,
                        {s: sole_height(bodies[by_side[s]], f) for s, f in flats.items()},
                        min(foot_width(bodies[link], standing[link]) for link in feet), flats)
    lengths = np.linspace(0.0, 0.8, 33)
    offsets = lengths[:, None] * probe.forward - probe.natural * probe.left  # the right foot ahead of the left

    def longest(ok: np.ndarray) -> float:
        failed = np.flatnonzero(~ok)
        return float(lengths[max((failed[0] - 1) if len(failed) else len(lengths) - 1, 0)])

    edge = toe_edge(bodies[by_side["left"]], flats["left"], probe.forward)
    print(f"  at waist height {probe.height:.2f} m (the bake's median), feet {probe.natural:.2f} m apart as built")
    for share in SHARES:
        print(f"  waist {share:.2f} of the way to the front foot, both soles flat: "
              f"{longest(probe.trial(offsets, np.full(len(lengths), share))):.3f} m forward")
    for roll in TABLE_ROLLS_RAD[1:]:
        ok = probe.trial(offsets, np.full(len(lengths), LATE_SHARE), {"left": (edge, np.full(len(lengths), roll))})
        print(f"  waist {LATE_SHARE:.2f} of the way, rear heel off {np.degrees(roll):4.1f} degrees: "
              f"{longest(ok):.3f} m forward")
    if plot is not None:
        _draw(tree, probe, edge, legs, plot, result)


def _draw_gait_step(tree: KinematicTree, result, axis) -> None:
    """The gait's step with the largest heel-off, from the side: the rear foot's sole every 25 ms from
    0.2 s before its lift-off to 0.1 s after (light to dark), the front foot, and both legs at lift-off."""
    feet = foot_links(tree)
    root = pose_matrices(result.root_rotation, result.root_position)
    poses = tree.poses(result.q, root, feet)
    bodies = {body.link: body for body in foot_bodies(tree, feet)}
    best = (0.0, None, 0)
    for link in feet:
        sole = bodies[link].world(poses[link]) - np.array([0.0, 0.0, 1.0]) * bodies[link].radius[:, None]
        toe, heel = sole[..., 2].min(axis=1), sole[..., 2].max(axis=1)
        lifted = np.where(toe < 0.001, heel, 0.0)  # heel up, toe edge on the ground
        i = int(np.argmax(lifted))
        if lifted[i] > best[0]:
            best = (float(lifted[i]), link, i)
    _, rear, i = best
    if rear is None:
        axis.set_title("no heel-off in this gait")
        return
    front = next(link for link in feet if link != rear)
    forward = poses[rear][i, :2, :3] @ np.array([1.0, 0.0, 0.0])
    forward = forward / np.linalg.norm(forward)
    origin = poses[rear][i, :2, 3]
    steps = np.arange(max(0, i - 30), min(len(result.q), i + 30), 5)
    for k, j in enumerate(steps):
        for link, colour in ((rear, "tab:blue"), (front, "tab:orange")):
            sole = bodies[link].world(poses[link][j:j + 1])[0]
            along = (sole[:, :2] - origin) @ forward
            order = np.argsort(along)
            axis.plot(along[order], sole[order, 2] - bodies[link].radius[order], "-",
                      color=colour, alpha=0.25 + 0.75 * k / max(1, len(steps) - 1))
    for link, colour in ((rear, "tab:blue"), (front, "tab:orange")):
        leg = next(leg for leg in leg_iks(tree, feet) if leg.foot == link)
        chain = [leg.base] + list(leg.links)
        chain_poses = tree.poses(result.q[i:i + 1], root[i:i + 1], chain)
        points = np.array([chain_poses[c][0, :3, 3] for c in chain])
        axis.plot((points[:, :2] - origin) @ forward, points[:, 2], "-o", color=colour, ms=3)
    axis.axhline(0.0, color="k", lw=0.8)
    axis.set_aspect("equal")
    axis.set_xlabel("forward (m)")
    axis.set_ylabel("height (m)")
    axis.set_title(f"the gait at {result.time_s[i]:.2f} s: rear foot (blue) rolling onto its toe\n"
                   f"every 25 ms, {result.time_s[steps[0]]:.2f}-{result.time_s[steps[-1]]:.2f} s", fontsize=9)


def _draw(tree: KinematicTree, probe: Probe, edge, legs, path: Path, result=None) -> None:
    """One step from the side: the gait's own step with heel-off; the probe's long step, the waist
    late in double support, the rear heel off by the smallest angle that stands; and flat."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    length = 0.5
    offset = (length * probe.forward - probe.natural * probe.left)[None]
    figure, axes = plt.subplots(1, 3, figsize=(16, 5))
    if result is not None:
        _draw_gait_step(tree, result, axes[0])
    axes = axes[1:]
    for axis, rolls in zip(axes, (TABLE_ROLLS_RAD[1:], (0.0,))):
        for roll in rolls:
            ok, q, root = probe.trial(offset, np.array([LATE_SHARE]), {"left": (edge, np.array([roll]))}, solved=True)
            if ok[0]:
                break
        for side, colour in (("left", "tab:blue"), ("right", "tab:orange")):
            leg = legs[side]
            chain = [leg.base] + list(leg.links)
            poses = tree.poses(q, root, chain)
            points = np.array([poses[link][0, :3, 3] for link in chain])
            along = points[:, :2] @ probe.forward
            axis.plot(along, points[:, 2], "-o", color=colour, label=f"{side} leg")
            body = foot_bodies(tree, [leg.foot])[0]
            sole = body.world(poses[leg.foot])[0]
            axis.plot(sole[:, :2] @ probe.forward, sole[:, 2] - body.radius, "s", color=colour, ms=4)
        axis.axhline(0.0, color="k", lw=0.8)
        axis.set_aspect("equal")
        axis.set_xlabel("forward (m)")
        axis.set_title(f"{length:.2f} m step, waist {LATE_SHARE:.2f} of the way: rear heel "
                       f"{'off ' + format(np.degrees(roll), '.0f') + ' deg' if roll else 'flat'} "
                       f"({'stands' if ok[0] else 'does not stand'})", fontsize=9)
        axis.legend(loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"  wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="g1", choices=sorted(clips.ROBOTS))
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()
    walk = clips.load(clips.WALK)
    tree = KinematicTree(parse_urdf(clips.ROBOTS[args.robot]))
    mapping = auto_map(walk, tree)
    flags = walkable_contacts(walk, mapping, "auto", [])
    bake = retarget(walk, tree, mapping, contacts=flags, figures=False)
    plain = retarget(walk, tree, mapping, contacts="off", figures=False)
    print(f"1. travel on the bundled walk onto {args.robot}")
    print(f"  scaled source {scaled_travel(walk, mapping, bake.report.get('root_scale')):.2f} m; unplanted bake's root "
          f"{_travel(plain.root_position):.2f} m; the gait's bake, planted on its contacts, {_travel(bake.root_position):.2f} m")
    result = generate_gait(walk, tree, mapping)
    _row("the gait as it is", result.report)
    for name, variant in (("stances on the planted bake's feet", dict(planted_feet=True)),
                          ("the same, steps not checked with the legs (before)", dict(planted_feet=True, checked=False)),
                          ("the person's footprints, steps not checked", dict(checked=False)),
                          ("the person's footprints, no step bound", dict(bounded=False))):
        with _variant(**variant):
            _row(name, generate_gait(walk, tree, mapping).report)
    print("2. the gait's double supports: share of the way from the rear foot to the front one")
    double_supports(tree, result)
    print("3. the probe: longest forward step standing")
    probe_table(tree, mapping, bake, args.plot, result)


if __name__ == "__main__":
    main()
