"""Provenance scoring: filtering (node recall at fixed ranks) and graph building (SimNO/SimLO/SimNLO)."""
