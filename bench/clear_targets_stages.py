#!/usr/bin/env python3
"""Targets cleared of the trunk before the arms' solve (core.collision.clearance): what is left inside.

Per G1/H1 clip, one warm in-process bake with avoidance on: for each arm group (an arm and its hand)
the frames inside the margin and colliding (deeper than 5 mm) right after the chain solve and just
before keep_apart, how deep; then keep_apart's wall time, its correction steps and frame-steps
(separation._Corrections.step calls and rows), and the report's colliding %, limbs and jerk.

    OMP_NUM_THREADS=1 .venv/bin/python bench/clear_targets_stages.py [hop|walk] [g1|h1] [--off] [--rounds N]
        [--roles arm,hand] [--aim M]

--off: pipeline.CLEAR_TARGETS False (main's avoidance); --rounds: pipeline.CLEAR_ROUNDS; --roles: which
chains of an arm group are cleared (arm, hand); --aim: clearance.AIM_M.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402

import clips  # noqa: E402
import core.chains.separation as sep  # noqa: E402
import core.collision.clearance as clearance  # noqa: E402
import core.retarget.pipeline as pl  # noqa: E402
from core.collision import collision_pairs  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402


def inside(label: str, tree, plans, q, root, apart) -> None:
    """Per arm group: frames inside the margin and colliding, mean and max depth, the most frequent pairs."""
    for group in pl.room_groups(tree, plans):
        if group[0].mapping.role != "arm":
            continue
        term = apart.term([v for p in group for v in p.kin.chain.variables], root)
        dist = term.distance(q, root, apart.margin + 0.05)
        least = dist.min(axis=1)
        near, deep = least < apart.margin, least < -0.005
        model, pairs = term.model, collections.Counter()
        for f in np.flatnonzero(near):
            a, b = term.capsules[np.argmin(dist[f])]
            pairs[f"{model.body_names[model.capsule_body[a]]}/{model.body_names[model.capsule_body[b]]}"] += 1
        depth = apart.margin - least
        print(f"  {label:<7} {group[0].mapping.name:<10} inside {100 * near.mean():5.1f} %  colliding "
              f"{100 * deep.mean():5.1f} %  depth mean {1000 * depth[near].mean() if near.any() else 0:5.1f} mm "
              f"max {1000 * max(depth.max(), 0):5.1f} mm  {dict(pairs.most_common(3))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clip", nargs="?", default="hop")
    parser.add_argument("robot", nargs="?", default="g1")
    parser.add_argument("--off", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--roles", default=None)
    parser.add_argument("--aim", type=float, default=None)
    args = parser.parse_args()
    pl.CLEAR_TARGETS = not args.off
    if args.rounds is not None:
        pl.CLEAR_ROUNDS = args.rounds
    if args.aim is not None:
        clearance.AIM_M = args.aim
    if args.roles is not None:
        roles, build = set(args.roles.split(",")), clearance.TargetClearance.build.__func__
        clearance.TargetClearance.build = classmethod(
            lambda cls, tree, term, kin, margin, hand=False:
            build(cls, tree, term, kin, margin, hand) if ("hand" if hand else "arm") in roles else None)
    tree = KinematicTree(parse_urdf(clips.ROBOTS[args.robot]))
    collision_pairs(tree)
    motion = clips.load(clips.HOP if args.clip == "hop" else clips.WALK)
    mapping = auto_map(motion, tree)
    mapping.settings = replace(mapping.settings, avoid_self_collision=True)
    retarget(motion, tree, mapping, contacts="auto", figures=False)  # warm: terms, capsules
    solve, keep_apart, step = pl.solve_chains, pl.keep_apart, sep._Corrections.step
    seen = {"steps": 0, "rows": 0}

    def solved(motion, tree, plans, root, targets, settings, progress, axes_rob, aim=None, apart=None):
        q = solve(motion, tree, plans, root, targets, settings, progress, axes_rob, aim, apart)
        inside("solved", tree, plans, q, root, apart)
        return q

    def separated(tree, plans, q, root, targets, settings, apart, fps):
        inside("before", tree, plans, q, root, apart)
        started = time.perf_counter()
        keep_apart(tree, plans, q, root, targets, settings, apart, fps)
        seen["seconds"] = time.perf_counter() - started

    def counted(self, out, live, *rest, **kw):
        seen["steps"] += 1
        seen["rows"] += len(live)
        return step(self, out, live, *rest, **kw)

    pl.solve_chains, pl.keep_apart, sep._Corrections.step = solved, separated, counted
    started = time.perf_counter()
    report = retarget(motion, tree, mapping, contacts="auto").report
    total = time.perf_counter() - started
    print(f"{args.robot} {args.clip}: bake {total:.3f} s, solve {report['stage_seconds']['solve']:.3f} s, keep_apart "
          f"{seen['seconds']:.3f} s ({seen['steps']} steps, {seen['rows']} frame-steps); colliding "
          f"{report['self_collision_pct']:.2f} %, limbs {report['limb_direction_error_deg']:.3f} deg "
          f"{ {k: round(v, 2) for k, v in report['limb_direction_error_by_limb'].items()} }, "
          f"jerk {report['jerk_after']:,.0f}")


if __name__ == "__main__":
    main()
