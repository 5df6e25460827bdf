"""hotset.systems."""
