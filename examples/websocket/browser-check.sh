#!/usr/bin/env bash
# browser-check.sh runs the example's page in headless Chromium against the
# example's server and checks the answers the page's JavaScript got.
#
# It installs Debian's chromium package with apt-get if /usr/bin/chromium
# is missing (as root, or through sudo), builds the server and starts it on
# a free loopback port, loads the page in headless Chromium (driven by
# ./browsercheck), and reads the answers the page wrote into its DOM: each must be the one expected here,
# and the page must say it finished. It exits non-zero, with the DOM and
# the server's log, if anything is wrong, and stops every process it
# started, Chromium's children included, whatever happens.
#
# Usage: examples/websocket/browser-check.sh   (from anywhere)
# CHROMIUM=/path/to/chromium picks another build.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s%N)

chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
	echo "installing Debian's chromium package"
	sudo=()
	[ "$(id -u)" = 0 ] || sudo=(sudo)
	log=$(mktemp)
	if ! { "${sudo[@]}" apt-get update -q &&
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; } >"$log" 2>&1; then
		cat "$log" >&2
		rm -f "$log"
		echo "browser check FAILED: could not install chromium" >&2
		exit 1
	fi
	rm -f "$log"
fi

tmp=$(mktemp -d)
server_pid=
browser_group=
cleanup() {
	if [ -n "$browser_group" ]; then
		# The whole group, also after browsercheck has ended: a process
		# that Chromium left behind must not outlive the check.
		kill -KILL -- "-$browser_group" 2>/dev/null || true
		wait "$browser_group" 2>/dev/null || true
	fi
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
	echo "browser check FAILED: $*" >&2
	if [ -s "$tmp/dom.html" ]; then echo "--- the page's DOM:" >&2; cat "$tmp/dom.html" >&2; echo >&2; fi
	if [ -s "$tmp/browser.log" ]; then echo "--- browsercheck's output (last lines):" >&2; tail -n 20 "$tmp/browser.log" >&2; fi
	if [ -s "$tmp/server.log" ]; then echo "--- the server's log:" >&2; cat "$tmp/server.log" >&2; fi
	exit 1
}

go build -o "$tmp/server" .
go build -o "$tmp/browsercheck" ./browsercheck
"$tmp/server" -addr 127.0.0.1:0 2>"$tmp/server.log" &
server_pid=$!
url=
for _ in $(seq 100); do
	url=$(sed -n 's/.*msg=serving url=\(http:[^ ]*\).*/\1/p' "$tmp/server.log")
	[ -n "$url" ] && break
	kill -0 "$server_pid" 2>/dev/null || fail "the server exited"
	sleep 0.1
done
[ -n "$url" ] || fail "the server did not start within 10 s"

# browsercheck (see browsercheck/main.go) starts Chromium, loads the page
# and prints its DOM once the page says it is done; setsid puts it and
# Chromium's processes in a group of their own, which cleanup kills whole.
# (chromium --dump-dom prints the DOM once the page has loaded and a
# virtual time budget has run out, which WebSocket traffic does not hold
# back: on a busy machine it printed the page before its calls were done.)
setsid timeout 90 "$tmp/browsercheck" -chromium "$chromium" -timeout 60s "$url" \
	>"$tmp/dom.html" 2>"$tmp/browser.log" &
browser_group=$!
status=0
wait "$browser_group" || status=$?
[ "$status" = 0 ] || fail "browsercheck exited with status $status"

# The answers the page's JavaScript must have got, one check a line:
# name, then the answer as the page shows it.
expected=$(cat <<'END'
add	42
echo	{"a":[1,"ü"],"b":null}
hello	hello, the page
count	1,2,3 then 3
notes	["hi"]
batch	3 -32601 none
invalid	-32602
parse	null -32700
END
)

got=$(grep -o '<output id="r-[a-z]*"[^>]*>[^<]*</output>' "$tmp/dom.html" |
	sed 's/<output id="r-\([a-z]*\)"[^>]*>\([^<]*\)<\/output>/\1\t\2/' |
	sed 's/&lt;/</g; s/&gt;/>/g; s/&amp;/\&/g') || true
bad=0
while IFS=$'\t' read -r name want; do
	have=$(awk -F'\t' -v n="$name" '$1 == n { sub(/^[^\t]*\t/, ""); print; exit }' <<<"$got")
	if [ "$have" = "$want" ]; then
		printf '  ok    %-8s %s\n' "$name" "$have"
	else
		printf '  WRONG %-8s got %s, want %s\n' "$name" "${have:-nothing}" "$want"
		bad=$((bad + 1))
	fi
done <<<"$expected" | tee "$tmp/answers.txt"
bad=$(grep -c '^  WRONG' "$tmp/answers.txt" || true)
checks=$(wc -l <<<"$expected")
[ "$bad" = 0 ] || fail "$bad of $checks answers wrong"
page_status=$(sed -n 's/.*<output id="status">\([^<]*\)<\/output>.*/\1/p' "$tmp/dom.html")
[ "$page_status" = "done: $checks checks passed" ] || fail "the page says \"$page_status\""

kill -TERM "$server_pid"
wait "$server_pid" || fail "the server exited with status $? on SIGTERM"
server_pid=
grep -q 'msg=stopped' "$tmp/server.log" || fail "the server did not log that it stopped"

elapsed=$((($(date +%s%N) - start) / 1000000))
# The last passing run's output is kept in LAST-CHECK.txt, which
# bench/BENCHMARKS.md quotes.
{
	cat "$tmp/answers.txt"
	echo "$("$chromium" --version 2>/dev/null | head -n 1): the page said \"$page_status\""
	printf 'browser check passed: %d of %d answers right, server stopped cleanly, %d.%03d s in all\n' \
		"$checks" "$checks" $((elapsed / 1000)) $((elapsed % 1000))
} >"$tmp/last.txt"
tail -n 2 "$tmp/last.txt"
cp "$tmp/last.txt" LAST-CHECK.txt
