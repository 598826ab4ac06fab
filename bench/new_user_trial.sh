#!/bin/bash
# The new-user trial, driven with real X input events: open the Hotline ResNet-50 trace,
# click the Backward phase, then the widest layer in the levels view, saving a screenshot
# after each step. The answer (slowest backward layer, its longest kernel) must then be on
# screen. Needs Xvfb, xdotool, xwd and ImageMagick; the click positions are for a
# 1920x1080 window.
#   bench/new_user_trial.sh build/app/strata OUT_DIR TRACE X1 Y1 X2 Y2
set -eu
strata=$1
out=$2
trace=$3
mkdir -p "$out"
export DISPLAY=:97
Xvfb :97 -screen 0 1920x1080x24 >/dev/null 2>&1 &
xvfb=$!
trap 'kill $app $xvfb 2>/dev/null' EXIT
sleep 1
"$strata" "$trace" --size 1920x1080 >"$out/log.txt" 2>&1 &
app=$!
for _ in $(seq 1 100); do xdotool search --name Strata >/dev/null 2>&1 && break; sleep 0.1; done
sleep 2  # the load
shot() { xwd -root -silent | /usr/bin/convert xwd:- "$out/$1.png"; echo "$out/$1.png"; }
click() { xdotool mousemove "$1" "$2"; sleep 0.3; xdotool click 1; sleep 0.8; }
shot 0-opened
click "$4" "$5"; shot 1-backward
click "$6" "$7"; shot 2-slowest-layer
