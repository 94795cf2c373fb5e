"""What the documents app announces. The layers above listen; documents names none of them."""
from django.dispatch import Signal

# Sent after the commit that left a document waiting to be indexed (uploaded, or a re-index asked
# for), with `document_id`. retrieval's app config connects the receiver that queues the indexing.
index_wanted = Signal()

# Sent after the commit that ended a document's indexing (indexed, or failed), with `document_id`.
# chat's app config connects the receiver that answers again the questions that waited for it.
index_finished = Signal()
