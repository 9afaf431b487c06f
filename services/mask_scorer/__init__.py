"""The mask scorer pool (image and video masks)."""
