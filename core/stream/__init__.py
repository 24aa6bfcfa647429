"""Live retargeting of a motion-capture stream (issue 14): a causal per-frame retarget
(retargeter, with core.chains' one-frame solve), a causal body frame, filter and feet, the
prediction unit that hides the latency, and the session that puts them together at a control
rate. Imports core.model, core.motion, core.chains, core.feet and core.retarget (whose chain
plans, body landmarks and root plan it reuses)."""
