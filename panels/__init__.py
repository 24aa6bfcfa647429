"""UI panels of Robot Retarget.

Every module listed in MODULES exposes a `classes` tuple of bpy classes and may
define register()/unregister() for anything else it sets up; register() here
registers each module's classes, then calls its register(), in list order.
"""
from ..registration import register_modules, unregister_modules
from . import (sidebar, export_panel, splice_panel, contacts_panel, balance_panel, balance_overlay, program_panel,
               live_panel, waypoints_panel, collision_overlay)

MODULES: list = [sidebar, export_panel, splice_panel, contacts_panel, balance_panel, balance_overlay,
                 program_panel, live_panel, waypoints_panel, collision_overlay]


def register():
    register_modules(MODULES)


def unregister():
    unregister_modules(MODULES)
