"""Live retargeting of a motion-capture stream (issue 14): causal per-frame retarget, causal
feet and filter, a prediction unit that hides the latency, output at a control rate."""
