#!/usr/bin/env python3
"""The Attach flow for a whole job, headless and without a GPU: a shell launcher starts RANKS
simulated ranks (strata_sim_job, the real agent over the CUPTI simulator, each with RANK and
WORLD_SIZE set), and `strata view --attach-job LAUNCHER --duration 2 -o DIR` records every rank
together and shows the job live. Asserts that one file per rank was written, that the final
view is the job (every rank in the overview), and on image statistics. Exit 77 (skipped)
without xvfb-run or OpenGL 3.3.
Usage: attach_job_view_test.py STRATA SIM_JOB AGENT OUT_DIR RANKS"""
import json, os, shutil, subprocess, sys, tempfile, time

from headless_view import xvfb_run

strata, sim_job, agent, out, ranks = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
if not shutil.which("xvfb-run"):
    print("xvfb-run not found: skipped")
    sys.exit(77)
os.makedirs(out, exist_ok=True)
final, dump, job_dir = os.path.join(out, "attach-job.png"), os.path.join(out, "attach-job.json"), os.path.join(out, "attach-job")
shutil.rmtree(job_dir, ignore_errors=True)
sockets = tempfile.mkdtemp(prefix="strata-attach-job-")
env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1", STRATA_SOCKET_DIR=sockets)
for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
          "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
    env.pop(k, None)
script = " ".join(f"RANK={r} WORLD_SIZE={ranks} {sim_job} --agent {agent} --seconds 120 --kernels 6 --sleep-us 300 "
                  f"--range iteration &" for r in range(ranks)) + " wait"
launcher = subprocess.Popen(["sh", "-c", script], env=env, stdout=subprocess.PIPE, text=True)
try:
    ready = [launcher.stdout.readline() for _ in range(ranks)]  # "ready PID" from each rank
    assert all(l.startswith(("ready", "listening")) for l in ready), ready
    cmd = [*xvfb_run(), "-s", "-screen 0 1280x800x24", strata, "view", "--size", "1280x800", "--attach-job",
           str(launcher.pid), "--duration", "2", "-o", job_dir, "--screenshot", final, "--dump-layout", dump]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
finally:
    subprocess.run(["pkill", "-P", str(launcher.pid)], check=False)  # the ranks first: then the launcher
    launcher.terminate()
    launcher.wait()
    shutil.rmtree(sockets, ignore_errors=True)
print(r.stdout, r.stderr)
if r.returncode != 0 and "cannot open a window" in r.stderr:
    print("no OpenGL 3.3 under xvfb: skipped")
    sys.exit(77)
assert r.returncode == 0, f"strata view --attach-job failed: {r.returncode}"
files = sorted(f for f in os.listdir(job_dir) if f.startswith("rank-"))
assert files == [f"rank-{k}.pt.trace.json" for k in range(ranks)], files
layout = json.load(open(dump))
job = layout.get("job")
assert job and job["ranks"] == ranks, layout.get("job")
img = layout["image"]
assert img["distinct_colours"] >= 30 and 0.02 < img["non_background"] < 0.9, img
print("attach-job view test passed:", files, job)
