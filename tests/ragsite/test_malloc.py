"""core.memory: the indexing worker's malloc arena cap takes effect with glibc and is harmless elsewhere."""
from __future__ import annotations

import sys

import pytest

from core import memory


@pytest.fixture
def fresh_caches():
    memory._glibc.cache_clear()
    memory.malloc_arenas_limit.cache_clear()
    yield
    memory._glibc.cache_clear()
    memory.malloc_arenas_limit.cache_clear()


def test_the_arena_cap_is_set_with_glibc_and_a_no_op_elsewhere(fresh_caches, monkeypatch):
    assert memory.malloc_arenas_limit(8) is True  # this Linux's glibc (8 per core is glibc's own default)
    memory.malloc_arenas_limit.cache_clear()
    memory._glibc.cache_clear()
    monkeypatch.setattr(sys, "platform", "darwin")
    assert memory.malloc_arenas_limit(1) is False
