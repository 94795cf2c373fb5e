"""Usage and quotas: daily counters per user and collection (questions, answers by mode, tokens per chat
model, cited documents, indexing time and pages), their reports (admin, CSV, `/api/usage/`, Prometheus),
and the per-group quotas checked before work is accepted (docs/usage.md)."""
