"""The password hasher of the test process: Django's PBKDF2 with one iteration.

Users are created with passwords in hundreds of tests, and the production PBKDF2 (1,000,000
iterations) costs ~0.3-1 s per password on the CI's two cores. The hash keeps the name
`pbkdf2_sha256` and records its iteration count, so the servers a test starts (daphne, qcluster,
with Django's default hashers) still accept these passwords. What a test proves about sign-in
(throttles, sessions, tokens) does not depend on the iteration count; ragsite's own setting is
Django's default and unchanged.
"""
from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class OneIterationPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1

    def must_update(self, encoded: str) -> bool:
        # Never rewrite a stronger hash a test's server wrote (a password changed in the browser):
        # the new hash would end the sessions that server signed with the old one.
        return False
