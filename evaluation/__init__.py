"""Built-in evaluation for staff: test sets, runs on a copy of the retrieval settings, comparisons and the
settings gate (docs/evaluation.md#test-sets-in-the-admin)."""
