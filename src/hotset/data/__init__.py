"""hotset.data."""
