"""hotset.importance."""
