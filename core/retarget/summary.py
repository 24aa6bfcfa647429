"""The one line a user reads after a bake: speed, limits, and what a viewer sees (status bar, CLI)."""
from __future__ import annotations


def report_summary(report: dict) -> str:
    """One line for the status bar and the CLI: speed, limits, and what a viewer sees."""
    text = (f"Baked {report['frames']} frames at {report['frames_per_second']:.0f} frames/s; "
            f"{report['limit_violations']} samples outside joint limits")
    by_limb = report.get("limb_direction_error_by_limb") or {}
    if by_limb:
        worst = max(by_limb, key=by_limb.get)
        text += (f"; limbs {report['limb_direction_error_deg']:.1f}° from the actor's "
                 f"(worst {worst} {by_limb[worst]:.1f}°)")
    if report.get("torso_orientation_error_deg") is not None:
        text += f", torso {report['torso_orientation_error_deg']:.1f}°"
    limbs = [c for c in report["chains"] if c["name"] != "spine"]
    if limbs and not by_limb:  # a one-chain robot (an arm): its chain fit
        worst_chain = max(limbs, key=lambda c: c["tip_direction_error_deg"])
        text += f"; largest tip-direction error {worst_chain['tip_direction_error_deg']:.1f}° ({worst_chain['name']})"
    return text
