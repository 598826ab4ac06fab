#!/usr/bin/env python3
"""The model structure (print(model) text) names the layers of a with_modules trace by their
attribute paths (layer4.1.conv2), in the viewer as in `strata summary`:
  - `strata view FILE --model M.txt --dump-layout` (headless, under xvfb-run);
  - File > Load model structure (Ctrl+M, a typed path, Enter): the open trace annotated again,
    its view and selection kept; reopening the same trace uses the structure again;
  - a text that is not print(model)'s: the dialog says so, naming the line; nothing changes.
Exit 77 (skipped) without xvfb-run or OpenGL 3.3."""
import json, os, re, shutil, subprocess, sys

from headless_view import xvfb_run

strata, trace, out = sys.argv[1], sys.argv[2], sys.argv[3]
if not shutil.which("xvfb-run"):
    print("xvfb-run not found: skipped")
    sys.exit(77)
os.makedirs(out, exist_ok=True)


def resnet18_text():
    """torchvision's resnet18 as print(model) writes it."""
    bn = lambda c: f"BatchNorm2d({c}, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    conv = lambda i, o, k, s, p: f"Conv2d({i}, {o}, kernel_size=({k}, {k}), stride=({s}, {s}){', padding=(%d, %d)' % (p, p) if p else ''}, bias=False)"
    t = ["ResNet(", f"  (conv1): {conv(3, 64, 7, 2, 3)}", f"  (bn1): {bn(64)}", "  (relu): ReLU(inplace=True)",
         "  (maxpool): MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)"]
    c = 64
    for layer in range(1, 5):
        o = 64 * 2 ** (layer - 1)
        t.append(f"  (layer{layer}): Sequential(")
        for b in range(2):
            i, s = (c, 2 if layer > 1 else 1) if b == 0 else (o, 1)
            t += [f"    ({b}): BasicBlock(", f"      (conv1): {conv(i, o, 3, s, 1)}", f"      (bn1): {bn(o)}",
                  "      (relu): ReLU(inplace=True)", f"      (conv2): {conv(o, o, 3, 1, 1)}", f"      (bn2): {bn(o)}"]
            if b == 0 and layer > 1:
                t += ["      (downsample): Sequential(", f"        (0): {conv(i, o, 1, 2, 0)}", f"        (1): {bn(o)}", "      )"]
            t.append("    )")
        t.append("  )")
        c = o
    t += ["  (avgpool): AdaptiveAvgPool2d(output_size=(1, 1))", "  (fc): Linear(in_features=512, out_features=1000, bias=True)", ")"]
    return "\n".join(t) + "\n"


model = os.path.join(out, "resnet18_model.txt")
bad = os.path.join(out, "not_a_model.txt")
open(model, "w").write(resnet18_text())
open(bad, "w").write("ResNet(\n  (conv1): Conv2d(3, 64, kernel_size=(7, 7), bias=False)\n  this is not a module\n)\n")
env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1")


def view(name, *args):
    dump = os.path.join(out, name + ".json")
    if os.path.exists(dump):
        os.remove(dump)
    cmd = [*xvfb_run(), "-s", "-screen 0 1280x800x24", strata, "view", trace, "--size", "1280x800",
           "--dump-layout", dump, *args]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    print(name, r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    if r.returncode != 0 and "cannot open a window" in r.stderr:
        print("no OpenGL 3.3 under xvfb: skipped")
        sys.exit(77)
    assert r.returncode == 0, f"strata view ({name}) failed: {r.returncode}"
    return json.load(open(dump))


NAMED = ["Iteration 2/Forward/ResNet/conv1", "Iteration 2/Forward/ResNet/layer1/layer1.0/layer1.0.conv1",
         "Iteration 2/Forward/ResNet/layer1/layer1.0/layer1.0.bn2"]


def check_named(d, what):
    paths = d["layer_paths"]
    for p in NAMED:
        assert p in paths, (what, p, paths[:20])
    assert not any("Conv2d_" in p for p in paths), (what, paths[:20])
    assert os.path.samefile(d["model_structure"], model), (what, d["model_structure"])
    assert "ResNet" in d["texts"] and "ResNet_0" not in d["texts"], (what, d["texts"][:40])


# Without a model structure: the trace's own module names.
plain = view("plain")
assert plain["model_structure"] == "", plain["model_structure"]
assert "Iteration 2/Forward/ResNet_0/Conv2d_0" in plain["layer_paths"], plain["layer_paths"][:10]

# --model, headless.
check_named(view("model", "--model", model), "--model")

# The same through File > Load model structure, the selection kept.
if re.fullmatch(r"[A-Za-z0-9/._ -]+", model):
    loaded = view("menu", "--focus", "Iteration 2/Forward", "--keys", f"Ctrl+M,{model},Enter")
    check_named(loaded, "File > Load model structure")
    assert loaded["selected"] == "Forward", loaded["selected"]
    assert loaded["dialogs"] == [], loaded["dialogs"]
    # Opened again (File > Open, the trace picked in its directory): the structure is used again.
    entries = sorted(n for n in os.listdir(os.path.dirname(os.path.abspath(trace)))
                     if not n.startswith(".") and (n.endswith(".json") or n.endswith(".gz")))
    downs = ",".join(["Down"] * (entries.index(os.path.basename(trace)) + 1))
    again = view("reopened", "--keys", f"Ctrl+M,{model},Enter,Ctrl+O,{downs},Enter")
    check_named(again, "reopened")
    # A text that is not print(model)'s: said in the dialog, with its line; the names stay.
    refused = view("bad", "--keys", f"Ctrl+M,{bad},Enter")
    assert [x["name"] for x in refused["dialogs"]] == ["Load model structure"], refused["dialogs"]
    assert "line 3:" in refused["ui"]["browser_error"], refused["ui"]["browser_error"]
    assert refused["model_structure"] == "", refused["model_structure"]
    assert "Iteration 2/Forward/ResNet_0/Conv2d_0" in refused["layer_paths"]
else:
    print("the output path cannot be typed as keys: File > Load model structure not checked")

# strata summary --model names them the same.
r = subprocess.run([strata, "summary", trace, "--model", model], capture_output=True, text=True, timeout=120)
assert r.returncode == 0, r.stderr
assert "Backward/ResNet/layer" in r.stdout and "Conv2d_" not in r.stdout, r.stdout
print("model structure test passed")
