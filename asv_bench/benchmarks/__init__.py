"""asv benchmarks for clarytree."""
