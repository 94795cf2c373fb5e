"""django-storages' S3 options for S3-compatible object storage (read by settings and the tests)."""
from __future__ import annotations


def s3_storage_options(*, endpoint_url: str | None, bucket: str, access_key: str | None, secret_key: str | None,
                       region: str, expire: int, location: str = "") -> dict:
    """django-storages' S3Storage options (the tests switch to a bucket with it too)."""
    return {
        "bucket_name": bucket, "endpoint_url": endpoint_url or None, "access_key": access_key,
        "secret_key": secret_key, "region_name": region, "signature_version": "s3v4",
        "addressing_style": "path", "file_overwrite": False, "default_acl": None,
        "querystring_auth": True, "querystring_expire": expire, "location": location,
        "max_memory_size": 8 * 1024 * 1024,  # reads beyond this spool to disk, not memory
    }
