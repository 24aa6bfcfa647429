"""Which contacts a bake plants, and what its report and warnings say about the feet afterwards."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from .contacts import Contacts, ContactsError, detect_contacts
from .geometry import ON_GROUND_M, Bodies, contact_report, subtree_links
from ..model.kinematics import FIXED, KinematicTree

if TYPE_CHECKING:
    from .plant import Leg


def resolve_contacts(contacts, motion, mapping, warnings: list[str]) -> Contacts | None:
    """The contacts a bake plants: None or "off" none; "auto" detected from the clip;
    a Contacts or {side: bool array (F,)} as given (its frames must be the clip's)."""
    if contacts is None or (isinstance(contacts, str) and contacts == "off"):
        return None
    if isinstance(contacts, str):
        if contacts != "auto":
            raise ContactsError(f"contacts: {contacts!r} is not 'auto', 'off' or contact arrays")
        try:
            return detect_contacts(motion, mapping)
        except ContactsError as exc:
            warnings.append(f"feet not planted: {exc}")
            return None
    if not isinstance(contacts, Contacts):
        contacts = Contacts(dict(contacts), motion.fps)
    if contacts.feet and contacts.frames != motion.frames:
        raise ContactsError(f"contacts: {contacts.frames} frames, but the clip has {motion.frames}")
    return contacts


KEPT_PCT = 90.0  # planted feet on the ground on fewer of the clip's contact frames than this: say so
SLIDING_PCT = 20.0  # planted contacts sliding
SINKING_PCT = 1.0  # frames with a foot more than PENETRATION_M below the ground


def contact_warnings(figures: dict, planted: bool,
                     held_by: Callable[[], dict[str, float]] | None = None) -> list[str]:
    """Warnings for contact figures a user should not have to find in the report: feet that
    float, slide or sink although they were planted (a robot whose sole the legs cannot reach,
    a joint at its velocity limit), or sink at all. held_by: called (holding_bodies) only when
    the feet float, for the bodies that come lower than them (a user sees what holds the robot up)."""
    out = []
    kept, sliding, sinking = (figures.get(k) for k in ("contact_preserved_pct", "foot_slide_pct",
                                                         "ground_penetration_pct"))
    if planted and kept is not None and kept < KEPT_PCT:
        bodies = held_by() if held_by is not None else {}
        held = ", ".join(f"{name!r} on {pct:.0f} %" for name, pct in list(bodies.items())[:3])
        out.append(f"planted feet are on the ground on only {kept:.0f} % of the clip's contact frames "
                   "(contact_preserved_pct): the feet float there"
                   + (f"; another body comes lower than the feet there ({held} of those frames): planting keeps "
                      "every body above the ground, so there that body, not a foot, holds the robot up" if held else ""))
    if planted and sliding is not None and sliding > SLIDING_PCT:
        out.append(f"planted feet slide in {sliding:.0f} % of the contacts (foot_slide_pct): a leg joint at its "
                   "range or velocity limit cannot hold the foot")
    if sinking is not None and sinking > SINKING_PCT:
        out.append(f"a foot is below the ground on {sinking:.0f} % of frames (ground_penetration_pct)")
    return out


def contact_figures(tree: KinematicTree, legs: list["Leg"], q: np.ndarray, root: np.ndarray,
                    contacts: Contacts | None, fps: float) -> dict:
    """The report's foot figures (core.feet.geometry.contact_report); None where not measurable."""
    keys = ("foot_slide_pct", "foot_slide_mean_m_s", "ground_penetration_pct", "contact_preserved_pct")
    if not legs:
        return dict.fromkeys(keys)
    feet = {leg.side: leg.body for leg in legs}
    poses = {leg.side: tree.link_transform(q, leg.link, root) for leg in legs}
    figures = contact_report(feet, poses, contacts, fps)
    if contacts is None:
        figures.update(foot_slide_pct=None, foot_slide_mean_m_s=None, contact_preserved_pct=None)
    return figures


def floating_feet(tree: KinematicTree, legs: list["Leg"], q: np.ndarray, root: np.ndarray,
                  contacts: Contacts) -> tuple[np.ndarray, np.ndarray]:
    """Contact frames (F,) bool where a planted foot's lowest point is above ON_GROUND_M, and the
    lowest point (F,) m of the feet planted on each frame (inf where none is)."""
    out, height = np.zeros(len(q), dtype=bool), np.full(len(q), np.inf)
    for leg in legs:
        if leg.side in contacts.feet:
            low = leg.body.lowest(tree.link_transform(q, leg.link, root))
            down = contacts.feet[leg.side]
            out |= down & (low > ON_GROUND_M)
            height[down] = np.minimum(height[down], low[down])
    return out, height


def holding_bodies(tree: KinematicTree, legs: list["Leg"], q: np.ndarray, root: np.ndarray,
                   contacts: Contacts) -> dict[str, float]:
    """{link name: % of the floating contact frames} of bodies other than the feet that come lower
    than the planted feet where those float, most first: what planting raised the robot for, so
    it would not pass through the ground (simple_humanoid's 1 m collision disc on BODY)."""
    floating, feet_low = floating_feet(tree, legs, q, root, contacts)
    frames = np.flatnonzero(floating)
    if not len(frames):
        return {}
    feet = {i for leg in legs for i in subtree_links(tree, leg.link)}
    links = [i for i in range(len(tree.link_names)) if i not in feet and (i == 0 or tree.kind[i] != FIXED)]
    bodies, share, ceiling = Bodies(tree), {}, feet_low[frames]
    for link, pose in tree.poses(q[frames], root[frames], links).items():
        if not bodies.may_reach(link, (pose[:, 2, 3] - ceiling).min(), 0.0):
            continue  # its origin stays higher above the feet than the body reaches
        lower = int((bodies.lowest(link, pose, exact_below=float(ceiling.max())) < ceiling).sum())
        if lower:
            share[tree.link_names[link]] = 100.0 * lower / len(frames)
    return dict(sorted(share.items(), key=lambda item: -item[1]))
