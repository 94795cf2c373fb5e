"""Staff page: the whole prompt the chat would send for a sample question (persona + fixed rules + passages).

Lives in chat (the prompts are chat's); the retrieval settings' admin page links to it. The
persona can be tried before saving: the `persona` field overrides the saved one for the preview only.
"""
from __future__ import annotations

from django.utils.translation import gettext, gettext_lazy
from django import forms
from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import render
from django.utils import timezone

from chat.generation import chat_server, context_budget, generation_options
from chat.prompts import build_messages, rag_system_prompt, render_persona
from retrieval.search import retrieve
from retrieval.selectors import retrieval_settings_get

SAMPLE_QUESTION = "What should I know before I start?"


class PreviewForm(forms.Form):
    question = forms.CharField(label=gettext_lazy("Question"), max_length=2000, initial=SAMPLE_QUESTION)
    category = forms.CharField(label=gettext_lazy("Category"), max_length=100, required=False)
    subcategory = forms.CharField(label=gettext_lazy("Category"), max_length=100, required=False)
    persona = forms.CharField(label=gettext_lazy("Persona"), widget=forms.Textarea(attrs={"rows": 4, "cols": 90}), required=False,
                              help_text=gettext_lazy("Empty: the saved persona. Placeholders: {category}, {subcategory}, {date}, {user}."))


@staff_member_required
def prompt_preview(request):
    """Render the messages for the sample question as the signed-in staff member (their documents)."""
    rs = retrieval_settings_get()
    form = PreviewForm(request.GET or None, initial={"question": SAMPLE_QUESTION, "persona": rs.persona})
    data = form.cleaned_data if form.is_bound and form.is_valid() else {"question": SAMPLE_QUESTION, "category": "",
                                                                         "subcategory": "", "persona": ""}
    user = request.user
    persona = render_persona(data.get("persona") or rs.persona, category=data.get("category", ""),
                             subcategory=data.get("subcategory", ""), date=timezone.localdate().isoformat(),
                             user=user.get_full_name() or user.get_username())
    server = chat_server(rs)
    json_mode = bool(server and server.capabilities.get("json_answers"))
    error = ""
    try:
        segments = retrieve(user, data["question"], category=data.get("category") or None,
                            subcategory=data.get("subcategory") or None).segments
    except Exception as exc:  # noqa: BLE001 - a preview shows why retrieval failed instead of failing
        segments, error = [], f"Retrieval failed, so no passages are shown: {exc}"
    budget: dict = {}
    messages, _ = build_messages(
        question=data["question"], segments=segments, history=[], history_token_budget=settings.CHAT_HISTORY_TOKENS,
        context_token_budget=context_budget(server) if server else settings.CHAT_CONTEXT_TOKENS, json_mode=json_mode,
        budget_report=budget, system_prompt=rag_system_prompt(persona, json_mode=json_mode))
    return render(request, "admin/chat/prompt_preview.html", {
        "title": gettext("Prompt preview"), "form": form, "messages_sent": messages, "budget": budget, "error": error,
        "options": generation_options(server) if server else None, "server": server, "json_mode": json_mode,
    })
