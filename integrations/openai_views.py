"""`POST /v1/chat/completions`, `GET /v1/models` and the extension `POST /v1/feedback`: ragsite for clients that speak OpenAI's API.

Authenticated by the user's API token as the Bearer key. Every request asks through the chat's own
path (integrations.answers), so it is answered by the same orchestrator as the chat page and saved
as a conversation of the user; `X-Ragsite-Conversation: <id>` (or `"user": "conversation:<id>"`)
continues one of theirs. Errors are OpenAI's error object with its status codes.
"""
from __future__ import annotations

import json
import logging
import time

from asgiref.sync import sync_to_async
from django.http import JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST

from chat import selectors as chat_selectors
from chat import services as chat_services
from chat.serializers import FeedbackCreateSerializer, feedback_data
from integrations import openai_format as fmt
from integrations.answers import AnswerTimeout, ask_start, follow_answer
from integrations.auth import atoken_for_key, token_key
from integrations.scopes import UnknownScope, available_models, resolve_model
from core.errors import ApplicationError, QuotaExceeded
from core.throttles import QuestionThrottle, retry_after
from identity.streams import Credential, acredential_still_valid, until_signed_out

logger = logging.getLogger(__name__)

CONVERSATION_HEADER = "X-Ragsite-Conversation"
CONVERSATION_USER_PREFIX = "conversation:"


def _error(status: int, message: str, *, type: str = "invalid_request_error", code: str | None = None,
           param: str | None = None, headers: dict | None = None) -> JsonResponse:
    response = JsonResponse(fmt.error_body(message, type=type, code=code, param=param), status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _unauthorized() -> JsonResponse:
    return _error(401, gettext("Incorrect API key provided. Use your ragsite API token (POST /api/auth/token/) as "
                               "the Bearer key."), code="invalid_api_key", headers={"WWW-Authenticate": 'Bearer realm="ragsite"'})


async def _authenticate(request):
    token = await atoken_for_key(token_key(request.headers.get("Authorization")))
    if token is None:
        return None
    request.user = token.user  # the throttles key on it
    request.ragsite_credential = Credential.of(token.user, token=token)  # a stream re-checks it
    return token.user


def _conversation_id(request, body_user: str) -> int | None:
    raw = request.headers.get(CONVERSATION_HEADER, "").strip()
    if not raw and body_user.startswith(CONVERSATION_USER_PREFIX):
        raw = body_user[len(CONVERSATION_USER_PREFIX):].strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise fmt.RequestError(gettext("'%(value)s' is not a conversation id.") % {"value": raw}, param="user") from None


@csrf_exempt
@require_GET
async def models(request, model: str | None = None):
    """The models this key can use: `ragsite` (everything the user reads) and `ragsite/<slug>` per readable
    collection."""
    user = await _authenticate(request)
    if user is None:
        return _unauthorized()
    names = await sync_to_async(available_models)(user=user)
    rows = [{"id": name, "object": "model", "created": 0, "owned_by": "ragsite"} for name in names]
    if model is None:
        return JsonResponse({"object": "list", "data": rows})
    for row in rows:
        if row["id"] == model:
            return JsonResponse(row)
    return _error(404, gettext("The model '%(model)s' does not exist.") % {"model": model}, code="model_not_found",
                  param="model")


@csrf_exempt
@require_POST
async def chat_completions(request):
    user = await _authenticate(request)
    if user is None:
        return _unauthorized()
    try:
        req = fmt.parse_request(request.body)
        conversation_id = _conversation_id(request, req.user)
        scope = await sync_to_async(resolve_model)(user=user, model=req.model)
    except fmt.RequestError as exc:
        return _error(400, exc.message, param=exc.param)
    except UnknownScope as exc:
        return _error(404, exc.message, code="model_not_found", param="model")
    throttle = QuestionThrottle()
    if not await sync_to_async(throttle.allow_request)(request, None):
        seconds = retry_after(throttle)
        return _error(429, gettext("Too many questions; try again in %(seconds)s seconds.") % {"seconds": seconds}, type="rate_limit_exceeded",
                      code="rate_limit_exceeded", headers={"Retry-After": str(seconds)})
    try:
        answer = await sync_to_async(ask_start)(user=user, question=req.question, history=req.history,
                                                conversation_id=conversation_id, metadata=req.metadata,
                                                origin="openai", collection=scope.collection)
    except QuotaExceeded as exc:  # OpenAI's shape for a used-up quota: 429 `insufficient_quota`
        return _error(429, exc.message, type="insufficient_quota", code=exc.code,
                      headers={"Retry-After": str(exc.extra.get("retry_after", 60))})
    except ApplicationError as exc:
        status = 404 if exc.status_code == 404 else 400
        return _error(status, exc.message, code=exc.code, param="user" if status == 404 else "messages")
    completion_id = f"chatcmpl-{answer.pk}"
    created = int(time.time())
    headers = {CONVERSATION_HEADER: str(answer.conversation_id)}
    if req.stream:
        ended = fmt.sse(fmt.error_body(gettext("Your API token ended (revoked, rotated or expired) or the account "
                                               "was disabled."), type="invalid_request_error",
                                       code="invalid_api_key"))
        credential = request.ragsite_credential
        response = StreamingHttpResponse(
            until_signed_out(_stream(user, answer, completion_id, created, req.model),
                             lambda: acredential_still_valid(credential), ended),
            content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
    else:
        response = await _complete(user, answer, completion_id, created, req.model)
    for name, value in headers.items():
        response[name] = value
    return response


async def _complete(user, answer, completion_id: str, created: int, model: str) -> JsonResponse:
    final = None
    try:
        async for kind, value in follow_answer(user=user, answer=answer):
            if kind == "final":
                final = value
    except AnswerTimeout as exc:
        return _error(504, exc.message, type="server_error", code=exc.code)
    failure = _failure(final)
    if failure:
        return _error(502, failure, type="server_error", code="answer_failed")
    return JsonResponse(fmt.completion(completion_id=completion_id, created=created, model=model, message=final,
                                       conversation_id=answer.conversation_id))


async def _stream(user, answer, completion_id: str, created: int, model: str):
    def chunk(**kwargs) -> bytes:
        return fmt.sse(fmt.chunk(completion_id=completion_id, created=created, model=model,
                                 conversation_id=answer.conversation_id, **kwargs))

    yield chunk(delta={"role": "assistant", "content": ""})
    try:
        async for kind, value in follow_answer(user=user, answer=answer):
            if kind == "delta":
                yield chunk(delta={"content": value})
                continue
            failure = _failure(value)
            if failure:
                # Headers are gone: the error travels as an event (the OpenAI SDK raises it).
                yield fmt.sse(fmt.error_body(failure, type="server_error", code="answer_failed"))
            else:
                yield chunk(delta={"citations": fmt.citations_of(value)}, finish_reason="stop")
                yield chunk(usage=fmt.usage_of(value))
    except AnswerTimeout as exc:
        yield fmt.sse(fmt.error_body(exc.message, type="server_error", code=exc.code))
    yield fmt.sse("[DONE]")


def _failure(message: dict | None) -> str | None:
    if message is None:
        return gettext("The answer was deleted before it was finished.")
    if message.get("status") == "failed":
        return message.get("error") or gettext("The answer failed.")
    return None


COMPLETION_PREFIX = "chatcmpl-"


def _message_ref(value):
    """A message id: the number, or the completion's id `chatcmpl-<n>` as /v1/chat/completions gave it."""
    if isinstance(value, str) and value.startswith(COMPLETION_PREFIX):
        value = value[len(COMPLETION_PREFIX):]
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.isascii() and value.isdigit())):
        raise fmt.RequestError(gettext("'message_id' must be a completion id (chatcmpl-…) or a number."),
                               param="message_id")
    return int(value)


def _give_feedback(user, body) -> tuple[dict, bool]:
    if not isinstance(body, dict):
        raise fmt.RequestError(gettext("The body must be a JSON object."))
    message_id = body.get("message_id")
    conversation_id = body.get("conversation_id")
    if message_id is None and conversation_id is None:
        raise fmt.RequestError(gettext("Send 'message_id' (the completion's id) or 'conversation_id'."),
                               param="message_id")
    if message_id is not None:
        message_id = _message_ref(message_id)
    elif isinstance(conversation_id, bool) or not isinstance(conversation_id, int):
        raise fmt.RequestError(gettext("'conversation_id' must be a number."), param="conversation_id")
    form = FeedbackCreateSerializer(data={k: v for k, v in body.items() if k not in ("message_id", "conversation_id")})
    if not form.is_valid():
        field, problems = next(iter(form.errors.items()))
        raise fmt.RequestError(f"{field}: {' '.join(str(p) for p in problems)}", param=field)
    answer = chat_selectors.answer_locate(user=user, message_id=message_id, conversation_id=conversation_id)
    feedback, created = chat_services.feedback_give(conversation_id=answer.conversation_id, message_id=answer.pk,
                                                    user=user, **form.validated_data)
    return feedback_data(feedback), created


@csrf_exempt
@require_POST
async def feedback(request):
    """Rate an answer given over /v1 (ragsite's extension): `{"message_id": "chatcmpl-…" | "conversation_id": n,
    "rating": "up"|"down", "reason", "comment", "source_id"}`; as POST /api/…/messages/{id}/feedback/."""
    user = await _authenticate(request)
    if user is None:
        return _unauthorized()
    try:
        body = json.loads(request.body or b"null")
    except (ValueError, RecursionError):
        return _error(400, gettext("The body is not valid JSON."))
    try:
        data, created = await sync_to_async(_give_feedback)(user, body)
    except fmt.RequestError as exc:
        return _error(400, exc.message, param=exc.param)
    except ApplicationError as exc:
        return _error(exc.status_code, exc.message, code=exc.code)
    return JsonResponse(data, status=201 if created else 200)
