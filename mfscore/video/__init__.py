"""Video localization: temporal frame intervals (VTL) and spatial-temporal HDF5 masks (VSTL)."""
