"""Robot Retarget core: pure numpy/scipy math and file formats, one package per capability.

Nothing here imports Blender (`bpy`, `mathutils`), the operators, the panels or
the command line, so every piece is tested headless and reused by the
operators, the CLI and the benchmarks alike. Dependencies point one way
(tests/test_layout.py holds the rule):

    model, motion            what a robot is, what a clip is       (bottom)
    chains                   mapping, reference points, chain solver
    feet                     contacts and planted feet
    retarget                 auto-map, body frames, the bake pipeline
    playback, splice, waypoints                                     (capabilities)
    library                  whole clip files and batches, the `robot-retarget-core` command (top)
"""
