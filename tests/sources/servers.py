"""The real servers a source syncs from in the tests, each behind one adapter the shared test body uses:
`put(path, data)`, `delete(path)`, `rename(old, new)` on the server's own protocol, and the Source fields
(`location`, `endpoint_url`, `username`, `secret`) that reach it, with wrong ones for the fault cases."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Callable


@dataclass
class Place:
    kind: str
    location: str
    username: str
    secret: str
    endpoint_url: str
    put: Callable[[str, bytes], None]
    delete: Callable[[str], None]
    rename: Callable[[str, str], None]
    unreachable: dict  # Source fields pointing at nothing listening
    wrong_credentials: dict | None  # Source fields with a wrong password (None: the kind has none)


def s3_place(seaweed) -> Place:
    from tests.seaweed import ACCESS_KEY, SECRET_KEY, free_port

    client = seaweed.client()
    bucket, prefix = seaweed.session_bucket, f"src-{uuid.uuid4().hex[:10]}/"

    def put(path: str, data: bytes) -> None:
        client.put_object(Bucket=bucket, Key=prefix + path, Body=data)

    def delete(path: str) -> None:
        client.delete_object(Bucket=bucket, Key=prefix + path)

    def rename(old: str, new: str) -> None:
        client.copy_object(Bucket=bucket, Key=prefix + new, CopySource={"Bucket": bucket, "Key": prefix + old})
        delete(old)

    return Place(kind="s3", location=f"s3://{bucket}/{prefix}", username=ACCESS_KEY, secret=SECRET_KEY,
                 endpoint_url=seaweed.endpoint, put=put, delete=delete, rename=rename,
                 unreachable={"endpoint_url": f"http://127.0.0.1:{free_port()}"},
                 wrong_credentials={"secret": "not-the-secret-key"})
