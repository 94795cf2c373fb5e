"""The bottom layer: what every app uses and nothing app-specific.

Errors, environment readers, the embedded PostgreSQL and its bootstrap, the Channels layer and
the django-q2 broker on PostgreSQL, token authentication for WebSockets, health checks, the
one task-queueing helper. It imports no ragsite app (the import contract in .importlinter says so).
"""
