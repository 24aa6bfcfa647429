"""Operators of Robot Retarget.

Every module listed in MODULES exposes a `classes` tuple of bpy classes and may
define register()/unregister() for anything else it sets up; register() here
registers each module's classes, then calls its register(), in list order.
Shared bpy helpers (animation I/O) live in operators/anim_io.py.
"""
from ..registration import register_modules, unregister_modules
from . import import_urdf, retarget, waypoints, export, splice, contacts, balance, gait, program, live, follow_path

MODULES: list = [import_urdf, retarget, waypoints, export, splice, contacts, balance, gait, program, live, follow_path]


def register():
    register_modules(MODULES)


def unregister():
    unregister_modules(MODULES)
