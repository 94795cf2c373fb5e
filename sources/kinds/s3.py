"""An S3-compatible bucket prefix (Amazon S3, SeaweedFS, MinIO, Ceph…) through boto3.

Location `s3://bucket/prefix/`; the endpoint URL names a server other than Amazon's. The change
marker is the object's ETag, modification time and size, all in the listing: an unchanged object
costs its line of a listing page, not a download.
"""
from __future__ import annotations

from typing import BinaryIO, Iterator
from urllib.parse import urlsplit

from sources.kinds import Entry, copy_limited, denied, fetch_failed, not_found, unreachable

DENIED_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidClientTokenId",
                "AuthorizationHeaderMalformed", "403"}


class S3Connector:
    def __init__(self, *, location: str, endpoint_url: str, username: str, secret: str):
        import boto3
        from botocore.config import Config

        parts = urlsplit(location)
        self.location = location
        self.bucket = parts.netloc
        prefix = parts.path.lstrip("/")
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        self.client = boto3.client(
            "s3", endpoint_url=endpoint_url or None, aws_access_key_id=username or None,
            aws_secret_access_key=secret or None,
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, connect_timeout=5,
                          read_timeout=30, retries={"max_attempts": 2}))

    def _source_error(self, exc: Exception):
        from botocore.exceptions import ClientError, NoCredentialsError

        if isinstance(exc, ClientError):
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in DENIED_CODES:
                return denied(self.location)
            if code in {"NoSuchBucket", "404"}:
                return not_found(self.location)
            return unreachable(self.location, code or str(exc))
        if isinstance(exc, NoCredentialsError):
            return denied(self.location)
        return unreachable(self.location, str(exc))

    def list(self) -> Iterator[Entry]:
        from botocore.exceptions import BotoCoreError, ClientError

        entries = []
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix):
                for obj in page.get("Contents", []):
                    key = obj["Key"]
                    if key.endswith("/"):
                        continue  # a folder marker
                    marker = f"{obj.get('ETag', '')}|{obj['LastModified'].isoformat()}|{obj['Size']}"
                    entries.append(Entry(path=key[len(self.prefix):], marker=marker, size=obj["Size"], handle=key))
        except (BotoCoreError, ClientError) as exc:
            raise self._source_error(exc) from exc
        return iter(entries)

    def fetch(self, entry: Entry, out: BinaryIO, limit: int) -> int:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            body = self.client.get_object(Bucket=self.bucket, Key=entry.handle or self.prefix + entry.path)["Body"]
            return copy_limited(body.iter_chunks(1024 * 1024), out, limit)
        except (BotoCoreError, ClientError) as exc:
            raise fetch_failed(str(exc)) from exc

    def close(self) -> None:
        self.client.close()
