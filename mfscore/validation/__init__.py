"""Submission validators: what a performer runs before submitting and the backend runs before queuing.

Each validator returns a ``ValidationReport`` (``findings.py``): errors and warnings with a stable
code, the file and line they concern, and a message carrying MediScore's key phrases.
"""
