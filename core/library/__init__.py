"""Whole motion libraries without Blender: command-line flags shared with the extension
(arguments), one clip file baked and exported (clip), walked as a gait or a motion file weighed
(gait), batches of clips with resume and a
summary (batch) run on worker processes or a Dask cluster (engines, worker), and the console
command `robot-retarget-core` (cli).

This is the top of core: it puts files, retarget, playback and balance together, so the extension's
command line and the pip-installed package write the same bytes from the same code.
Inside: arguments <- clip <- gait, batch <- engines, worker <- cli.
May import: core.model, core.motion, core.chains, core.feet, core.retarget, core.playback, core.balance.
"""
