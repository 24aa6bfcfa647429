"""The avoiding bake's stages (bench/clear_targets_stages.py) on this checkout's G1 capsules with some
bodies' capsules taken from another checkout's fit: which body's fit moves the limbs.

    OMP_NUM_THREADS=1 .venv/bin/python bench/s33_frames/swap_bodies.py DONOR_REPO BODY[,BODY...] {walk,hop} g1
    OMP_NUM_THREADS=1 .venv/bin/python bench/s33_frames/swap_bodies.py DONOR_REPO BODY[,BODY...] SCRIPT.py [ARGS]

DONOR_REPO: a checkout whose core/ fits the donor capsules (e.g. a `git archive` of main); BODY: body
names (the G1's link names, e.g. torso_link); an empty string swaps none. No disk cache is read.
SCRIPT.py: another probe run the same way (e.g. bench/s32_invar/cut_gap.py g1 hop -1 -9).
"""
from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

os.environ["ROBOT_RETARGET_CACHE"] = ""
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]

import numpy as np  # noqa: E402

import core.collision.proxies as proxies  # noqa: E402
from fit_quality import fitted  # noqa: E402

donor, swap, fit_model = fitted(sys.argv[1]), set(filter(None, sys.argv[2].split(","))), proxies.fit_model


def swapped(tree):
    """fit_model with the named bodies' capsules the donor's (a robot with other bodies: unchanged)."""
    model = fit_model(tree)
    if set(model.body_names) != set(donor):
        return model
    owner, ends, radius = [], [], []
    for b, name in enumerate(model.body_names):
        rows = np.flatnonzero(model.capsule_body == b)
        capsules = donor[name] if name in swap else [[model.ends[c], model.radius[c]] for c in rows]
        for end, r in capsules:
            owner.append(b)
            ends.append(np.asarray(end, float))
            radius.append(float(r))
    out = proxies.CollisionModel(model.body_links, model.body_names, np.array(owner), np.array(ends).reshape(-1, 2, 3),
                                 np.array(radius))
    return out.support_from(lambda fitted_model: proxies.fit_support_of(tree, fitted_model))


proxies.fit_model = swapped
script = sys.argv[3] if sys.argv[3].endswith(".py") else str(HERE.parent / "clear_targets_stages.py")
sys.argv = [script] + sys.argv[4 if sys.argv[3].endswith(".py") else 3:]
runpy.run_path(script, run_name="__main__")
