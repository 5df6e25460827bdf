"""hotset.torch."""
