"""The validator: checks a submission's tables before the aggregator queues anything."""
