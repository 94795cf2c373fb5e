"""Approved Q&A pairs, in one place.

services.py   the one write path (create, change, approve, retire, import's rows) and the rule that
              re-embeds a pair's question, with the embedding task it queues (through core.tasks)
api.py        `/api/knowledge/`: staff read, curators write -- through services
importing.py  a CSV or JSON file's rows, checked, saved through services (the admin's import page)

The admin (retrieval/admin/registrations.py) writes through services as well. Nothing here imports
retrieval.tasks: it imports this package.
"""
