"""The Summary tab's ranked tables against `strata summary --json`: shared by
panels_match_summary_test.py (every trace) and summary_tables_view_test.py (the ranking toggle).

`table_mismatches(summary, tables)` takes the summary's JSON and the layout dump's
`panels.summary_tables`, and returns what differs, in words: each table's rows must be the
summary's (names, GPU, CPU and wall time, counts), ranked by the dump's `rank_by` (wall time
where a table's items have no such time), ties in the summary's order; kernel and layer rows
show the summary's efficiency figures (TFLOP/s, share of the roofline, "–" when unknown)."""

ROWS = 50  # the tables list as many as the summary lists of kernels and layers
UNKNOWN = "\u2013"


def expected_rows(summary):
    """Per table: the summary's rows in its order, as the viewer's dump writes them."""
    def row(name, gpu, cpu, wall, count):
        r = {"name": name, "wall_ns": wall, "count": count}
        if gpu is not None:
            r["gpu_ns"] = gpu
        if cpu is not None:
            r["cpu_ns"] = cpu
        return r
    return {
        "phases": [row(p["phase"], p["gpu_busy_ns"], p["cpu_ns"], p["total_ns"], p["segments"]) for p in summary["phases"]],
        "layers": [row(l["path"], l["gpu_busy_ns"], l["cpu_ns"], l["total_ns"], l["occurrences"]) for l in summary["layers"]],
        "kernels": [row(k["name"], k["total_ns"], None, k["total_ns"], k["count"]) for k in summary["kernels"][:ROWS]],
        "cpu_ops": [row(o["name"], None, o["total_ns"], o["total_ns"], o["count"]) for o in summary["cpu_ops"][:ROWS]],
    }


def ranked(rows, mode):
    """The rows by `mode`'s time, longest first, ties in the given order; and the mode used."""
    key = {"gpu": "gpu_ns", "cpu": "cpu_ns", "wall": "wall_ns"}[mode]
    if rows and key not in rows[0]:
        mode, key = "wall", "wall_ns"
    return sorted(rows, key=lambda r: -r[key]), mode


def efficiency_mismatches(table, rows, stats, name_key):
    """Kernel or layer rows against the summary's efficiency list (its top 50 by time)."""
    out = []
    by_name = {s[name_key]: s for s in stats}
    for r in rows:
        s = by_name.get(r["name"])
        if s is None:
            continue
        if (s["flop_per_s"] is None) != (r["tflops"] == UNKNOWN):
            out.append(f"{table} {r['name'][:80]}: TFLOP/s {r['tflops']}, the summary's flop_per_s {s['flop_per_s']}")
        elif s["flop_per_s"] is not None and r["tflops"] != "<0.001":
            tflops = float(r["tflops"])
            if abs(tflops - s["flop_per_s"] / 1e12) > 0.006 * max(tflops, 1e-3):
                out.append(f"{table} {r['name'][:80]}: {tflops} TFLOP/s, the summary's {s['flop_per_s'] / 1e12}")
        share = s["roofline_share"]
        roof = UNKNOWN if share is None else f"{100 * share:.0f}%"
        if r["roof"] != roof and not (share is not None and abs(float(r["roof"].rstrip("%")) - 100 * share) <= 0.51):
            out.append(f"{table} {r['name'][:80]}: roof {r['roof']}, the summary's {roof}")
    return out


def table_mismatches(summary, tables):
    out = []
    mode = tables.get("rank_by")
    for table, rows in expected_rows(summary).items():
        shown = tables.get(table, {})
        want, want_mode = ranked(rows, mode)
        if shown.get("ranked_by") != want_mode:
            out.append(f"{table}: ranked by {shown.get('ranked_by')}, expected {want_mode} (rank_by {mode})")
        got = [{k: v for k, v in r.items() if k not in ("target", "tflops", "roof")} for r in shown.get("rows", [])]
        if got != want:
            first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            out.append(f"{table}: {len(got)} rows, the summary {len(want)}; first difference at {first}:\n"
                       f"    view:    {got[first] if first < len(got) else None}\n"
                       f"    summary: {want[first] if first < len(want) else None}")
    eff = summary.get("efficiency", {})
    out += efficiency_mismatches("kernels", tables.get("kernels", {}).get("rows", []), eff.get("kernels", []), "name")
    out += efficiency_mismatches("layers", tables.get("layers", {}).get("rows", []), eff.get("layers", []), "path")
    return out
