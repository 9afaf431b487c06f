"""The aggregator: validates and plans runs, folds per-trial records, writes the reports (DESIGN.md "Distributed flow")."""
