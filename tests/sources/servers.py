"""The real servers a source syncs from in the tests, each behind one adapter the shared test body uses:
`put(path, data)`, `delete(path)`, `rename(old, new)` on the server's own protocol, and the Source fields
(`location`, `endpoint_url`, `username`, `secret`) that reach it, with wrong ones for the fault cases."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
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
    source_fields: dict = field(default_factory=dict)  # more Source fields the kind's folder needs
    path_of: Callable[[str], str] = lambda path: path  # where the source lists a file the place put at `path`


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


def webdav_place(server) -> Place:
    import io

    from webdav4.client import Client

    from tests.seaweed import free_port
    from tests.webdav_server import PASSWORD, USER

    folder = f"src-{uuid.uuid4().hex[:10]}"
    client = Client(server.url, auth=(USER, PASSWORD))
    client.mkdir(folder)

    def parents(path: str) -> None:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            name = f"{folder}/{'/'.join(parts[:i])}"
            if not client.exists(name):
                client.mkdir(name)

    def put(path: str, data: bytes) -> None:
        parents(path)
        client.upload_fileobj(io.BytesIO(data), f"{folder}/{path}", overwrite=True)

    def delete(path: str) -> None:
        client.remove(f"{folder}/{path}")

    def rename(old: str, new: str) -> None:
        parents(new)
        client.move(f"{folder}/{old}", f"{folder}/{new}")

    return Place(kind="webdav", location=f"{server.url}{folder}/", username=USER, secret=PASSWORD, endpoint_url="",
                 put=put, delete=delete, rename=rename,
                 unreachable={"location": f"http://127.0.0.1:{free_port()}/{folder}/"},
                 wrong_credentials={"secret": "not-the-password"})


def website_place(server) -> Place:
    """A folder of the site with a sitemap.xml the place rewrites on every change (as a CMS would)."""
    from tests.seaweed import free_port
    from tests.website_server import PASSWORD, USER

    folder = f"src-{uuid.uuid4().hex[:10]}"
    base = server.root / folder
    base.mkdir()
    prefix = f"{server.url}{folder}/"

    def sitemap() -> None:
        urls = "".join(f"<url><loc>{prefix}{p.relative_to(base).as_posix()}</loc></url>"
                       for p in sorted(base.rglob("*")) if p.is_file() and p.name != "sitemap.xml")
        (base / "sitemap.xml").write_text('<?xml version="1.0" encoding="UTF-8"?>'
                                          f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>')

    def put(path: str, data: bytes) -> None:
        target = base / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        sitemap()

    def delete(path: str) -> None:
        (base / path).unlink()
        sitemap()

    def rename(old: str, new: str) -> None:
        (base / new).parent.mkdir(parents=True, exist_ok=True)
        (base / old).rename(base / new)
        sitemap()

    sitemap()
    return Place(kind="website", location=prefix, username=USER, secret=PASSWORD, endpoint_url="",
                 put=put, delete=delete, rename=rename,
                 unreachable={"location": f"http://127.0.0.1:{free_port()}/{folder}/"},
                 wrong_credentials={"secret": "not-the-password"})


def smb_place(server) -> Place:
    """A folder of the share, changed through SMB itself (smbclient, the protocol the source reads)."""
    import smbclient

    from tests.samba import PASSWORD, SHARE, USER
    from tests.seaweed import free_port

    folder = f"src-{uuid.uuid4().hex[:10]}"
    cache: dict = {}
    smbclient.register_session("127.0.0.1", username=USER, password=PASSWORD, port=server.port,
                               connection_cache=cache)
    options = {"port": server.port, "connection_cache": cache}

    def unc(path: str) -> str:
        return f"\\\\127.0.0.1\\{SHARE}\\{folder}\\" + path.replace("/", "\\")

    def put(path: str, data: bytes) -> None:
        smbclient.makedirs(unc(path).rsplit("\\", 1)[0], exist_ok=True, **options)
        with smbclient.open_file(unc(path), mode="wb", **options) as handle:
            handle.write(data)

    def delete(path: str) -> None:
        smbclient.remove(unc(path), **options)

    def rename(old: str, new: str) -> None:
        smbclient.makedirs(unc(new).rsplit("\\", 1)[0], exist_ok=True, **options)
        smbclient.rename(unc(old), unc(new), **options)

    smbclient.makedirs(unc("").rstrip("\\"), exist_ok=True, **options)
    location = f"smb://127.0.0.1:{server.port}/{SHARE}/{folder}"
    return Place(kind="smb", location=location, username=USER, secret=PASSWORD, endpoint_url="",
                 put=put, delete=delete, rename=rename,
                 unreachable={"location": f"smb://127.0.0.1:{free_port()}/{SHARE}/{folder}"},
                 wrong_credentials={"secret": "not-the-password"})


def imap_place(server) -> Place:
    """A mailbox folder where each file is a message (Message-ID from its path) carrying it as an attachment;
    changing a file replaces its message (a new UID, the same Message-ID), a rename sends it anew under the
    new path's Message-ID. The messages' own text is excluded from the source, so the files alone count."""
    import re
    from email.message import EmailMessage
    from pathlib import PurePosixPath

    from tests.dovecot import PASSWORD, USER
    from tests.seaweed import free_port

    folder = f"src-{uuid.uuid4().hex[:10]}"
    conn = server.client()
    conn.create(folder)

    def message_id(path: str) -> str:
        return f"{path.replace('/', '.')}@ragsite.test"

    def remove(path: str) -> None:
        conn.select(folder)
        _, found = conn.uid("SEARCH", None, "HEADER", "Message-ID", message_id(path))
        for uid in (found[0] or b"").split():
            conn.uid("STORE", uid, "+FLAGS", "(\\Deleted)")
        conn.expunge()

    def put(path: str, data: bytes) -> None:
        remove(path)
        message = EmailMessage()
        message["Subject"], message["From"], message["To"] = f"File {path}", "office@ragsite.test", "all@ragsite.test"
        message["Message-ID"] = f"<{message_id(path)}>"
        message["Date"] = "Mon, 02 Nov 2026 09:00:00 +0000"
        message.set_content(f"The file {path} is attached.")
        message.add_attachment(data, maintype="application", subtype="octet-stream",
                               filename=PurePosixPath(path).name)
        conn.append(folder, None, None, message.as_bytes())

    def rename(old: str, new: str) -> None:
        conn.select(folder)
        _, found = conn.uid("SEARCH", None, "HEADER", "Message-ID", message_id(old))
        uid = (found[0] or b"").split()[0]
        _, rows = conn.uid("FETCH", uid, "(BODY.PEEK[])")
        import email
        import email.policy

        data = next(part.get_payload(decode=True) for part in email.message_from_bytes(
            rows[0][1], policy=email.policy.default).iter_attachments())
        put(new, data)
        remove(old)

    def path_of(path: str) -> str:
        return f"{re.sub(r'[^A-Za-z0-9@._+-]', '_', message_id(path))}/{PurePosixPath(path).name}"

    return Place(kind="imap", location=f"imap://127.0.0.1:{server.port}/{folder}", username=USER, secret=PASSWORD,
                 endpoint_url="", put=put, delete=remove, rename=rename,
                 unreachable={"location": f"imap://127.0.0.1:{free_port()}/{folder}"},
                 wrong_credentials={"secret": "not-the-password"},
                 source_fields={"exclude_patterns": "*/message.eml"}, path_of=path_of)
