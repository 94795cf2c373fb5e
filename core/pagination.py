"""Shared API building blocks."""
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


class StrictCharField(serializers.CharField):
    """A text field that refuses numbers: DRF's CharField turns 123 into "123", the schema says string."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class Pagination(PageNumberPagination):
    page_size = 20
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request):
        # DRF falls back to the default for a page_size that is no number; the schema says an
        # integer of at least 1, so say what is wrong instead of answering something else.
        raw = request.query_params.get(self.page_size_query_param)
        if raw is not None:
            try:
                if int(raw) < 1:
                    raise ValueError
            except ValueError:
                raise ValidationError({"page_size": ["A whole number of at least 1 is required."]}) from None
        return super().get_page_size(request)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
        return parameters
