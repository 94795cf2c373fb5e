"""The search benchmark's parts; `bench/search.py` is its command and describes what it measures.

* `corpus`: the synthetic chunks (clustered vectors, Zipf text with topic words) and `Scope`;
* `database`: the bench server's settings, loading the corpus (COPY, HNSW build), prewarm;
* `scopes`: the scopes searched, their queries and exact ground truth;
* `measure`: timing the product's search functions and `retrieve()` per scope;
* `explain`: EXPLAIN (ANALYZE, BUFFERS) of one query of each kind;
* `sweeps`: exact scan vs HNSW over scope sizes and collection counts;
* `variants`: alternatives measured in the bench's process only (ef_search, full-text budgets, ...);
* `report`: the goals; `run`: all of it, in order, as one JSON-ready dict.
"""
