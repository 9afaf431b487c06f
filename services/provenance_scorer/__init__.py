"""The provenance scorer pool (system provenance JSON)."""
