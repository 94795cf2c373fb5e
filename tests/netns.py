"""A network of its own for each node of the cluster test: one network namespace per node, joined by
a bridge in the test's namespace.

Each node gets an address on a private /24 (10.213.N.0/24) and sees nothing of this machine's
loopback: a node that tried a service on 127.0.0.1 would fail. The shared services (Redis,
SeaweedFS, the fake AI server) listen on the bridge's address, which the nodes reach over their
veth pair; PostgreSQL is reached through its Unix socket, a path in the file system, which a
network namespace does not hide (README, "Running on several machines").

Needs root and iproute2 (`ip netns`): where either is missing, or RAGSITE_TEST_NETNS=0, the
cluster test falls back to loopback ports (`available()` says why). Everything is named after the
test process (rg<pid>...) and removed by `stop()`; leftovers of a test process that died are
removed by the next one.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from functools import lru_cache

from core.pg import pid_alive

PREFIX = "rg"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20, check=check)


@lru_cache(maxsize=1)
def available() -> str | None:
    """None when namespaces can be used here, else the reason they cannot."""
    if os.environ.get("RAGSITE_TEST_NETNS", "1") == "0":
        return "RAGSITE_TEST_NETNS=0"
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    if not shutil.which("ip"):
        return "iproute2 (`ip`) is not installed"
    # A trial of everything the cluster test does: a bridge, a node's namespace joined to it, a
    # command run inside it (`ip netns exec` mounts a /sys of its own, which some containers
    # refuse) connecting to a listener on the bridge's address.
    trial = NodeNetwork()
    try:
        trial.start()
        trial.add("probe")
        with socket.create_server((trial.gateway, 0)) as listener:
            if not trial.can_connect("probe", trial.gateway, listener.getsockname()[1]):
                return "a network namespace could not reach the bridge's address"
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        return f"network namespaces cannot be set up here: {exc}"
    finally:
        trial.stop()
    return None


def remove_leftovers() -> None:
    """Namespaces and links of test processes that are gone (killed before their teardown)."""
    pattern = re.compile(rf"^{PREFIX}(\d+)")
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if (m := pattern.match(name)) and not pid_alive(int(m.group(1))):
            _ip("netns", "del", name, check=False)
    for line in _ip("-o", "link", "show", check=False).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        if (m := pattern.match(name)) and not pid_alive(int(m.group(1))):
            _ip("link", "del", name, check=False)


class NodeNetwork:
    """A bridge `rg<pid>b` with address 10.213.N.1 and a namespace per node (10.213.N.10, .11, ...)."""

    def __init__(self) -> None:
        pid = os.getpid()
        self.tag = f"{PREFIX}{pid}"
        taken = _ip("-o", "addr", "show", check=False).stdout
        # The third octet: one no other test process (or anything else) on this machine uses now.
        self.subnet = next((n for n in (10 + (pid + i) % 240 for i in range(240)) if f" 10.213.{n}." not in taken),
                           10 + pid % 240)
        self.gateway = f"10.213.{self.subnet}.1"
        self.bridge = f"{self.tag}b"
        self.namespaces: dict[str, str] = {}  # node name -> namespace
        self.addresses: dict[str, str] = {}  # node name -> address

    def start(self) -> "NodeNetwork":
        remove_leftovers()
        self.stop()  # a previous run of this process that did not finish
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
        except subprocess.CalledProcessError as exc:
            self.stop()
            raise RuntimeError(f"could not create the bridge {self.bridge}: {exc.stderr.strip()}") from exc
        return self

    def add(self, node: str) -> str:
        """A namespace for `node`, joined to the bridge; returns the node's address."""
        index = len(self.namespaces)
        namespace, outside, inside = f"{self.tag}-{node}", f"{self.tag}v{index}", f"{self.tag}p{index}"
        address = f"10.213.{self.subnet}.{10 + index}"
        try:
            _ip("netns", "add", namespace)
            self.namespaces[node] = namespace
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", namespace)
            _ip("link", "set", outside, "master", self.bridge, "up")
            _ip("-n", namespace, "addr", "add", f"{address}/24", "dev", inside)
            _ip("-n", namespace, "link", "set", inside, "up")
            _ip("-n", namespace, "link", "set", "lo", "up")
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"could not give {node} a network namespace: {exc.stderr.strip()}") from exc
        self.addresses[node] = address
        return address

    def command(self, node: str) -> list[str]:
        """The prefix that runs a command inside the node's namespace (`ip netns exec` execs it:
        the process keeps its pid, so signals reach it as before)."""
        return ["ip", "netns", "exec", self.namespaces[node]]

    def can_connect(self, node: str, host: str, port: int) -> bool:
        """Whether a TCP connection from inside the node's namespace to host:port succeeds."""
        code = (f"import socket\ntry:\n socket.create_connection(({host!r}, {int(port)}), timeout=3).close()\n"
                "except OSError:\n raise SystemExit(1)")
        return subprocess.run([*self.command(node), sys.executable, "-c", code], capture_output=True,
                              timeout=20).returncode == 0

    def stop(self) -> None:
        for namespace in list(self.namespaces.values()) or []:
            _ip("netns", "del", namespace, check=False)  # its veth ends go with it, and their peers
        for line in _ip("netns", "list", check=False).stdout.splitlines():
            if line.split() and line.split()[0].startswith(f"{self.tag}-"):
                _ip("netns", "del", line.split()[0], check=False)
        _ip("link", "del", self.bridge, check=False)
        self.namespaces.clear()
        self.addresses.clear()
