# reconstruct/: (filled in by its owner)
