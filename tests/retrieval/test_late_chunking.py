"""Late chunking's arithmetic: windows, their overlap and stitching, span pooling, against the
local TEI-shaped server's deterministic /embed_all vectors (no database)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from retrieval.ai import AiServerError
from retrieval.ai.token_embeddings import TokenEmbeddingClient
from retrieval.indexing.late_chunking import SpanPooler, late_chunk_vectors, plan_windows, window_spans
from tests.fakeai import FakeAIServer, fake_token_vectors, fake_tokenize

DIM = 16


@pytest.fixture
def ai():
    with FakeAIServer(dim=DIM) as server:
        yield server


def raw_client(ai, **overrides) -> TokenEmbeddingClient:
    return TokenEmbeddingClient(ai.config(**overrides), normalize=False)


def unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def window_texts(ai) -> list[str]:
    """The texts late chunking sent to /embed_all, in order."""
    return [text for r in ai.requests_to("/embed_all") for text in r["json"]["inputs"]]


def expected_vectors(document: str, spans, windows: list[str], dim: int, *, contextual: bool,
                     normalise_tokens: bool = False, central: bool = True) -> np.ndarray:
    """The issue's definition, computed independently of retrieval.indexing.late_chunking.

    Every token takes its vector from the window where it is most central (ties: the later
    window); a chunk is the L2-normalised mean of the raw vectors of the tokens whose midpoint
    lies in [start, end). `normalise_tokens` / `central=False` compute the alternatives a wrong
    implementation would produce (unit rows averaged; the first window's copy wins).
    """
    copies: dict[tuple[int, int], list[tuple[int, int, np.ndarray]]] = {}
    cursor = 0
    for k, text in enumerate(windows):
        base = document.find(text, cursor)
        assert base >= 0, "a window is not a slice of the document"
        cursor = base + 1
        tokens = fake_tokenize(text)
        vectors = fake_token_vectors(text, dim, contextual=contextual)
        content = [(t, np.asarray(v, dtype=np.float64)) for t, v in zip(tokens, vectors) if not t["special"]]
        for i, (token, vector) in enumerate(content):
            key = (base + token["start"], base + token["stop"])
            vector = unit(vector) if normalise_tokens else vector
            copies.setdefault(key, []).append((min(i, len(content) - 1 - i), k, vector))
    pick = (lambda c: max(c, key=lambda x: (x[0], x[1]))) if central else (lambda c: c[0])
    chosen = {key: pick(c)[2] for key, c in copies.items()}
    out = []
    for a, b in spans:
        members = [v for (s, e), v in chosen.items() if 2 * a <= s + e < 2 * b]
        assert members, (a, b)
        out.append(unit(np.mean(members, axis=0)))
    return np.asarray(out)


def numbered_text(words: int) -> str:
    """Distinct words (so every window is found once in the text), sentences of 7 words."""
    parts = []
    for i in range(words):
        parts.append(f"w{i}" + ("." if i % 7 == 6 else ""))
    return " ".join(parts)


# --- windows ------------------------------------------------------------------------------------


def test_window_spans_by_hand():
    assert window_spans(3, length=4, overlap=1) == [(0, 3)]
    assert window_spans(4, length=4, overlap=1) == [(0, 4)]
    assert window_spans(10, length=4, overlap=1) == [(0, 4), (3, 7), (6, 10)]
    # The last window is aligned with the end: same length, a larger overlap with the one before.
    assert window_spans(11, length=4, overlap=1) == [(0, 4), (3, 7), (6, 10), (7, 11)]
    assert window_spans(0, length=4, overlap=1) == []


@pytest.mark.parametrize("n,length,overlap", [(n, length, length // 4) for n, length in
                                              itertools.product([1, 5, 17, 40, 101], [2, 4, 7, 16, 33])]
                         + [(50, 8, 0), (50, 8, 7), (29, 6, 3)])
def test_each_token_is_owned_by_the_window_where_it_is_most_central(n, length, overlap):
    starts = np.arange(n) * 5
    stops = starts + 3
    windows = plan_windows(starts, stops, length=length, overlap=overlap)
    spans = window_spans(n, length=length, overlap=overlap)
    assert [(w.first, w.stop) for w in windows] == spans
    assert spans[0][0] == 0 and spans[-1][1] == n
    assert all(stop - first == min(length, n) for first, stop in spans)
    for (_, stop), (first, _) in zip(spans, spans[1:]):
        assert stop - first >= overlap  # consecutive windows overlap at least as asked
    for i in range(n):
        owners = [k for k, w in enumerate(windows) if w.own_from <= starts[i] < w.own_to]
        assert len(owners) == 1, (i, owners)
        containing = [k for k, (first, stop) in enumerate(spans) if first <= i < stop]
        best = max(containing, key=lambda k: (min(i - spans[k][0], spans[k][1] - 1 - i), k))
        assert owners[0] == best, (i, owners[0], best)
    for w in windows:
        assert w.start_char == starts[w.first] and w.end_char == stops[w.stop - 1]


# --- pooling --------------------------------------------------------------------------------------


def test_span_pooler_counts_a_straddling_token_for_the_chunk_holding_its_midpoint():
    # tokens [0,4) [5,9) [9,10); the middle one's midpoint is 7
    vectors = np.asarray([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]], dtype=np.float32)
    starts, stops = np.asarray([0, 5, 9]), np.asarray([4, 9, 10])
    pooler = SpanPooler([(0, 7), (0, 8), (7, 10), (10, 12)])
    pooler.add(vectors, starts, stops)
    pooler.finish_all()
    assert np.allclose(pooler.vectors[0], [1.0, 0.0])  # [5,9) is outside [0,7): 7 is not < 7
    assert np.allclose(pooler.vectors[1], unit([1.0, 2.0]))  # raw mean, then unit length
    assert np.allclose(pooler.vectors[2], unit([3.0, 5.0]))
    assert pooler.empty == [3]  # no token: left for the ordinary embedding


def test_span_pooler_finishes_chunks_as_windows_pass_them():
    pooler = SpanPooler([(0, 4), (2, 9), (9, 20)])
    pooler.add(np.ones((2, 2), dtype=np.float32), np.asarray([0, 5]), np.asarray([3, 8]))
    assert pooler.finish_before(5) == 1  # only [0,4) has ended before 5
    assert list(pooler.sums) == [1]  # the finished chunk's running sum is gone
    pooler.add(np.ones((1, 2), dtype=np.float32), np.asarray([10]), np.asarray([12]))
    assert pooler.finish_before(100) == 3 and not pooler.sums


# --- against the server ---------------------------------------------------------------------------


def test_one_window_pooling_matches_the_servers_token_vectors(ai):
    ai.contextual_tokens = True
    text = "Apples grow on trees. Pears, too! Plums grow on trees as well; cherries also do."
    # chunks that overlap, cut through words and hold punctuation
    spans = [(0, 21), (15, 40), (22, 33), (3, 9), (34, len(text))]
    progress = []
    result = late_chunk_vectors(raw_client(ai), text, spans, window=512, progress=progress.append)
    assert result.windows == 1 and result.empty == [] and window_texts(ai) == [text.rstrip()]
    expected = expected_vectors(text, spans, window_texts(ai), DIM, contextual=True)
    assert np.allclose(result.vectors, expected, atol=1e-5)
    # Raw states averaged, not unit rows: the two differ here because token lengths differ.
    wrong = expected_vectors(text, spans, window_texts(ai), DIM, contextual=True, normalise_tokens=True)
    assert not np.allclose(result.vectors, wrong, atol=1e-3)
    assert progress[-1] == len(spans)
    # the first chunk by hand: tokens Apples grow on trees .
    rows = [np.asarray(v) for t, v in zip(fake_tokenize(text), fake_token_vectors(text, DIM, contextual=True))
            if not t["special"] and t["stop"] <= 21]
    assert len(rows) == 5
    assert np.allclose(result.vectors[0], unit(np.mean(rows, axis=0)), atol=1e-5)


def test_long_document_is_stitched_from_overlapping_windows(ai):
    ai.contextual_tokens = True
    ai.max_input_length = 40  # TEI's own limit: a window over it would be cut short
    text = numbered_text(300)
    spans = [(m.start(), m.end()) for m in __import__("re").finditer(r"[^.]+\.?", text)]
    spans += [(5, 400), (390, 1200), (1000, len(text))]  # long chunks spanning several windows
    progress = []
    result = late_chunk_vectors(raw_client(ai), text, spans, window=40, progress=progress.append)
    windows = window_texts(ai)
    assert result.windows == len(windows) >= 8
    assert all(len(fake_tokenize(w)) <= 40 for w in windows)  # specials included
    assert result.tokens == len(fake_tokenize(text)) - 2
    expected = expected_vectors(text, spans, windows, DIM, contextual=True)
    assert np.allclose(result.vectors, expected, atol=1e-5)
    # The overlap matters: taking each token from the first window that has it gives other vectors.
    first_wins = expected_vectors(text, spans, windows, DIM, contextual=True, central=False)
    assert not np.allclose(result.vectors, first_wins, atol=1e-3)
    # progress after every request and window, never going back, ending with every chunk
    assert len(progress) >= len(windows) and progress == sorted(progress) and progress[-1] == len(spans)


def test_byte_offsets_from_the_tokenizer_give_the_same_vectors(ai):
    ai.contextual_tokens = True
    text = "Grüße aus Köln: Äpfel, Birnen und Pflaumen wachsen an Bäumen. Привет, мир! Ende."
    spans = [(0, 15), (16, 62), (63, len(text))]
    chars = late_chunk_vectors(raw_client(ai), text, spans, window=512, progress=lambda n: None)
    ai.byte_offsets = True
    ai.reset()
    assert ai.requests == []
    as_bytes = late_chunk_vectors(raw_client(ai), text, spans, window=512, progress=lambda n: None)
    tok = ai.requests_to("/tokenize")[0]
    assert tok["json"]["inputs"] == [text]
    assert np.allclose(chars.vectors, as_bytes.vectors, atol=1e-6)
    assert np.allclose(chars.vectors, expected_vectors(text, spans, window_texts(ai), DIM, contextual=True),
                       atol=1e-5)


def test_a_window_the_server_cuts_short_is_a_clear_permanent_error(ai):
    ai.max_input_length = 20
    with pytest.raises(AiServerError) as info:
        late_chunk_vectors(raw_client(ai), numbered_text(100), [(0, 50)], window=64, progress=lambda n: None)
    assert not info.value.transient
    assert "cut a window of" in str(info.value) and "max input tokens" in str(info.value)


def test_token_client_drops_the_closing_special_tokens_vector_when_truncated(ai):
    ai.max_input_length = 5  # <s> + 3 tokens + </s>
    result = TokenEmbeddingClient(ai.config(), normalize=False).embed_detailed(["one two three four five"])[0]
    assert result.truncated and result.offsets == [(0, 3), (4, 7), (8, 13)]
    expected = fake_token_vectors("one two three four five", DIM)[1:4]
    assert np.allclose(result.vectors, expected, atol=1e-6)


def test_transient_embed_all_failure_is_retried_by_the_client(ai):
    ai.fail_next("/embed_all", {"status": 503}, times=1)
    result = late_chunk_vectors(raw_client(ai), "Retry this text.", [(0, 16)], window=512, progress=lambda n: None)
    assert result.empty == [] and len(ai.requests_to("/embed_all")) == 2
    ai.fail_next("/embed_all", {"status": 503}, times=10)
    with pytest.raises(AiServerError) as info:
        late_chunk_vectors(raw_client(ai), "Retry this text.", [(0, 16)], window=512, progress=lambda n: None)
    assert info.value.transient
