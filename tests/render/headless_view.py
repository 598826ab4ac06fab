"""One headless run of `strata view` for the viewer's python tests: under xvfb-run at a window
size, with a screenshot and the layout dump; a run that cannot open a window (no OpenGL 3.3
under xvfb) or no xvfb-run at all ends the test as skipped (exit 77)."""
import atexit, json, os, shutil, subprocess, sys, tempfile


_auth = None


def xvfb_run():
    """`xvfb-run -a` with an authority file of this test's own: without one, xvfb-run makes a
    temporary folder and exits 5 ("problem while cleaning up temporary directory") when removing
    it fails, hiding the command's own exit status. The file goes when the test ends."""
    global _auth
    if _auth is None:
        fd, _auth = tempfile.mkstemp(prefix="strata-xauth-")
        os.close(fd)
        atexit.register(os.remove, _auth)
    return ["xvfb-run", "-a", "-f", _auth]


def require_xvfb():
    if not shutil.which("xvfb-run"):
        print("xvfb-run not found: skipped")
        sys.exit(77)


def run_view(strata, trace, out, name, *args, size="1600x1000", env=None, timeout=240):
    """`strata view TRACE ARGS` saving OUT/NAME.png and OUT/NAME.json: (the dump, the process)."""
    png, dump = os.path.join(out, name + ".png"), os.path.join(out, name + ".json")
    for f in (png, dump):
        if os.path.exists(f):
            os.remove(f)
    w, h = size.split("x")
    cmd = [*xvfb_run(), "-s", f"-screen 0 {w}x{h}x24", strata, "view", trace, "--size", size,
           "--screenshot", png, "--dump-layout", dump, *args]
    env = dict(env or os.environ, LIBGL_ALWAYS_SOFTWARE="1")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0 and "cannot open a window" in r.stderr:
        print("no OpenGL 3.3 under xvfb: skipped")
        sys.exit(77)
    return (json.load(open(dump)) if os.path.exists(dump) else None), r
