"""A motion library made from the bundled clips: each BVH cut into pieces of a few seconds.

Text-level cuts (the HIERARCHY kept, the MOTION rows split), so every piece is a real BVH file
that any reader takes; used by tests/core/test_library.py and bench/bench_batch.py.
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIPS = [ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh", ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"]


def cut_bvh(path: Path, seconds: float) -> list[tuple[str, list[str]]]:
    """(header through 'Frame Time', rows) of each piece of `seconds` (the last piece may be shorter)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    frames_at = next(i for i, line in enumerate(lines) if line.strip().lower().startswith("frames:"))
    frame_time = float(lines[frames_at + 1].split(":")[1])
    rows = [line for line in lines[frames_at + 2:] if line.strip()]
    size = max(1, int(round(seconds / frame_time)))
    pieces = []
    for start in range(0, len(rows), size):
        chunk = rows[start:start + size]
        header = "\n".join(lines[:frames_at] + [f"Frames: {len(chunk)}", lines[frames_at + 1]])
        pieces.append((header, chunk))
    return pieces


def make_library(folder: Path, count: int, seconds: float = 5.0) -> list[Path]:
    """`count` clip files in `folder`, cycling over the pieces of the bundled clips."""
    pieces = [(clip.stem, k, piece) for clip in CLIPS for k, piece in enumerate(cut_bvh(clip, seconds))]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(count):
        stem, k, (header, rows) = pieces[n % len(pieces)]
        path = folder / f"{n:04d}_{stem}_{k}.bvh"
        path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
