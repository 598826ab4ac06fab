#!/usr/bin/env python3
"""The strata command line, end to end through the built binary.

usage: cli_test.py STRATA README TRACE WORK_DIR [XVFB_RUN]

- `strata --help` lists every subcommand (and the forms that are not one: FILE, DIR, --merge);
  the README's "Command line" block lists exactly the subcommands `--help` lists.
- `strata SUB --help` (and `strata help SUB`) print SUB's usage on stdout and exit 0.
- `strata --version` prints "strata X.Y.Z".
- Exit codes: 0 done, 1 failed (a missing file, named; a recording that wrote nothing; a --focus
  that matches nothing), 2 usage (an unknown subcommand or option, a missing argument).
"""
import json

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "render"))
from headless_view import xvfb_run  # noqa: E402

strata, readme, trace, work = (os.path.abspath(a) for a in sys.argv[1:5])
xvfb = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] and not sys.argv[5].endswith("NOTFOUND") else None
os.makedirs(work, exist_ok=True)
failures = []
# No display: `strata FILE` prints what `strata info` does instead of opening a window.
ENV = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}


def run(*args, timeout=120, prefix=()):
    return subprocess.run([*prefix, strata, *args], capture_output=True, text=True, timeout=timeout, cwd=work, env=ENV)


def check(what, ok, r=None):
    if not ok:
        detail = f"\n  rc {r.returncode}\n  stdout: {r.stdout[-1500:]!r}\n  stderr: {r.stderr[-1500:]!r}" if r else ""
        failures.append(what + detail)


def help_subcommands(text):
    """The names under "Subcommands:" in CLI11's help."""
    names, inside = [], False
    for line in text.splitlines():
        if line.strip() == "Subcommands:":
            inside = True
        elif inside and re.match(r"^  [a-z]", line):
            names.append(line.split()[0])
        elif inside and line and not line.startswith("    "):
            break
    return names


def readme_subcommands(path):
    """The subcommands the README's "Command line" block shows: `strata WORD ...` lines."""
    text = open(path, encoding="utf-8").read()
    section = text.split("## Command line", 1)[1]
    block = section.split("```", 2)[1]
    return {m.group(1) for m in re.finditer(r"^strata ([a-z][a-z-]*)\b", block, re.M)}


# strata --help: every subcommand, and the forms that are not one.
r = run("--help")
check("strata --help exits 0 with its text on stdout", r.returncode == 0 and r.stdout and not r.stderr, r)
subs = help_subcommands(r.stdout)
expected = {"view", "info", "summary", "annotate", "predict", "whatif", "diff", "record", "attach"}
check(f"strata --help lists every subcommand: {sorted(subs)} vs {sorted(expected)}", set(subs) == expected, r)
for word in ("FILE", "DIR", "--merge", "--version", "SUBCOMMAND --help"):
    check(f"strata --help mentions {word}", word in r.stdout, r)
check("`strata help` is `strata --help`", run("help").stdout == r.stdout)

# The README's command list is the one --help gives.
documented = readme_subcommands(readme)
check(f"README's Command line block lists the subcommands of --help: README {sorted(documented)}, --help {sorted(subs)}",
      documented == set(subs))

# strata SUB --help: usage on stdout, exit 0.
for sub in subs:
    r = run(sub, "--help")
    check(f"strata {sub} --help exits 0 with its usage on stdout",
          r.returncode == 0 and f"Usage: strata {sub}" in r.stdout and "Options:" in r.stdout and not r.stderr, r)
    check(f"strata help {sub} is strata {sub} --help", run("help", sub).stdout == r.stdout)
    r = run(sub, "-h")
    check(f"strata {sub} -h exits 0", r.returncode == 0 and f"Usage: strata {sub}" in r.stdout, r)

# --version
r = run("--version")
check("strata --version prints 'strata X.Y.Z'", r.returncode == 0 and re.fullmatch(r"strata \d+\.\d+\.\d+\n", r.stdout), r)

# Usage errors: 2, said on stderr.
r = run("frobnicate")
check("strata frobnicate: neither a subcommand nor a file, exit 2",
      r.returncode == 2 and "'frobnicate' is neither a subcommand nor a trace file or directory" in r.stderr, r)
r = run()
check("strata alone: the usage on stderr, exit 2", r.returncode == 2 and "Subcommands:" in r.stderr, r)
r = run("--frobnicate")
check("strata --frobnicate: exit 2", r.returncode == 2 and "--frobnicate" in r.stderr, r)
r = run("summary", trace, "--bogus")
check("an unknown option: exit 2, named, with where the usage is",
      r.returncode == 2 and "--bogus" in r.stderr and "strata summary --help" in r.stderr, r)
r = run("summary")
check("a subcommand without its FILE: exit 2", r.returncode == 2 and "strata summary" in r.stderr, r)
r = run("annotate", trace)
check("annotate without -o: exit 2", r.returncode == 2 and "-o" in r.stderr, r)
r = run("summary", trace, "--item", "Iteration 1", "--range", "1:2")
check("--item and --range together: exit 2", r.returncode == 2, r)
r = run("summary", trace, "--range", "5:1")
check("--range B < A: exit 2 before loading", r.returncode == 2 and "--range" in r.stderr, r)
r = run("whatif", trace, "--scale", "nonsense-3x")
check("whatif --scale with no such scenario: exit 2", r.returncode == 2, r)
r = run("whatif", trace, "--bandwidth", "-1")
check("whatif --bandwidth -1: exit 2", r.returncode == 2 and "--bandwidth" in r.stderr, r)
r = run("predict", trace, "--batch", "8,16")
check("predict --batch with two sizes for one file: exit 2", r.returncode == 2 and "--batch" in r.stderr, r)
r = run("record")
check("record without a command: exit 2", r.returncode == 2 and "no command" in r.stderr, r)
r = run("record", "--frobnicate", "--", "true")
check("record with an unknown option: exit 2", r.returncode == 2 and "--frobnicate" in r.stderr, r)
r = run("attach", "--job", "x")
check("attach --job x: exit 2", r.returncode == 2 and "--job" in r.stderr, r)
r = run("view", trace, "--tab", "nonsense")
check("view --tab nonsense: exit 2", r.returncode == 2 and "--tab" in r.stderr, r)

# Failures: 1, the path named.
missing = os.path.join(work, "no-such-dir", "missing.pt.trace.json")
for args in (["info", missing], ["summary", missing], ["summary", "--json", missing], ["whatif", missing],
             ["annotate", missing, "-o", os.path.join(work, "out.json")], ["predict", missing], ["diff", missing, trace],
             [missing]):
    r = run(*args)
    check(f"strata {' '.join(args)}: a missing file, exit 1 with its path named",
          r.returncode == 1 and missing in r.stderr, r)
r = run("summary", trace, "--model", missing)
check("--model with a missing file: exit 1, named", r.returncode == 1 and missing in r.stderr, r)
# A recording that wrote nothing (a job that never initializes CUDA, or no agent at all).
out = os.path.join(work, "nothing.pt.trace.json")
r = run("record", "-o", out, "--", "true", timeout=120)
check("strata record -- true: no trace, said, exit 1",
      r.returncode == 1 and not os.path.exists(out) and ("no trace was written" in r.stderr or "agent" in r.stderr), r)

# Done: 0 (and `strata FILE` without a display is `strata info FILE`).
r = run("info", trace, "--json")
check("strata info TRACE --json: exit 0", r.returncode == 0 and r.stdout.lstrip().startswith("{"), r)
r2 = run(trace, "--json")


def without_load(text):  # the load's timings differ run to run
    try:
        info = json.loads(text)
    except ValueError:
        return None
    info.pop("load", None)
    return info


check("strata TRACE --json without a display is strata info TRACE --json",
      r2.returncode == 0 and without_load(r2.stdout) == without_load(r.stdout) is not None, r2)
r = run("summary", trace)
check("strata summary TRACE: exit 0", r.returncode == 0 and r.stdout, r)
r = run("whatif", trace, "--scale", "kernels-2x", "--scale", "no-launch-overhead", "--bandwidth", "100", "--json")
check("strata whatif TRACE --scale A --scale B --bandwidth N: exit 0", r.returncode == 0 and r.stdout, r)
r = run("diff", trace, trace, "--json")
d = json.loads(r.stdout) if r.returncode == 0 else {}
check("strata diff TRACE TRACE --json: exit 0, nothing changed, everything aligned",
      d.get("schema") == "strata.diff/1" and d["iteration"]["delta_ns"] == 0 and d["alignment"]["aligned_share"] == 1.0, r)
r = run("diff", trace, trace, "--iteration", "0")
check("diff --iteration 0 (they count from 1): exit 2", r.returncode == 2 and "--iteration" in r.stderr, r)
r = run("diff", trace, trace, "--iteration", "999")
check("diff --iteration past the last: exit 2, the count said", r.returncode == 2 and "iteration" in r.stderr, r)
r = run("diff", trace, os.path.dirname(trace))
check("diff a file against a directory: exit 2", r.returncode == 2, r)
# Two jobs: a directory of two ranks (copies of the trace) against itself.
job = os.path.join(work, "job")
os.makedirs(job, exist_ok=True)
for rank in (0, 1):
    dst = os.path.join(job, f"rank-{rank}.pt.trace.json.gz")
    if not os.path.exists(dst):
        with open(trace, "rb") as src, open(dst, "wb") as out_file:
            out_file.write(src.read())
r = run("diff", job, job, "--json")
d = json.loads(r.stdout) if r.returncode == 0 else {}
check("strata diff DIR DIR --json: every rank compared, the most changed in full",
      d.get("schema") == "strata.diff-job/1" and [x["rank"] for x in d.get("ranks", [])] == [0, 1]
      and all(x["delta_ns"] == 0 for x in d["ranks"]) and d["diff"]["schema"] == "strata.diff/1", r)

# --focus that matches nothing: exit 1, said (needs the viewer and a display: xvfb-run).
viewer = "built without the viewer" not in run("view", "--help").stdout
if viewer and xvfb:
    shot = os.path.join(work, "focus.png")
    r = run("view", trace, "--screenshot", shot, "--size", "800x600", "--focus", "No such item at all",
            prefix=tuple(xvfb_run()), timeout=240)
    if r.returncode != 0 and "cannot open a window" in r.stderr:
        print("no OpenGL 3.3 under xvfb: --focus not checked")
    else:
        check("view --focus matching nothing: exit 1, said", r.returncode == 1 and "matched nothing" in r.stderr, r)
        print("view --focus matching nothing: exit", r.returncode)

if failures:
    print(f"{len(failures)} failures:")
    for f in failures:
        print(" -", f)
    sys.exit(1)
print("strata command line: all checks passed")
