# logd/: (filled in by its owner)
