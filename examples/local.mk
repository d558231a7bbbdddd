# examples/: (filled in by its owner)
