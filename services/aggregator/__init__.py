"""The aggregator: validates and plans runs, folds records, writes reports (docs/architecture.md "The distributed flow")."""
