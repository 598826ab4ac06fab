#!/usr/bin/env python3
"""Jobs derived from a real rank with a known truth (tools/make_job.py): `strata summary DIR`
finds each rank's clock offset, every injected straggler (rank, step, delay within 30%, its
cause and where its time went) and no other; per-rank summaries merged with --merge give the
same job summary as the direct one.

usage: job_test.py STRATA MAKE_JOB BASE_TRACE WORK_DIR
"""
import json, os, shutil, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "render"))
from headless_view import xvfb_run  # noqa: E402

strata, make_job, base, work = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
if not os.path.exists(base):
    print(f"{base} not found: skipped")
    sys.exit(77)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

CAUSE = {"kernel": "kernels", "data": "data loading", "cpu": "CPU-side gap"}
# name: (ranks, seed, max offset in ms, stragglers RANK:STEP:CAUSE:DELAY_MS)
JOBS = {
    "kernel-r2-s5": (4, 1, 15, ["2:5:kernel:8"]),
    "data-r1-s4": (4, 2, 15, ["1:4:data:12"]),
    "cpu-r5-s6": (8, 3, 15, ["5:6:cpu:6"]),
    "two-stragglers": (4, 4, 15, ["0:4:kernel:5", "3:6:data:10"]),
    "none": (4, 5, 15, []),
    "aligned": (4, 6, 0, ["3:5:cpu:4"]),
}
failures = []


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def check(name, cond, what):
    if not cond:
        failures.append(f"{name}: {what}")


for name, (ranks, seed, offset_ms, stragglers) in JOBS.items():
    out = os.path.join(work, name)
    cmd = [sys.executable, make_job, base, out, "--ranks", str(ranks), "--seed", str(seed), "--offset-ms", str(offset_ms)]
    for s in stragglers:
        cmd += ["--straggler", s]
    run(*cmd)
    truth = json.load(open(out + ".truth.json"))
    job = json.loads(run(strata, "summary", out, "--json"))
    text = run(strata, "summary", out)

    # Clock offsets: ours put each rank on rank 0's clock, undoing the injected offsets.
    check(name, [r["rank"] for r in job["ranks"]] == list(range(ranks)), f"ranks {[r['rank'] for r in job['ranks']]}")
    for r in job["ranks"]:
        want = -(truth["offsets_ns"][r["rank"]] - truth["offsets_ns"][0])
        check(name, abs(r["clock_offset_ns"] - want) <= 100_000,
              f"rank {r['rank']} clock offset {r['clock_offset_ns']} ns, truth {want} ns")
        if offset_ms == 0:
            check(name, r["clock_offset_ns"] == 0, f"aligned clocks were moved: rank {r['rank']} by {r['clock_offset_ns']} ns")

    # Stragglers: each injected one found, and no other.
    found = {(s["rank"], s["step"]): s for s in job["stragglers"]}
    for t in truth["stragglers"]:
        s = found.pop((t["rank"], t["step"]), None)
        if s is None:
            failures.append(f"{name}: straggler rank {t['rank']} step {t['step']} not found (found {job['stragglers']})")
            continue
        check(name, abs(s["delay_ms"] - t["delay_ms"]) <= 0.3 * t["delay_ms"],
              f"rank {t['rank']} step {t['step']}: delay {s['delay_ms']} ms, truth {t['delay_ms']} ms")
        check(name, s["cause"].startswith(CAUSE[t["cause"]]), f"cause '{s['cause']}' for an injected {t['cause']} delay")
        check(name, s["phase"] == t["phase"], f"phase '{s['phase']}', truth '{t['phase']}'")
        if t["cause"] == "kernel":
            check(name, s["kernel"] == t["kernel"], f"kernel '{s['kernel']}', truth '{t['kernel']}'")
            check(name, s["layer"] != "", "no layer named for a kernel delay")
        check(name, f"straggler: rank {t['rank']} in step {t['step']}" in text, "the text summary does not name the straggler")
        waits = {w["rank"]: w["wait_ns"] for w in s["collective"]["waits_ns"]}
        others = [w for r, w in waits.items() if r != t["rank"]]
        check(name, others and min(others) >= 0.7 * t["delay_ms"] * 1e6,
              f"the others' waits {waits} at the collective rank {t['rank']} held up")
    check(name, not found, f"false stragglers: {list(found.values())}")

    # Per-rank summaries made anywhere merge into the same job summary: the recipe of
    # docs/jobs.md, run as it is written there.
    if name in ("kernel-r2-s5", "cpu-r5-s6"):
        recipe = ("mkdir -p sums && ls runs/*.json.gz | xargs -P \"$(nproc)\" -I{} sh -c "
                  "'strata summary \"$1\" --json > \"sums/$(basename \"$1\").json\"' _ {} && "
                  "strata summary --merge sums/*.json --json > job.json")
        place = os.path.join(work, name + "-recipe")
        shutil.rmtree(place, ignore_errors=True)
        os.makedirs(place)
        os.symlink(os.path.abspath(out), os.path.join(place, "runs"))
        env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(strata)) + os.pathsep + os.environ["PATH"])
        r = subprocess.run(["sh", "-c", recipe], cwd=place, env=env, capture_output=True, text=True, timeout=900)
        check(name, r.returncode == 0, f"the merge recipe failed: {r.stderr.strip()}")
        if r.returncode == 0:
            merged = json.load(open(os.path.join(place, "job.json")))
            direct = json.loads(subprocess.run([strata, "summary", "runs", "--json"], cwd=place, capture_output=True,
                                               text=True, timeout=900).stdout)  # the same file names
            check(name, merged == direct, "--merge of per-rank summaries differs from the direct job summary")
    print(f"{name}: {ranks} ranks, {len(job['stragglers'])} stragglers found: "
          + "; ".join(f"rank {s['rank']} step {s['step']} {s['delay_ms']:.2f} ms {s['cause']} in {s['phase']}" for s in job["stragglers"]))

# The viewer opens a job: every rank, the straggler's tracks shown first, its collective marked.
if shutil.which("xvfb-run"):
    out = os.path.join(work, "cpu-r5-s6")
    dump = os.path.join(work, "job-view.json")
    # Mesa's GL driver is unloaded before LeakSanitizer reports, leaving allocations it cannot
    # attribute: the viewer runs without leak checks, every `strata summary` above keeps them.
    viewer_asan = ":".join(o for o in [os.environ.get("ASAN_OPTIONS", ""), "detect_leaks=0"] if o)
    r = subprocess.run([*xvfb_run(), "-s", "-screen 0 1280x800x24", strata, "view", out, "--size", "1280x800",
                        "--tab", "job", "--dump-layout", dump, "--screenshot", os.path.join(work, "job-view.png")],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1", ASAN_OPTIONS=viewer_asan))
    if r.returncode != 0 and "cannot open a window" not in r.stderr:
        failures.append(f"strata view of a job failed ({r.returncode}): {r.stderr.strip()}")
    elif r.returncode == 0:
        layout = json.load(open(dump))
        job = layout.get("job", {})
        check("view", job.get("ranks") == 8, f"job ranks {job.get('ranks')}")
        check("view", job.get("shown_rank") == 5, f"shown rank {job.get('shown_rank')} (the straggler is rank 5)")
        check("view", job.get("stragglers") == 1 and job.get("selected_collective", -1) >= 0, f"job {job}")
        check("view", layout["image"]["non_background"] > 0.05, f"image {layout['image']}")
        print(f"view: {job}")
else:
    print("xvfb-run not found: the job's view is not checked")

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
