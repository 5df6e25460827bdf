"""hotset.cachestore."""
