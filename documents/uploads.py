"""Refuse an over-size upload before its whole body is kept."""
from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload


class SizeLimitUploadHandler(FileUploadHandler):
    """First in the chain: counts the bytes of every file and stops reading past the limit.

    A declared Content-Length over the limit stops the upload before any byte is read; a
    chunked body is cut as soon as it passes the limit. `request.upload_too_large` tells the
    view why the file is missing.
    """

    def __init__(self, request=None):
        super().__init__(request)
        self.received = 0

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        if content_length and content_length > settings.MAX_UPLOAD_SIZE + 64 * 1024:
            self.request.upload_too_large = True
            raise StopUpload(connection_reset=True)
        return None

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > settings.MAX_UPLOAD_SIZE:
            self.request.upload_too_large = True
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size):
        return None
