"""Party entry points: one process per party (``python -m parties ROLE ...``)."""
