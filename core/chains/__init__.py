"""Limb chains, the method's engine: mapping presets (which bones form which chain), reference
points along normalised chains, the batched Levenberg-Marquardt chain solver, and the same
solve keeping the robot's bodies apart on the frames that need it (separation; what a change
costs there: change_cost); the small positive definite systems of both solved over frames at
once (batched).

Below feet and retarget because planting feet solves leg chains with the same solver.
May import: core.model, core.motion.
"""
