"""hotset.sim."""
