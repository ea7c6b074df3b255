"""The OS edge: process groups (and, later, the journal)."""
