"""retrieval's admin: AI servers, Q&A pairs, subcategory mappings, retrieval settings with the
indexing health and retrieval test pages, and the document admin's vector actions."""
from retrieval.admin import registrations  # noqa: F401 - registers the model admins
