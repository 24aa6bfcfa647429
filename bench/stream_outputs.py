#!/usr/bin/env python3
"""Before/after check for speed work on the live stream (issue 14): the outputs of a set of
streams (walk and hop onto G1; every predictor and placement, a library, both filters), saved
to a file, then compared with a later version's (largest difference per stream, radians and
metres). A fixed horizon is set: the default one is the measured latency, which differs run to run.

    .venv/bin/python bench/stream_outputs.py save BEFORE.npz
    .venv/bin/python bench/stream_outputs.py compare BEFORE.npz
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

import numpy as np

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import auto_map  # noqa: E402
from core.stream.predict import PredictSettings  # noqa: E402
from core.stream.session import StreamSession, StreamSettings  # noqa: E402

CLIPS = {"walk": ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh",
         "hop": ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"}
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
STREAMS = {  # name: (settings, library: the clip's first half)
    "none": (dict(predict=PredictSettings(predictor="none")), False),
    "extrapolate": (dict(predict=PredictSettings(predictor="extrapolate"), predict_ms=100.0), False),
    "match": (dict(predict=PredictSettings(predictor="match"), predict_ms=100.0), False),
    "auto_3ms": (dict(predict_ms=3.0), False),
    "auto_100ms": (dict(predict_ms=100.0), False),
    "auto_solution": (dict(predict_ms=50.0, placement="solution"), False),
    "auto_model": (dict(predict_ms=50.0, placement="model"), False),
    "auto_moving_average": (dict(predict_ms=20.0, filter="moving_average"), False),
    "match_library": (dict(predict=PredictSettings(predictor="match"), predict_ms=100.0), True),
}


def outputs(only: set[str] | None = None) -> dict[str, np.ndarray]:
    tree = KinematicTree(parse_urdf(G1))
    out = {}
    for clip_name, path in CLIPS.items():
        clip = load_bvh(path)
        mapping = auto_map(clip.to_source_motion(), tree)
        for name, (settings, library) in STREAMS.items():
            if only and f"{clip_name}/{name}" not in only:
                continue
            half = clip.frames // 2
            lib = [dataclasses.replace(clip, motion=clip.motion[:half])] if library else []
            rows = clip.motion[half:] if library else clip.motion
            session = StreamSession(clip, tree, mapping, StreamSettings(**settings), library=lib)
            frames = [session.push(f, f / clip.fps, row) for f, row in enumerate(rows)]
            out[f"{clip_name}/{name}"] = np.array([np.r_[o.pose.q, o.pose.root_position, o.pose.root_rotation.ravel()]
                                                   for o in frames])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("save", "compare"))
    parser.add_argument("file", type=Path)
    parser.add_argument("--only", help="comma-separated streams to compare (e.g. walk/auto_3ms,hop/none)")
    args = parser.parse_args()
    now = outputs(set(args.only.split(",")) if args.only else None)
    if args.mode == "save":
        np.savez(args.file, **{k.replace("/", "__"): v for k, v in now.items()})
        print(f"{len(now)} streams saved to {args.file}")
        return
    before = np.load(args.file)
    worst = 0.0
    for key, value in now.items():
        old = before[key.replace("/", "__")]
        diff = float(np.max(np.abs(old - value))) if old.shape == value.shape else np.inf
        worst = max(worst, diff)
        first = np.nonzero(np.abs(old - value).max(axis=1) > 1e-9)[0] if old.shape == value.shape else [0]
        print(f"{key:28s} largest difference {diff:.3g}" + (f" (from frame {first[0]})" if len(first) else ""))
    print(f"worst {worst:.3g}: {'within' if worst <= 1e-9 else 'NOT within'} 1e-9")
    sys.exit(0 if worst <= 1e-9 else 1)


if __name__ == "__main__":
    main()
