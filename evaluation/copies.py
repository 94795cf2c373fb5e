"""A copy of the live retrieval settings with a run's overrides: what a run searches with (never saved)."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from django.forms.models import model_to_dict

from core.errors import Unprocessable
from retrieval.admin.forms import RetrievalSettingsForm
from retrieval.models import RetrievalSettings
from retrieval.selectors import default_embedding_server, retrieval_settings_get

# Settings a run may change on its copy: the ones a question's search reads. Chunking and servers apply
# when documents are indexed, so a copy cannot try them without indexing everything again.
OVERRIDABLE = ("vector_top_k", "fts_top_k", "vector_weight", "fts_weight", "final_top_n", "fusion", "rrf_k", "fts_ranking",
               "fts_match_budget", "qa_distance_threshold", "qa_limit", "doc_distance_threshold", "doc_limit",
               "rerank_candidates", "rerank_timeout")


def settings_copy(overrides: dict) -> RetrievalSettings:
    """A copy of the live retrieval settings with `overrides` applied (never saved); Unprocessable names
    a setting that cannot be overridden or a value that is not valid for it."""
    rs = retrieval_settings_get()  # already a copy of its own
    unknown = sorted(set(overrides) - set(OVERRIDABLE))
    if unknown:
        raise Unprocessable(_("These settings cannot be tried on a copy: %(names)s. Allowed: %(allowed)s.")
                            % {"names": ", ".join(unknown), "allowed": ", ".join(OVERRIDABLE)})
    for name, value in overrides.items():
        field = RetrievalSettings._meta.get_field(name)
        try:
            setattr(rs, name, field.clean(value, rs))
        except ValidationError as exc:
            raise Unprocessable(_("%(name)s: %(reason)s") % {"name": name, "reason": " ".join(exc.messages)}) from exc
    # The settings page's own rules (top-k at least 1, thresholds within 0-2, ...): a copy may try only
    # what staff could save. Only the overridden settings' errors count.
    form = RetrievalSettingsForm(data=model_to_dict(rs), instance=RetrievalSettings(pk=rs.pk))
    errors = {name: messages for name, messages in form.errors.items() if name in overrides}
    if errors:
        raise Unprocessable("; ".join(f"{name}: {' '.join(messages)}" for name, messages in sorted(errors.items())))
    return rs


def settings_snapshot(rs: RetrievalSettings) -> dict:
    """What a run was measured with: the search settings and the embedding model."""
    server = default_embedding_server(rs)
    return {**{name: getattr(rs, name) for name in OVERRIDABLE},
            "embedding_server": server.name if server else ""}
