"""Indexing: a document's text becomes chunks and vectors (pipeline), late chunking, re-embedding.

The task entry points are in retrieval.tasks; nothing here imports it.
"""
