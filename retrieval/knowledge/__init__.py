"""Approved Q&A pairs: approving, retiring and embedding them (the admin imports them from files)."""
