"""Planted feet: contact detection and contacts files (contacts), foot geometry and report
figures (geometry), where a planted foot must be (targets), and the foot-locked leg solve (plant).

May import: core.model, core.motion, core.chains.
"""
from .contacts import Contacts, ContactsError, detect_contacts

__all__ = ["Contacts", "ContactsError", "detect_contacts"]
