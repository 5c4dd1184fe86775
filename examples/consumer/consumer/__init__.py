"""The consumer example's modules: config, the serving stack's outputs, the client Job's specs."""
