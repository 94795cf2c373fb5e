"""EXPLAIN (ANALYZE, BUFFERS) of one query of each kind, as the product runs it."""
from __future__ import annotations

import json

from bench.searchbench.corpus import Scope
from bench.searchbench.measure import Searcher, force_method, restore_method


def _plan_lines(node: dict, depth: int = 0) -> list[str]:
    name = node["Node Type"]
    if node.get("Index Name"):
        name += f" using {node['Index Name']}"
    elif node.get("Relation Name"):
        name += f" on {node['Relation Name']}"
    if node.get("CTE Name"):
        name += f" ({node['CTE Name']})"
    bits = [f"{node.get('Actual Total Time', 0):.3f} ms", f"rows={node.get('Actual Rows')}"]
    if node.get("Actual Loops", 1) != 1:
        bits.append(f"loops={node['Actual Loops']}")
    hit, read = node.get("Shared Hit Blocks", 0), node.get("Shared Read Blocks", 0)
    if hit or read:
        bits.append(f"buffers hit={hit} read={read}")
    if node.get("Rows Removed by Filter"):
        bits.append(f"removed by filter={node['Rows Removed by Filter']}")
    if node.get("Rows Removed by Index Recheck"):
        bits.append(f"removed by recheck={node['Rows Removed by Index Recheck']}")
    if node.get("Heap Blocks", None) is not None:
        bits.append(f"heap blocks={node['Heap Blocks']}")
    lines = ["  " * depth + f"{name}: " + ", ".join(bits)]
    for child in node.get("Plans", []):
        lines += _plan_lines(child, depth + 1)
    return lines


def explain(searcher: Searcher, scope: Scope, method: str | None, kind: str, query_index: int = 0) -> list[dict]:
    """EXPLAIN (ANALYZE, BUFFERS) of every SELECT the arm (or hybrid) runs, in the same reader transaction."""
    from django.db import connection

    from retrieval.search.scope import reader_transaction

    captured: list = []
    capturing = {"on": False}

    def wrapper(execute, sql, params, many, context):
        if capturing["on"] and sql.lstrip().upper().startswith(("SELECT", "WITH")):
            captured.append((sql, params))
        return execute(sql, params, many, context)

    saved = force_method(method)
    qv, text, _c = scope.queries[query_index]
    out = []
    try:
        with connection.execute_wrapper(wrapper), reader_transaction(searcher.users[scope.user_key]):
            capturing["on"] = True
            if kind == "vector":
                searcher.vector(scope, qv)
            elif kind == "fts":
                searcher.fts(scope, text)
            else:
                searcher.hybrid(scope, qv, text)
            capturing["on"] = False
            with connection.cursor() as cursor:
                for sql, params in captured:
                    cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
                    plan = cursor.fetchone()[0]
                    plan = plan[0] if isinstance(plan, list) else json.loads(plan)[0]
                    entry = {"statement": " ".join(sql.split())[:160], "planning_ms": round(plan["Planning Time"], 3),
                             "execution_ms": round(plan["Execution Time"], 3), "plan": _plan_lines(plan["Plan"])}
                    if "JIT" in plan:
                        entry["jit_ms"] = round(plan["JIT"].get("Timing", {}).get("Total", 0), 3)
                    out.append(entry)
    finally:
        restore_method(saved)
    return out
