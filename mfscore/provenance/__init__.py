"""Provenance scoring: filtering (node recall at fixed ranks) and graph building (SimNO/SimLO/SimNLO)."""

NODE_TYPES = ("donor", "base", "final", "interim")  # the node types of a journal (docs/provenance.md §2.2)
NODE_TYPE_CHOICES = (*NODE_TYPES, "*", "all")       # --nodetype: a node type, or * / all for the four
