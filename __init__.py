"""Robot Retarget: retarget character animation onto URDF robots.

The package root is the Blender extension. Registration order matters:
properties first (operators and panels refer to them), the command-line
handler last.
"""
if __package__:  # a test runner may import this file bare (the checkout's folder name is no identifier)
    from . import props, operators, panels, cli

    _PARTS = (props, operators, panels, cli)


def register():
    for part in _PARTS:
        part.register()


def unregister():
    for part in reversed(_PARTS):
        part.unregister()
