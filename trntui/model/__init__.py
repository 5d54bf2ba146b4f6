"""The columnar profile model shared by every loader, analysis and view."""

from trntui.model.builder import ProfileBuilder
from trntui.model.profile import NO_ID, EventKind, Flows, Lane, Profile, ProfileMeta, Tier, empty_profile

__all__ = [
    "NO_ID",
    "EventKind",
    "Flows",
    "Lane",
    "Profile",
    "ProfileBuilder",
    "ProfileMeta",
    "Tier",
    "empty_profile",
]
