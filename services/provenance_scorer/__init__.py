"""The provenance scorer: a trial's system JSON (from S3) against its planned reference part."""
