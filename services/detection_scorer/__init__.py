"""The detection scorer: a batch of scored-table rows to detection records."""
