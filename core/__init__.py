"""Robot Retarget core: pure numpy/scipy math and file formats.

Nothing here imports Blender, so every piece is tested headless and reused by
the operators, the CLI and the benchmarks alike.
"""
