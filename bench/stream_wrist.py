#!/usr/bin/env python3
"""The G1's wrists on the live path (prediction and filter off): the walk streamed at 60 Hz against
120 Hz, and each clip streamed at its own rate against the default bake; the frames whose wrists are
over 0.1 / 1 rad apart (1 rad: another branch of the hand's free turn) and the median; then the CPU
of the hands' step per frame (core.stream.wrist.hold_free_turn against core.chains.frame.solve_frame
at budget 2, the step it replaces, on the same inputs, interleaved, least of 7).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/stream_wrist.py [--cpu]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import core.stream.retargeter as stream_retargeter  # noqa: E402
from core.chains.frame import solve_frame  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402
from core.stream.predict import PredictSettings  # noqa: E402
from core.stream.session import StreamSession, StreamSettings  # noqa: E402
from tests import variants  # noqa: E402

CLIPS = {"walk": ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh",
         "hop": ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"}
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
RAW = dict(predict=PredictSettings(predictor="none"), filter="none")


def streamed(clip, tree, mapping) -> np.ndarray:
    session = StreamSession(clip, tree, mapping, StreamSettings(**RAW))
    return np.array([session.push(f, f / clip.fps, clip.motion[f]).pose.q for f in range(clip.frames)])


def apart(tree: KinematicTree, a: np.ndarray, b: np.ndarray, skip: int) -> str:
    cols = [k for k, n in enumerate(tree.joint_names) if "wrist" in n]
    d = np.abs(a[:, cols] - b[:, cols]).max(axis=1)[skip:len(a) - skip]
    return (f"max {d.max():.3f} rad, over 0.1 / 1 rad on {100 * np.mean(d > 0.1):.0f} / {100 * np.mean(d > 1.0):.1f} % "
            f"of {len(d)} frames, median {np.median(d):.3f} rad")


def hands_cpu(tree, clip, mapping) -> str:
    calls = []
    step = stream_retargeter.hold_free_turn

    def kept(*args):
        calls.append([a.copy() if isinstance(a, np.ndarray) else a for a in args])
        step(*args)

    stream_retargeter.hold_free_turn = kept
    try:
        streamed(clip, tree, mapping)
    finally:
        stream_retargeter.hold_free_turn = step
    old, new = [], []
    for _ in range(7):
        begin = time.process_time()
        for fk, anchor, q, targets, weights, options, previous, lower, upper, pull in calls:
            solve_frame(fk, lower, upper, anchor, q.copy(), targets, weights, options, previous, 2, None, check=False)
        old.append(time.process_time() - begin)
        begin = time.process_time()
        for fk, anchor, q, targets, weights, options, previous, lower, upper, pull in calls:
            step(fk, anchor, q.copy(), targets, weights, options, previous, lower, upper, pull)
        new.append(time.process_time() - begin)
    return (f"hands' step per frame: solve_frame {1e6 * min(old) / len(calls):.1f} us, hold_free_turn "
            f"{1e6 * min(new) / len(calls):.1f} us ({len(calls)} frames, least of 7)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu", action="store_true", help="also time the hands' step")
    args = parser.parse_args()
    g1 = KinematicTree(parse_urdf(G1))
    for name, path in CLIPS.items():
        clip = load_bvh(path)
        motion = clip.to_source_motion()
        mapping = auto_map(motion, g1)
        q = streamed(clip, g1, mapping)
        bake = retarget(motion, g1, mapping, contacts="auto").q
        edge = int(round(0.3 * clip.fps))
        print(f"{name} streamed vs baked: {apart(g1, q, bake, edge)}")
        if name == "walk":
            with tempfile.TemporaryDirectory() as tmp:
                half = load_bvh(variants.write_bvh(variants.resampled(clip, 60.0), Path(tmp) / "walk60.bvh"))
            slow = streamed(half, g1, mapping)
            shared = min(len(slow), (len(q) + 1) // 2)
            print(f"walk streamed at 60 vs 120 Hz: {apart(g1, slow[:shared], q[0:2 * shared:2], edge // 2)}")
            if args.cpu:
                print(hands_cpu(g1, clip, mapping))


if __name__ == "__main__":
    main()
