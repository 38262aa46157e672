#!/bin/sh
# podplan whatif --report: the page opened in headless Chromium (Debian's
# chromium, which `make test` installs through tools/deps.sh).  Checks:
# the DOM after layout holds the results table with one row per variant
# and both inline SVG charts with their points and bars; the screenshot
# has non-white pixels inside the charts' regions.  Skips (77) only when
# chromium cannot be found.
bin=$1 src=$2
chrome=""
for c in chromium chromium-browser google-chrome; do
  command -v $c >/dev/null 2>&1 && { chrome=$c; break; }
done
[ -n "$chrome" ] || { echo "skipped: chromium is not installed (tools/deps.sh installs Debian's chromium; apt-get install chromium)"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$bin" whatif --study "$src/studies/nic-count.yaml" --report "$tmp/r.html" -o "$tmp/t.txt" || exit 1
grep -q "http" "$tmp/r.html" && grep -v "xmlns=" "$tmp/r.html" | grep -q "https\?://" && { echo "FAIL: the report refers to the network"; exit 1; }
flags="--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir=$tmp/profile"
$chrome $flags --dump-dom "file://$tmp/r.html" >"$tmp/dom.html" 2>"$tmp/chrome.log" || { cat "$tmp/chrome.log"; exit 1; }
rows=$(grep -o "<tr class=\"row[^\"]*\"" "$tmp/dom.html" | wc -l)
[ "$rows" -eq 4 ] || { echo "FAIL: $rows result rows in the rendered table, want 4"; exit 1; }
grep -q 'id="chart-pareto"' "$tmp/dom.html" || { echo "FAIL: no Pareto chart"; exit 1; }
grep -q 'id="chart-days"' "$tmp/dom.html" || { echo "FAIL: no days chart"; exit 1; }
pts=$(grep -o '<circle class="point' "$tmp/dom.html" | wc -l)
bars=$(grep -o '<rect class="bar' "$tmp/dom.html" | wc -l)
[ "$pts" -eq 4 ] && [ "$bars" -eq 8 ] || { echo "FAIL: $pts points (want 4), $bars bars (want 8)"; exit 1; }
$chrome $flags --screenshot="$tmp/shot.png" --window-size=1200,2400 "file://$tmp/r.html" >"$tmp/chrome.log" 2>&1
[ -s "$tmp/shot.png" ] || { cat "$tmp/chrome.log"; echo "FAIL: no screenshot"; exit 1; }
python3 - "$tmp/shot.png" <<'PY' || exit 1
import sys, zlib, struct
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat, w, h = 8, b'', 0, 0
while pos < len(data):
    n, t = struct.unpack('>I4s', data[pos:pos+8]); body = data[pos+8:pos+8+n]; pos += 12 + n
    if t == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    if t == b'IDAT': idat += body
raw = zlib.decompress(idat); bpp = 4 if ctype == 6 else 3
stride = w * bpp; rows = []; prev = bytearray(stride); i = 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i+1:i+1+stride]); i += 1 + stride
    for x in range(stride):
        a = line[x-bpp] if x >= bpp else 0; b = prev[x]; c = prev[x-bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p-a), abs(p-b), abs(p-c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line); prev = line
# Coloured pixels (the charts' blue/red/orange marks), not grey text.
def coloured(px): r, g, b = px[0], px[1], px[2]; return max(r, g, b) - min(r, g, b) > 60
n = sum(1 for row in rows for x in range(0, stride, bpp) if coloured(row[x:x+3]))
print("coloured pixels in the screenshot:", n)
assert n > 2000, 'charts did not render'
PY
echo "report rendered: 4 rows, 4 points, 8 bars, charts drawn"
