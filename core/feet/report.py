"""Which contacts a bake plants, and what its report and warnings say about the feet afterwards."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .contacts import Contacts, ContactsError, detect_contacts
from .geometry import contact_report
from ..model.kinematics import KinematicTree

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


def contact_warnings(figures: dict, planted: bool) -> list[str]:
    """Warnings for contact figures a user should not have to find in the report: feet that
    float, slide or sink although they were planted (a robot whose sole the legs cannot reach,
    a joint at its velocity limit), or sink at all."""
    out = []
    kept, sliding, sinking = (figures.get(k) for k in ("contact_preserved_pct", "foot_slide_pct",
                                                         "ground_penetration_pct"))
    if planted and kept is not None and kept < KEPT_PCT:
        out.append(f"planted feet are on the ground on only {kept:.0f} % of the clip's contact frames "
                   "(contact_preserved_pct): the feet float there")
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
