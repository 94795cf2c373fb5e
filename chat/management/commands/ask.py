"""Ask a question as a user and print the finished answer as JSON."""
from __future__ import annotations

import json
import time

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.utils.translation import gettext, gettext_lazy

from core.commands import BaseCommand

from chat.models import Message, MessageStatus
from chat.orchestrator import answer_conversation
from chat.serializers import message_data
from chat.services import conversation_create, message_send
from core.errors import ApplicationError


class Command(BaseCommand):
    help = gettext_lazy("Ask a question (as --user, in a new conversation or --conversation ID) and print the answer as JSON.")

    def add_arguments(self, parser):
        parser.add_argument("question")
        parser.add_argument("--user", required=True, help=gettext("username"))
        parser.add_argument("--conversation", type=int, help=gettext("an existing conversation of the user"))
        parser.add_argument("--category", default=None)
        parser.add_argument("--subcategory", default=None)
        parser.add_argument("--timeout", type=float, default=600, help=gettext("seconds to wait for the answer"))

    def handle(self, *args, question, user, conversation, category, subcategory, timeout, **options):
        account = get_user_model().objects.filter(username=user).first()
        if account is None:
            raise CommandError(gettext("No user named %(user)r.") % {"user": user})
        try:
            if conversation is None:
                conversation = conversation_create(user=account).pk
            _, answer = message_send(conversation_id=conversation, user=account, content=question,
                                     category=category, subcategory=subcategory, enqueue=False)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        # Answered here, in order after any earlier question; if a worker is answering this
        # conversation right now, it answers this one too and we wait for it.
        answer_conversation(conversation)
        deadline = time.monotonic() + timeout
        while True:
            answer = Message.objects.get(pk=answer.pk)
            if answer.status in (MessageStatus.DONE, MessageStatus.FAILED):
                break
            if time.monotonic() > deadline:
                raise CommandError(gettext("No answer after %(timeout)s s (message %(id)s is %(status)s).")
                                   % {"timeout": f"{timeout:g}", "id": answer.pk, "status": answer.get_status_display()})
            time.sleep(0.2)
        from chat.events import writer

        writer.close()
        self.stdout.write(json.dumps(message_data(answer, segments=True), indent=2, ensure_ascii=False))
        if answer.status == MessageStatus.FAILED:
            raise CommandError(answer.error_text)
