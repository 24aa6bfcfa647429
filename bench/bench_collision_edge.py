#!/usr/bin/env python3
"""Where the avoiding bake's first frames lose the G1 walk's left arm: its limb error on the clip's
first frames after each stage of the separate stage (core.chains.separation): the shape, the
sampled room (frames 1 / SAMPLE_HZ apart, interpolated), the same room made on every frame, the
steady room's low-pass alone, the steady room, the bake's answer; and the least error each frame
alone allows (SLSQP, bench_collision_floor).

    .venv/bin/python bench/bench_collision_edge.py [--frames 12] [--clip walk|hop] [--side left]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
import core.chains.separation as separation  # noqa: E402
import core.chains.steady as steady  # noqa: E402
from bench_collision_floor import ArmFrames  # noqa: E402
from bench_collision_step import captured  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402


def staged(seen: dict, arm: ArmFrames) -> dict:
    """The arm group's columns (F, V) after each stage, the separate stage run again on what the bake
    handed it (the other groups' columns as the bake left them)."""
    stages, calls = {}, {"bounded": 0}
    sampled, keep_apart, bounded = separation._sampled_apart, separation._keep_apart, steady._bounded

    def sampled_apart(problem, sep, shape, max_step, every):
        stages["every frame"] = keep_apart(problem, sep, shape, max_step, fixes=False)
        stages["sampled"] = sampled(problem, sep, shape, max_step, every)
        return stages["sampled"]

    def first_bounded(y, lower, upper, max_step):
        out = bounded(y, lower, upper, max_step)
        if calls["bounded"] == 0:
            stages["low-passed"] = out
        calls["bounded"] += 1
        return out

    import core.retarget.pipeline as pipeline
    tree, q = seen["tree"], seen["before"].copy()
    group = next(g for g in pipeline.room_groups(tree, seen["plans"]) if g[0].mapping.name == arm.side + "_arm")
    separation._sampled_apart, steady._bounded = sampled_apart, first_bounded
    try:
        fps, rest = seen["fps"], seen["after"]
        q[:, arm.cols] = arm.q[:, arm.cols]
        mask = np.ones(q.shape[1], dtype=bool)
        mask[arm.cols] = False
        q[:, mask] = rest[:, mask]
        _separate_group(pipeline, tree, group, q, seen, fps)
    finally:
        separation._sampled_apart, steady._bounded = sampled, bounded
    stages["steady"] = q[:, arm.cols]
    return stages


def _separate_group(pipeline, tree, group, q, seen, fps) -> None:
    """pipeline.keep_apart's body for one group."""
    from core.chains.solver import SolveOptions
    from core.motion.filtering import step_limits
    settings, root, targets = seen["settings"], seen["root"], seen["targets"]
    options = SolveOptions(settings.iterations, settings.smoothness, settings.rest_prior, settings.objective)
    chains, variables = [], []
    for plan in group:
        anchor = root if plan.robot.anchor < 0 else tree.link_transform(q, plan.robot.anchor, root)
        chains.append((plan.kin, anchor, *targets[id(plan)], pipeline._viewed_limb(tree, plan)))
        variables += list(plan.kin.chain.variables)
    columns = np.concatenate([plan.kin.columns for plan in group])
    separation.separate_chains(tree, chains, q, seen["apart"].term(variables, root), options,
                               step_limits(tree.velocity[columns], fps), fps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--clip", default="walk")
    parser.add_argument("--side", default="left")
    args = parser.parse_args()
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    motion = clips.load(clips.WALK if args.clip == "walk" else clips.HOP)
    mapping, seen = captured(motion, tree)
    seen["fps"] = motion.fps  # the bake's rate: the source's
    arm = ArmFrames(motion, mapping, seen, args.side)
    arm.side = args.side
    stages = {"shape": arm.q[:, arm.cols]}
    stages.update(staged(seen, arm))
    stages["bake"] = seen["after"][:, arm.cols]
    frames = range(args.frames)
    print(f"G1 {args.clip} {args.side} arm, limb error (deg) on frames 0-{args.frames - 1}; close frames "
          f"{arm.close[:args.frames].tolist()}; clearance = least pair distance beyond the margin (mm)")
    for name, x in stages.items():
        errors = " ".join(f"{arm.error(x[f], f):5.1f}" for f in frames)
        clear = " ".join(f"{1000 * arm.clearance(x[f], f).min():5.1f}" for f in frames)
        print(f"  {name:<12} {errors}\n  {'':<12} {clear}")
    fps = seen["fps"]
    jerk = np.abs(np.diff(seen["after"][:, arm.cols], 3, axis=0)).mean(axis=1) * fps ** 3  # (F - 3,) rad/s^3
    print("  the bake's arm jerk (mean |d3q/dt3| over its joints, rad/s^3) from frame 0: "
          + " ".join(f"{j:,.0f}" for j in jerk[:args.frames]) + f"; largest {jerk.max():,.0f} on frame "
          f"{int(jerk.argmax())}, clip mean {jerk.mean():,.0f}")
    least = [arm.least(f, [arm.q[f, arm.cols], seen['after'][f, arm.cols]], 0.5) for f in frames]
    print(f"  {'least alone':<12} " + " ".join(f"{(b[0] if b else np.nan):5.1f}" for b in least))


if __name__ == "__main__":
    main()
