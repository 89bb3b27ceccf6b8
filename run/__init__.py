"""A run's safety: checkpoints written atomically, stops at an update's end, one training per folder,
episode seeds, and the pretrained files that ship weights. Below learning and evaluation; no Ray."""
