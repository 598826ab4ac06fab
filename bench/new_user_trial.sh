#!/bin/bash
# The new-user trial, driven with real X input events: open the Hotline ResNet-50 trace,
# click the Backward phase, then the widest layer in the levels view, saving a screenshot
# after each step. The answer (slowest backward layer, its longest kernel) must then be on
# screen. Then the instrument's keys and panels, each checked against the screenshots: `?`
# shows the key map and Esc closes it without going back; Esc closes the File menu alone;
# Backspace goes back; a search lists names and a click on one goes to it; the details
# splitter drags; File > Open opens a file with Enter, and the new file starts with an empty
# search and the dragged panel size; Shift+drag measures a range and a click on the ruler
# drops a flag. Needs Xvfb, xdotool, xwd and ImageMagick
# (apt-get install xvfb xdotool x11-apps imagemagick); the click positions are for a
# 1920x1080 window; the panels' and lists' positions come from a headless layout dump.
#   bench/new_user_trial.sh build/app/strata OUT_DIR TRACE X1 Y1 X2 Y2
set -eu
strata=$1
out=$2
trace=$3
mkdir -p "$out"
export DISPLAY=:97
Xvfb :97 -screen 0 1920x1080x24 >/dev/null 2>&1 &
xvfb=$!
app=
trap 'kill $app $xvfb 2>/dev/null' EXIT
sleep 1
# Where the panels, the search bar and the search's list are at this size.
"$strata" view "$trace" --size 1920x1080 --keys "/,conv" --dump-layout "$out/positions.json" >/dev/null
at() { python3 -c "import json,sys; d=json.load(open('$out/positions.json')); u=dict(d['ui'], dialogs=d['dialogs']); print($1)"; }
"$strata" "$trace" --size 1920x1080 >"$out/log.txt" 2>&1 &
app=$!
for _ in $(seq 1 100); do xdotool search --name Strata >/dev/null 2>&1 && break; sleep 0.1; done
sleep 2  # the load
shot() { xwd -root -silent | /usr/bin/convert xwd:- "$out/$1.png"; echo "$out/$1.png"; }
click() { xdotool mousemove "$1" "$2"; sleep 0.3; xdotool click 1; sleep 0.8; }
key() { xdotool key "$@"; sleep 0.8; }
failed=0
# Pixels that differ between two screenshots (a small fuzz for anti-aliasing), in the part
# $CROP (WxH+X+Y) of them when it is set.
differ() {
  /usr/bin/convert "$out/$1.png" -crop "${CROP:-1920x1080+0+0}" +repage "$out/a.png"
  /usr/bin/convert "$out/$2.png" -crop "${CROP:-1920x1080+0+0}" +repage "$out/b.png"
  /usr/bin/compare -metric AE -fuzz 3% "$out/a.png" "$out/b.png" null: 2>&1 | cut -d' ' -f1 || true
}
# expect_same A B WHAT / expect_change A B WHAT: at most / more than 0.1% of the pixels
# compared (50 at least) differ.
check() {
  local n; n=$(differ "$2" "$3")
  local area; area=$(echo "${CROP:-1920x1080+0+0}" | awk -F'[x+]' '{ print $1 * $2 }')
  if awk -v n="$n" -v area="$area" -v same="$1" 'BEGIN { limit = area / 1000; if (limit < 50) limit = 50; exit !((n + 0 <= limit) == same) }'; then
    echo "ok: $4 ($n pixels differ)"
  else echo "FAILED: $4 ($n pixels differ)"; failed=1; fi
}
expect_same() { check 1 "$@"; }
expect_change() { check 0 "$@"; }
shot 0-opened
click "$4" "$5"; shot 1-backward
click "$6" "$7"; shot 2-slowest-layer

key question; shot 3-keymap
expect_change 2-slowest-layer 3-keymap "? shows the key map"
key Escape; shot 4-keymap-closed
expect_same 2-slowest-layer 4-keymap-closed "Esc closes the key map and does not go back"

xdotool mousemove 20 10; sleep 0.5; shot 5-pointer-on-file
click 20 10; shot 5-file-menu
expect_change 5-pointer-on-file 5-file-menu "the File menu opens"
key Escape; shot 6-menu-closed
expect_same 5-pointer-on-file 6-menu-closed "Esc closes the menu and does not go back"

key BackSpace; sleep 0.5; shot 7-back
expect_change 6-menu-closed 7-back "Backspace goes back to the view before"

key slash; xdotool type --delay 80 conv; sleep 1.5; shot 8-search-list
expect_change 7-back 8-search-list "typing a search shows its list of names"
# The first name: below the list's line of text, its header and its "All names" row.
list_x=$(at "int([d for d in u['dialogs'] if d['name'] == 'search results'][0]['x']) + 60")
list_y=$(at "int([d for d in u['dialogs'] if d['name'] == 'search results'][0]['y']) + 72")
click "$list_x" "$list_y"; sleep 0.5; shot 9-search-result
# The timeline, left of where the list was: it moved to the name's longest occurrence.
CROP=$(at "f\"{int(u['timeline']['w'] * 0.8)}x{int(u['timeline']['h'])}+{int(u['timeline']['x'])}+{int(u['timeline']['y'])}\"") \
  expect_change 8-search-list 9-search-result "a click on a name goes to its longest occurrence"

split_x=$(at "int(u['details']['x']) - 4")
split_y=$(at "int(u['details']['y'] + u['details']['h'] / 2)")
xdotool mousemove "$split_x" "$split_y"; sleep 0.3
xdotool mousedown 1; sleep 0.2
for step in 1 2 3 4 5 6; do xdotool mousemove_relative -- -50 0; sleep 0.1; done
xdotool mouseup 1; sleep 0.8
shot 10-wider-details
expect_change 9-search-result 10-wider-details "dragging the splitter widens the details panel"

# File > Open: the first trace of the directory, with Enter; the search starts empty there
# and the details panel keeps its width (11-next-file.png).
key ctrl+o; key Down; key Return; sleep 5; shot 11-next-file
expect_change 10-wider-details 11-next-file "Enter in File > Open opens the file"
CROP="12x200+$((split_x - 300 - 4))+$((split_y - 100))" \
  expect_same 10-wider-details 11-next-file "the details panel keeps the width it was dragged to"
# Measuring: Shift+drag over the rows measures a range, whose figures replace the details;
# a click on the ruler drops a flag there.
tl_x=$(at "int(u['timeline']['x'])"); tl_y=$(at "int(u['timeline']['y'])")
tl_w=$(at "int(u['timeline']['w'])"); tl_h=$(at "int(u['timeline']['h'])")
xdotool mousemove $((tl_x + tl_w / 3)) $((tl_y + tl_h * 2 / 3)); sleep 0.3
xdotool keydown shift mousedown 1; sleep 0.2
for step in 1 2 3 4 5 6; do xdotool mousemove_relative -- 40 0; sleep 0.1; done
xdotool mouseup 1 keyup shift; sleep 0.8; shot 12-range
CROP=$(at "f\"{int(u['details']['w'])}x60+{int(u['details']['x'])}+{int(u['details']['y'])}\"") \
  expect_change 11-next-file 12-range "Shift+drag measures a range: its figures in the details panel"
click $((tl_x + tl_w / 2)) $((tl_y + 12)); shot 13-flag
CROP="$((tl_w / 2))x30+$((tl_x + tl_w / 4))+$tl_y" expect_change 12-range 13-flag "a click on the ruler drops a flag"
kill -0 "$app" || { echo "FAILED: the viewer exited"; failed=1; }
[ $failed = 0 ] && echo "new-user trial passed" || { echo "new-user trial FAILED"; exit 1; }
