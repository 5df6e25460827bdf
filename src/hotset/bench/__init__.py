"""hotset.bench."""
