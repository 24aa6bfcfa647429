"""What a robot is: URDF parsing, the kinematic tree and batched FK, transforms, meshes, rig layout.

The bottom of core: imports nothing else from core.
"""
