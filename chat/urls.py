from django.urls import path

from chat import api
from chat.sse import message_stream

conversation = "conversations/<int:conversation_id>/"
message = conversation + "messages/<int:message_id>/"

urlpatterns = [
    path("conversations/", api.ConversationListView.as_view(), name="api-conversations"),
    path(conversation, api.ConversationDetailView.as_view(), name="api-conversation"),
    path(conversation + "documents/", api.ConversationDocumentsView.as_view(), name="api-conversation-documents"),
    path(conversation + "documents/<int:document_id>/", api.ConversationDocumentDetailView.as_view(),
         name="api-conversation-document"),
    path(conversation + "messages/", api.MessageListView.as_view(), name="api-messages"),
    path(message, api.MessageDetailView.as_view(), name="api-message"),
    path(message + "retry/", api.MessageRetryView.as_view(), name="api-message-retry"),
    path(message + "regenerate/", api.MessageRegenerateView.as_view(), name="api-message-regenerate"),
    path(message + "choose/", api.MessageChooseView.as_view(), name="api-message-choose"),
    path(message + "stop/", api.MessageStopView.as_view(), name="api-message-stop"),
    path(message + "retrieval/", api.MessageRetrievalView.as_view(), name="api-message-retrieval"),
    path(message + "feedback/", api.MessageFeedbackView.as_view(), name="api-message-feedback"),
    path(message + "stream/", message_stream, name="api-message-stream"),
    path("feedback/", api.FeedbackListView.as_view(), name="api-feedback"),
    path("knowledge/gaps/", api.GapListView.as_view(), name="api-gaps"),
    path("knowledge/gaps/<int:group_id>/answer/", api.GapAnswerView.as_view(), name="api-gap-answer"),
    path("knowledge/gaps/<int:group_id>/document/", api.GapDocumentView.as_view(), name="api-gap-document"),
    path("knowledge/gaps/<int:group_id>/dismiss/", api.GapDismissView.as_view(), name="api-gap-dismiss"),
]
