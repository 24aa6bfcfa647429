"""A local engine's worker: `python -m <core>.library.worker`, no Blender.

Reads the batch's options once, then one clip per line on stdin; answers each with one line on
stdout. Robots are parsed on first use and kept (core.library.batch.robot_model).
"""
from __future__ import annotations

import json
import sys

from .batch import run_clip
from .engines import RESULT, job_from_message, options_from_message


def serve(lines=sys.stdin, out=sys.stdout) -> int:
    options = None
    for line in lines:
        message = json.loads(line)
        if "options" in message:
            options = options_from_message(message)
            continue
        status = run_clip(job_from_message(message), options)
        out.write(RESULT + json.dumps(status) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(serve())
