"""What an export says about itself: REPORT.json's keys and the one summary line (UI and CLIs)."""
from __future__ import annotations

from pathlib import Path

from .prepare import ExportSettings, PlaybackResult
from .sampling import violation_summary


def export_report(bake_report: dict, result: PlaybackResult, settings: ExportSettings,
                  paths: list[Path]) -> dict:
    """The bake report's keys plus what the export did (REPORT.json of `export`)."""
    track = result.track
    return dict(bake_report, format=settings.format, rate_hz=track.rate_hz, period_s=track.period_s,
                samples=track.samples, duration_s=track.duration_s, source_duration_s=result.source_duration_s,
                units=settings.units, violations=[v.to_dict() for v in result.violations],
                retimed_seconds_added=result.retimed_seconds_added,
                warnings=list(bake_report.get("warnings", [])) + result.warnings,
                files=[str(p) for p in paths])


def playback_summary(result: PlaybackResult, action_name: str) -> str:
    """One line: samples, rate, duration, violations and what retime added."""
    track = result.track
    text = (f"Exported {track.samples} samples at {track.rate_hz:g} Hz ({track.duration_s:.3f} s) "
            f"of {action_name!r}; {violation_summary(result.violations)}")
    if result.retimed_seconds_added:
        text += f"; retime added {result.retimed_seconds_added:.4g} s"
    return text
