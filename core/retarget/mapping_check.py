"""Does the mapping make sense for this motion? Checks on the animated frames, not the rest pose.

A mapping (automatic or a preset) can be plausible in the rest pose and wrong
for the clip: arms taken for legs, left and right swapped. These checks look
at what the actor does: leg tips below the pelvis and near the ground on most
frames, arms attached above the pelvis, left limbs on the body's left. The
report says how many checks pass (`automap_confidence`, 0 to 1) and why any
fails, naming the bones.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..chains.mapping import ChainMapping, Mapping
from ..motion.source import SourceMotion
from . import names as name_words

MOST = 0.9  # share of frames a check must hold on
NEAR_GROUND = 0.25  # a leg tip is near the ground within this share of the body's height above the lowest point
UPRIGHT_COS = 0.5  # a spine within 60 degrees of the vertical stands; half the clip standing is enough


def _point(motion: SourceMotion, bone: str, tail: bool) -> np.ndarray:
    return (motion.tails if tail else motion.heads)[:, motion.index(bone)]


def mapping_figures(motion: SourceMotion, mapping: Mapping) -> dict:
    """`mapping` (the chains used, the confidence, the reasons and auto-map's notes on what it
    guessed) and `automap_confidence` for a report. The mapping is a whole preset too (format,
    every chain field, settings): saved alone, it bakes the same again (`--mapping`)."""
    chains = mapping.enabled_chains()
    confidence, reasons = check_mapping(motion, chains)
    preset = replace(mapping, chains=chains).to_dict()
    return {"mapping": {**preset, "automap_confidence": confidence, "reasons": reasons, "notes": list(mapping.notes)},
            "automap_confidence": confidence}


def check_mapping(motion: SourceMotion, chains: list[ChainMapping]) -> tuple[float, list[str]]:
    """(share of the checks that hold, one line per check that does not)."""
    legs = {c.side: c for c in chains if c.role == "leg" and c.side in ("left", "right")}
    arms = {c.side: c for c in chains if c.role == "arm" and c.side in ("left", "right")}
    if not legs and not arms:
        return 1.0, []
    heads = motion.heads
    body_low = np.minimum(heads.min(axis=1)[:, 2], motion.tails.min(axis=1)[:, 2])
    height = heads[:, :, 2].max(axis=1) - body_low
    hips = {s: _point(motion, c.source_base, False) for s, c in legs.items()}
    pelvis = np.mean(list(hips.values()), axis=0) if hips else None
    checks: list[tuple[str, float]] = []  # (what should hold, share of frames it holds on)
    for side, chain in legs.items():
        tip = _point(motion, chain.source_tips[0], chain.source_tip_tail)
        checks.append((f"{chain.name} ({chain.source_tips[0]}) below the pelvis", np.mean(tip[:, 2] < pelvis[:, 2])))
        near = tip[:, 2] - body_low <= NEAR_GROUND * height
        checks.append((f"{chain.name} ({chain.source_tips[0]}) near the ground", min(1.0, np.mean(near) / 0.5)))
    if pelvis is not None:
        for side, chain in arms.items():
            base = _point(motion, chain.source_base, False)
            checks.append((f"{chain.name} ({chain.source_base}) above the pelvis", np.mean(base[:, 2] > pelvis[:, 2])))
    if pelvis is not None and set(arms) == {"left", "right"}:
        chest = np.mean([_point(motion, c.source_base, False) for c in arms.values()], axis=0)
        spine = chest - pelvis
        upright = spine[:, 2] >= UPRIGHT_COS * np.linalg.norm(spine, axis=1)
        checks.append(("the spine (hips to shoulders) upright on half the frames (a Z-up file read as "
                       "Y-up lies down: Blender's BVH import Up axis, the CLI's --source-up Z)",
                       min(1.0, float(np.mean(upright)) / 0.5)))
    said = set()  # checks of names, not of frames
    for chain in [*legs.values(), *arms.values()]:
        named = _named_role(motion, chain)
        if named is not None:
            checks.append(named)
            said.add(named[0])
    forward = _facing(motion, legs)
    if set(legs) == {"left", "right"} and forward is not None:
        checks.append(_left_on_the_left(motion, legs, np.cross([0.0, 0.0, 1.0], forward)))
    if set(arms) == {"left", "right"}:
        # arms against the hips when both legs are mapped: the feet may point elsewhere mid-turn
        left_axis = (hips["left"] - hips["right"]) if set(hips) == {"left", "right"} else (
            None if forward is None else np.cross([0.0, 0.0, 1.0], forward))
        if left_axis is not None:
            checks.append(_left_on_the_left(motion, arms, left_axis))
    held = [share >= MOST for _, share in checks]
    reasons = [what if what in said else f"{what}: only on {100 * share:.0f} % of frames"
               for (what, share), ok in zip(checks, held) if not ok]
    return float(np.mean(held)) if checks else 1.0, reasons


def _named_role(motion: SourceMotion, chain: ChainMapping) -> tuple[str, float] | None:
    """Do the chain's bone names agree with its role? None when they say nothing either way."""
    try:
        bones = [motion.bone_names[i] for i in motion.path(chain.source_base, chain.source_tips[0])]
    except (KeyError, IndexError):
        return None
    role, share = name_words.majority_role(bones)
    if role not in ("leg", "arm") or share < 0.75:
        return None
    agree = 1.0 if role == chain.role else 0.0
    article = "an" if role == "arm" else "a"
    return (f"{chain.name} is mapped to bones named like {article} {role} ({', '.join(bones[:3])}...)", agree)


def _facing(motion: SourceMotion, legs: dict[str, ChainMapping]) -> np.ndarray | None:
    """Horizontal forward (F, 3) from the feet: ankle to toe, whatever the limbs are called; None
    without a foot past an ankle landmark. A leg that ends at its ankle (a robot without a foot
    link) has the knee as its only landmark: knee to ankle says nothing about facing."""
    steps = [_point(motion, c.source_tips[0], c.source_tip_tail) - _point(motion, c.source_landmarks[-1], False)
             for c in legs.values() if len(c.source_landmarks or []) >= 2]
    if not steps:
        return None
    forward = np.mean(steps, axis=0) * [1.0, 1.0, 0.0]
    return forward if np.median(np.linalg.norm(forward, axis=1)) > 1e-6 else None


def _left_on_the_left(motion: SourceMotion, limbs: dict[str, ChainMapping],
                      left_axis: np.ndarray) -> tuple[str, float]:
    """The left limb's base lies on the body's left (`left_axis`, F x 3) of the right one's."""
    across = _point(motion, limbs["left"].source_base, False) - _point(motion, limbs["right"].source_base, False)
    share = float(np.mean(np.einsum("fi,fi->f", across, left_axis) > 0))
    return f"{limbs['left'].name} on the body's left of {limbs['right'].name}", share
