"""A real OpenLDAP for the tests: Debian's slapd (the Makefile installs it with the test packages),
started on 127.0.0.1 with free ports (ldap:// and ldaps://) in a temporary folder, with a
self-signed certificate for StartTLS and LDAPS, loaded with the people and nested groups below, and stopped afterwards."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.seaweed import free_port

SUFFIX = "dc=example,dc=org"
ADMIN_DN = f"cn=admin,{SUFFIX}"
ADMIN_PASSWORD = "admin-secret"
SERVICE_DN = f"cn=ragsite,ou=services,{SUFFIX}"
SERVICE_PASSWORD = "service-secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"

# ldapalice is in finance-team, which is a member of ragsite-finance (a nested group); ldapbob is
# in ragsite-support directly (groupOfNames needs one member: the service account fills in); carol (no ragsite group) and a local account's name (ldaplocal).
LDIF = f"""\
dn: {SUFFIX}
objectClass: dcObject
objectClass: organization
o: Example
dc: example

dn: ou=people,{SUFFIX}
objectClass: organizationalUnit
ou: people

dn: ou=groups,{SUFFIX}
objectClass: organizationalUnit
ou: groups

dn: ou=services,{SUFFIX}
objectClass: organizationalUnit
ou: services

dn: {SERVICE_DN}
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: ragsite
userPassword: {SERVICE_PASSWORD}

""" + "".join(f"""\
dn: uid={uid},{PEOPLE}
objectClass: inetOrgPerson
uid: {uid}
cn: {given} Example
sn: Example
givenName: {given}
mail: {uid}@example.org
userPassword: {uid}-pw

""" for uid, given in [("ldapalice", "Alice"), ("ldapbob", "Bob"), ("ldapcarol", "Carol"), ("ldaplocal", "Lo")]) + f"""\
dn: cn=finance-team,{GROUPS}
objectClass: groupOfNames
cn: finance-team
member: uid=ldapalice,{PEOPLE}
member: {SERVICE_DN}

dn: cn=ragsite-finance,{GROUPS}
objectClass: groupOfNames
cn: ragsite-finance
member: cn=finance-team,{GROUPS}

dn: cn=ragsite-support,{GROUPS}
objectClass: groupOfNames
cn: ragsite-support
member: uid=ldapbob,{PEOPLE}
"""


class Slapd:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="ragsite-slapd-"))
        self.port = free_port()
        self.tls_port = free_port()  # ldaps:// (TLS from the first byte)
        self.proc: subprocess.Popen | None = None
        self.ca_file = self.dir / "cert.pem"

    @property
    def uri(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def ldaps_uri(self) -> str:
        return f"ldaps://127.0.0.1:{self.tls_port}"

    def _certificate(self) -> None:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(self.dir / "key.pem"), "-out", str(self.ca_file)],
                       check=True, capture_output=True, timeout=60)

    def start(self, timeout: float = 120) -> "Slapd":
        binary = shutil.which("slapd") or "/usr/sbin/slapd"
        if not Path(binary).exists():
            raise RuntimeError("slapd is missing: `make test` installs it (Debian packages slapd ldap-utils)")
        self._certificate()
        (self.dir / "db").mkdir()
        schema = Path("/etc/ldap/schema")
        conf = self.dir / "slapd.conf"
        conf.write_text("\n".join([
            *(f"include {schema / name}.schema" for name in ("core", "cosine", "inetorgperson", "nis")),
            f"pidfile {self.dir / 'slapd.pid'}",
            f"argsfile {self.dir / 'slapd.args'}",
            "modulepath /usr/lib/ldap",
            "moduleload back_mdb",
            f"TLSCertificateFile {self.ca_file}",
            f"TLSCertificateKeyFile {self.dir / 'key.pem'}",
            "database mdb",
            "maxsize 33554432",
            f'suffix "{SUFFIX}"',
            f'rootdn "{ADMIN_DN}"',
            f"rootpw {ADMIN_PASSWORD}",
            f"directory {self.dir / 'db'}",
            "access to attrs=userPassword by self read by anonymous auth by * none",
            "access to * by * read",
            "",
        ]))
        (self.dir / "data.ldif").write_text(LDIF)
        subprocess.run(["slapadd", "-f", str(conf), "-l", str(self.dir / "data.ldif")], check=True,
                       capture_output=True, timeout=60)
        self._log = open(self.dir / "slapd.log", "wb")
        self.proc = subprocess.Popen([binary, "-h", f"{self.uri}/ {self.ldaps_uri}/", "-f", str(conf), "-d", "0"], cwd=self.dir,
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"slapd exited:\n{self.log()[-2000:]}")
            try:
                self.admin().unbind_s()
                return self
            except Exception:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"slapd did not answer within {timeout}s:\n{self.log()[-2000:]}")

    def log(self) -> str:
        path = self.dir / "slapd.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def admin(self):
        """A python-ldap connection bound as the directory's administrator (to change it in tests)."""
        import ldap

        conn = ldap.initialize(self.uri)
        conn.simple_bind_s(ADMIN_DN, ADMIN_PASSWORD)
        return conn

    def remove_member(self, group_cn: str, member_dn: str) -> None:
        import ldap

        conn = self.admin()
        conn.modify_s(f"cn={group_cn},{GROUPS}", [(ldap.MOD_DELETE, "member", [member_dn.encode()])])
        conn.unbind_s()

    def add_member(self, group_cn: str, member_dn: str) -> None:
        import ldap

        conn = self.admin()
        try:
            conn.modify_s(f"cn={group_cn},{GROUPS}", [(ldap.MOD_ADD, "member", [member_dn.encode()])])
        except ldap.TYPE_OR_VALUE_EXISTS:
            pass
        conn.unbind_s()

    def delete(self, dn: str) -> None:
        conn = self.admin()
        conn.delete_s(dn)
        conn.unbind_s()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if getattr(self, "_log", None):
            self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
