"""The collections' tests share the knowledge tests' collection fixture (a curated collection, its groups)."""
from tests.knowledge.conftest import kb  # noqa: F401 - the fixture: a collection, its curator, a member
