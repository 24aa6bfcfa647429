#!/usr/bin/env python3
"""Targets cleared of the trunk before the arms' solve (core.collision.clearance): what is left inside.

Per G1/H1 clip, one warm in-process bake with avoidance on: for each arm group (an arm and its hand)
the frames inside the margin and colliding (deeper than 5 mm) right after the chain solve and just
before keep_apart, how deep; then keep_apart's wall time, its correction steps and frame-steps
(separation._Corrections.step calls and rows), and the report's colliding %, limbs and jerk.

    OMP_NUM_THREADS=1 .venv/bin/python bench/clear_targets_stages.py [hop|walk] [g1|h1] [--off] [--rounds N]
        [--roles arm,hand] [--aim M] [--twice] [--set module.NAME=value ...]

--off: pipeline.CLEAR_TARGETS False (main's avoidance); --rounds: pipeline.CLEAR_ROUNDS; --roles: which
chains of an arm group are cleared (arm, hand); --aim: clearance.AIM_M; --twice: keep_apart run again on its
own answer (its floor: what it costs where little is left inside); --set: any module constant (e.g.
core.chains.steady.STEADY_ROUNDS=1). The solve's and keep_apart's seconds are process time; repairs are
solver._repair_jumps' tracking solves and the frames they track.
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
import importlib  # noqa: E402

import core.chains.corrections as corrections  # noqa: E402
import core.chains.solver as solver  # noqa: E402
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
    parser.add_argument("--twice", action="store_true")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    pl.CLEAR_TARGETS = not args.off
    if args.rounds is not None:
        pl.CLEAR_ROUNDS = args.rounds
    if args.aim is not None:
        clearance.AIM_M = args.aim
    for assignment in args.set:
        name, value = assignment.split("=")
        module, constant = name.rsplit(".", 1)
        setattr(importlib.import_module(module), constant, type(getattr(importlib.import_module(module), constant))(
            value) if value not in ("True", "False") else value == "True")
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
    solve, keep_apart, step = pl.solve_chains, pl.keep_apart, corrections._Corrections.step
    repair, track = solver._repair_jumps, solver._Problem.solve
    seen = {"steps": 0, "rows": 0, "tracks": 0, "tracked": 0, "repairing": False}

    def solved(motion, tree, plans, root, targets, settings, progress, axes_rob, aim=None, apart=None):
        started = time.process_time()
        q = solve(motion, tree, plans, root, targets, settings, progress, axes_rob, aim, apart)
        seen["solve"] = time.process_time() - started
        inside("solved", tree, plans, q, root, apart)
        return q

    def repaired(*args, **kwargs):
        seen["repairing"] = True
        try:
            return repair(*args, **kwargs)
        finally:
            seen["repairing"] = False

    def tracked(self, x, ref, frames=None, **kwargs):
        if seen["repairing"]:
            seen["tracks"] += 1
            seen["tracked"] += len(x)
        return track(self, x, ref, frames, **kwargs)

    def separated(tree, plans, q, root, targets, settings, apart, fps):
        inside("before", tree, plans, q, root, apart)
        started = time.process_time()
        keep_apart(tree, plans, q, root, targets, settings, apart, fps)
        seen["seconds"] = time.process_time() - started
        if args.twice:
            first = dict(seen)
            seen.update(steps=0, rows=0)
            started = time.process_time()
            keep_apart(tree, plans, q, root, targets, settings, apart, fps)
            print(f"  again on its own answer: {time.process_time() - started:.3f} s CPU, {seen['steps']} steps, "
                  f"{seen['rows']} frame-steps")
            seen.update(steps=first["steps"], rows=first["rows"])

    def counted(self, out, live, *rest, **kw):
        seen["steps"] += 1
        seen["rows"] += len(live)
        return step(self, out, live, *rest, **kw)

    pl.solve_chains, pl.keep_apart, corrections._Corrections.step = solved, separated, counted
    solver._repair_jumps, solver._Problem.solve = repaired, tracked
    started = time.perf_counter()
    report = retarget(motion, tree, mapping, contacts="auto").report
    total = time.perf_counter() - started
    print(f"{args.robot} {args.clip}: bake {total:.3f} s, solve {seen['solve']:.3f} s CPU ({seen['tracks']} repair "
          f"steps, {seen['tracked']} frames tracked), keep_apart {seen['seconds']:.3f} s CPU ({seen['steps']} steps, "
          f"{seen['rows']} frame-steps); colliding "
          f"{report['self_collision_pct']:.2f} %, limbs {report['limb_direction_error_deg']:.3f} deg "
          f"{ {k: round(v, 2) for k, v in report['limb_direction_error_by_limb'].items()} }, "
          f"jerk {report['jerk_after']:,.0f}")


if __name__ == "__main__":
    main()
