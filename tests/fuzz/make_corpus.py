#!/usr/bin/env python3
"""Writes a libFuzzer seed corpus cut from the real traces: make_corpus.py OUT_DIR TRACE.gz...

Per trace: its first and last 4 KB as they are, and a few small valid traces made of
its header keys and a window of 12 events (so the fuzzer starts from real shapes).
"""
import gzip
import json
import pathlib
import sys


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for path in map(pathlib.Path, sys.argv[2:]):
        raw = gzip.open(path, "rb").read()
        stem = path.name.split(".")[0]
        (out / f"{stem}-head").write_bytes(raw[:4096])
        (out / f"{stem}-tail").write_bytes(raw[-4096:])
        doc = json.loads(raw)
        header = {} if isinstance(doc, list) else {k: v for k, v in doc.items() if k != "traceEvents"}
        events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
        for k, start in enumerate(range(0, len(events), max(1, len(events) // 6))):
            window = events[start:start + 12]
            piece = window if isinstance(doc, list) else dict(header, traceEvents=window)
            text = json.dumps(piece, separators=(",", ":"))
            if len(text) <= 8192:
                (out / f"{stem}-w{k}").write_text(text)


if __name__ == "__main__":
    main()
