#!/usr/bin/env bash
# Runs three backends of cmd/jsonrpc-demo behind HAProxy on loopback ports,
# in HTTP mode (keep-alive to the backends) and in TCP mode (newline-
# delimited JSON-RPC, one connection per caller), drives them with
# bench/balance/loadgen, and in the middle of a run kills one backend
# (SIGKILL), stops it (SIGTERM), or over HTTP drains it in HAProxy first.
#
#   bench/balance/run.sh           full run (two to three minutes on 2 cores); rewrites bench/BALANCER.md
#   QUICK=1 bench/balance/run.sh   small run (about 20 seconds); writes no file
#
# It installs HAProxy with apt-get if it is missing (as root, or through
# sudo when that needs no password). Everything it starts (backends,
# HAProxy) runs as the current user on 127.0.0.1 and is stopped on exit.
#
# Environment:
#   QUICK=1     the small run
#   CALLERS     concurrent callers (default 32)
#   HTTP_CALLS, TCP_CALLS   calls per run (default 60000 and 300000; 4000
#               and 10000 with QUICK=1)
#   HTTP_KILL_CALLS, TCP_KILL_CALLS   calls of the kill runs (default twice
#               the above; 40000 and 100000 with QUICK=1, so that even on a
#               fast machine the run goes on well past 300 ms after the kill)
#   HTTP_DRAIN_CALLS   calls of the drain run (default HTTP_KILL_CALLS)
#   HAPROXY     the haproxy command (default: found on PATH or in /usr/sbin)
#   KEEP=1      keep the temporary directory (binaries, HAProxy's config and
#               log, the backends' output) and say where it is
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bench="$(dirname "$here")"
root="$(dirname "$bench")"

quick="${QUICK:-0}"
[ "$quick" = 0 ] || quick=1
callers="${CALLERS:-32}"
# TCP runs make more calls than HTTP ones, being faster, so that each run
# lasts a few seconds (a fraction of one with QUICK=1).
if [ "$quick" = 1 ]; then
	http_calls="${HTTP_CALLS:-4000}"
	tcp_calls="${TCP_CALLS:-10000}"
else
	http_calls="${HTTP_CALLS:-60000}"
	tcp_calls="${TCP_CALLS:-300000}"
fi
# A kill run lasts long enough for calls well after the kill; the drain
# run waits half a second between draining and stopping, so a quick one
# needs more calls.
# The checks ask for calls started more than 300 ms after the kill: at
# 15,000 HTTP or 40,000 TCP calls a second, a quick run's kill runs must
# be long enough for that, whatever the machine.
if [ "$quick" = 1 ]; then
	http_kill_calls="${HTTP_KILL_CALLS:-40000}"
	tcp_kill_calls="${TCP_KILL_CALLS:-100000}"
else
	http_kill_calls="${HTTP_KILL_CALLS:-$((http_calls * 2))}"
	tcp_kill_calls="${TCP_KILL_CALLS:-$((tcp_calls * 2))}"
fi
http_drain_calls="${HTTP_DRAIN_CALLS:-$http_kill_calls}"

started=$SECONDS
log() { printf '[%3ds] %s\n' "$((SECONDS - started))" "$*" >&2; }

tmp="$(mktemp -d)"
pids=()
cleanup() {
	local rc=$?
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
	done
	if [ "$rc" != 0 ]; then
		for f in "$tmp"/*.log; do
			[ -s "$f" ] || continue
			echo "--- $(basename "$f") (last lines)" >&2
			tail -n 20 "$f" >&2
		done
	fi
	if [ "${KEEP:-0}" = 1 ]; then
		echo "kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
# gone PID waits up to 5 s for a process to end.
gone() {
	local i
	for i in $(seq 100); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# HAProxy, from the distribution's packages if it is missing.
haproxy="${HAPROXY:-}"
if [ -z "$haproxy" ]; then
	haproxy="$(command -v haproxy || true)"
	[ -n "$haproxy" ] || [ ! -x /usr/sbin/haproxy ] || haproxy=/usr/sbin/haproxy
fi
if [ -z "$haproxy" ]; then
	if [ "$(id -u)" = 0 ]; then
		sudo=()
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo=(sudo -n)
	else
		echo "HAProxy is not installed; install it with: sudo apt-get install haproxy" >&2
		exit 1
	fi
	log "installing haproxy with apt-get"
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy >"$tmp/apt.log" 2>&1; then
		"${sudo[@]}" apt-get update -q >>"$tmp/apt.log" 2>&1
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy >>"$tmp/apt.log" 2>&1
	fi
	haproxy="$(command -v haproxy || echo /usr/sbin/haproxy)"
fi
haproxy_version="$("$haproxy" -v | sed -n 1p)"
log "using $haproxy_version"

log "building cmd/jsonrpc-demo and bench/balance/loadgen"
(cd "$root" && go build -o "$tmp/jsonrpc-demo" ./cmd/jsonrpc-demo)
(cd "$bench" && go build -o "$tmp/loadgen" ./balance/loadgen)

# Ports: HTTP and TCP for each backend, then HAProxy's HTTP and TCP.
read -r -a ports <<<"$("$tmp/loadgen" freeports 9)"
http_port=(- "${ports[0]}" "${ports[1]}" "${ports[2]}")
tcp_port=(- "${ports[3]}" "${ports[4]}" "${ports[5]}")
lb_http="${ports[6]}"
lb_tcp="${ports[7]}"
lb_http_logged="${ports[8]}"

# wait_port PORT waits until something accepts on 127.0.0.1:PORT.
wait_port() {
	local i
	for i in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	echo "nothing listens on 127.0.0.1:$1" >&2
	return 1
}

backend_pid=()
start_backend() {
	local i=$1
	"$tmp/jsonrpc-demo" -name "b$i" -http "127.0.0.1:${http_port[$i]}" -listen "127.0.0.1:${tcp_port[$i]}" \
		>>"$tmp/b$i.log" 2>&1 &
	backend_pid[i]=$!
	pids+=("$!")
	# Out of the job table, so that bash says nothing when one is killed.
	disown "$!"
	wait_port "${http_port[$i]}"
	wait_port "${tcp_port[$i]}"
}
for i in 1 2 3; do
	start_backend "$i"
done
log "backends b1 b2 b3: HTTP on ports ${http_port[*]:1}, TCP on ${tcp_port[*]:1}"

# The balancer. Health checks ask each backend its name, in JSON-RPC, every
# 250 ms; one failed check takes a backend out, two good ones bring it back.
# A connection refused is tried again on another backend (redispatch); a
# request already sent to a backend that dies is not.
write_config() {
	cat <<EOF
global
	maxconn 4096
	nbthread 1
	stats socket $tmp/admin.sock mode 600 level admin
	log stderr format raw local0 info

defaults
	log global
	option dontlognull
	timeout connect 1s
	timeout client 30s
	timeout server 30s
	timeout check 1s
	retries 2
	option redispatch 1
	default-server check inter 250ms fall 1 rise 2

frontend http_in
	mode http
	bind 127.0.0.1:$lb_http
	timeout http-request 10s
	timeout http-keep-alive 30s
	option http-keep-alive
	no log
	default_backend http_backends

# The same, but every request is logged with the loadgen's call number and
# the backend it went to: the kill run uses it to tell where its failed
# calls went.
frontend http_in_logged
	mode http
	bind 127.0.0.1:$lb_http_logged
	timeout http-request 10s
	timeout http-keep-alive 30s
	option http-keep-alive
	capture request header X-Call len 24
	log-format "call=%hr backend=%s status=%ST term=%tsc retries=%rc"
	default_backend http_backends

backend http_backends
	mode http
	balance roundrobin
	option http-keep-alive
	http-reuse safe
	option httpchk
	http-check send meth POST uri / hdr Content-Type application/json body "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"backend\"}"
	http-check expect status 200
	http-after-response set-header X-Backend %s
	server b1 127.0.0.1:${http_port[1]}
	server b2 127.0.0.1:${http_port[2]}
	server b3 127.0.0.1:${http_port[3]}

frontend tcp_in
	mode tcp
	bind 127.0.0.1:$lb_tcp
	no log
	default_backend tcp_backends

backend tcp_backends
	mode tcp
	balance leastconn
	option tcp-check
	tcp-check send "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"backend\"}\n"
	tcp-check expect string "\"result\""
	server b1 127.0.0.1:${tcp_port[1]}
	server b2 127.0.0.1:${tcp_port[2]}
	server b3 127.0.0.1:${tcp_port[3]}
EOF
}
write_config >"$tmp/haproxy.cfg"
"$haproxy" -c -q -f "$tmp/haproxy.cfg"
"$haproxy" -db -f "$tmp/haproxy.cfg" >>"$tmp/haproxy.log" 2>&1 &
pids+=("$!")
wait_port "$lb_http"
wait_port "$lb_tcp"
wait_port "$lb_http_logged"
log "haproxy: HTTP on port $lb_http, TCP on port $lb_tcp"

table="$tmp/table.md"
out="$tmp/out.txt"
# Each run must end within max_time seconds (the loadgen fails otherwise,
# and is killed 20 seconds later if it does not).
max_time=150
[ "$quick" = 0 ] || max_time=30

# load LABEL MODE PORT BACKENDS CALLS [loadgen flags...]
load() {
	local label=$1 mode=$2 port=$3 backends=$4 n=$5
	shift 5
	log "run: $label"
	timeout -k 5 "$((max_time + 20))" "$tmp/loadgen" -label "$label" -mode "$mode" -addr "127.0.0.1:$port" \
		-backends "$backends" -callers "$callers" -calls "$n" -max-time "${max_time}s" -md "$table" "$@" |
		tee -a "$out"
}

load "HTTP, one backend direct" http "${http_port[1]}" b1 "$http_calls"
load "HTTP, three backends behind HAProxy" http "$lb_http" b1,b2,b3 "$http_calls"
load "TCP, one backend direct" tcp "${tcp_port[1]}" b1 "$tcp_calls"
load "TCP, three backends behind HAProxy" tcp "$lb_tcp" b1,b2,b3 "$tcp_calls"

# restart_b2 starts b2 again once the loadgen has stopped it.
restart_b2() {
	gone "${backend_pid[2]}"
	start_backend 2
	log "b2 restarted"
}

# Kill b2 in the middle of an HTTP run, bring it back, and do the same over
# TCP; then the same with SIGTERM, which stops the demo gracefully
# (Shutdown); then, over HTTP, tell HAProxy to drain b2 first.
load "HTTP, HAProxy, b2 killed (SIGKILL) at 40% of the calls" http "$lb_http_logged" b1,b2,b3 "$http_kill_calls" \
	-kill-pid "${backend_pid[2]}" -kill-name b2 -lb-log "$tmp/haproxy.log"
restart_b2
load "TCP, HAProxy, b2 killed (SIGKILL) at 40% of the calls" tcp "$lb_tcp" b1,b2,b3 "$tcp_kill_calls" \
	-kill-pid "${backend_pid[2]}" -kill-name b2
restart_b2
load "HTTP, HAProxy, b2 stopped (SIGTERM) at 40% of the calls" http "$lb_http_logged" b1,b2,b3 "$http_kill_calls" \
	-kill-pid "${backend_pid[2]}" -kill-name b2 -kill-signal TERM -lb-log "$tmp/haproxy.log"
restart_b2
load "TCP, HAProxy, b2 stopped (SIGTERM) at 40% of the calls" tcp "$lb_tcp" b1,b2,b3 "$tcp_kill_calls" \
	-kill-pid "${backend_pid[2]}" -kill-name b2 -kill-signal TERM
restart_b2
load "HTTP, HAProxy, b2 drained at 40% of the calls, then stopped (SIGTERM)" http "$lb_http_logged" b1,b2,b3 "$http_drain_calls" \
	-kill-pid "${backend_pid[2]}" -kill-name b2 -kill-signal TERM -lb-log "$tmp/haproxy.log" \
	-drain "unix:$tmp/admin.sock" -drain-server http_backends/b2 -drain-wait 500ms -max-errors 0

grep -E '^Server .* is (DOWN|UP)' "$tmp/haproxy.log" | sed -e 's/, check duration.*//' >"$tmp/health.txt" || true
{
	echo "| run | transport | callers | calls | calls/s | p50 | p99 | errors | answered by | checks |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	cat "$table"
} >"$tmp/results.md"
echo
echo "HAProxy's log of the backends' health:"
sed 's/^/   /' "$tmp/health.txt"
echo
cat "$tmp/results.md"
elapsed=$((SECONDS - started))
log "all checks passed (${elapsed}s)"

if [ "$quick" = 1 ]; then
	exit 0
fi
cpu_model="$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)"
{
	echo "# Many backends behind a balancer"
	echo
	echo "Generated by \`bench/balance/run.sh\`; do not edit by hand. See the section"
	echo "\"Many backends behind a balancer\" of README.md for what is run and checked."
	echo
	echo "## Machine"
	echo
	echo "- nproc: $(nproc)"
	echo "- CPU: ${cpu_model:-unknown}"
	echo "- Go: $(go version | sed 's/^go version //')"
	echo "- OS: $(uname -sr)"
	echo "- balancer: $haproxy_version"
	echo "- the run took ${elapsed}s; the backends, HAProxy and the load generator share"
	echo "  the machine's cores, and the machine is shared with other work: the figures"
	echo "  show the cost of the balancer and what a backend's death does, not how far"
	echo "  three backends scale"
	echo
	echo "## Command"
	echo
	echo '```'
	echo "CALLERS=$callers HTTP_CALLS=$http_calls TCP_CALLS=$tcp_calls HTTP_KILL_CALLS=$http_kill_calls TCP_KILL_CALLS=$tcp_kill_calls \\"
	echo "	HTTP_DRAIN_CALLS=$http_drain_calls bench/balance/run.sh"
	echo '```'
	echo
	echo "p50 and p99 are over the answered calls."
	echo
	echo "## Results"
	echo
	cat "$tmp/results.md"
	echo
	echo "## HAProxy's log of the backends' health"
	echo
	echo '```'
	cat "$tmp/health.txt"
	echo '```'
	echo
	echo "## The load generator's output"
	echo
	echo '```'
	cat "$out"
	echo '```'
	echo
	echo "<details><summary>HAProxy's configuration (ports chosen at run time; \$TMP is the run's temporary directory)</summary>"
	echo
	echo '```'
	sed "s|$tmp|\$TMP|g" "$tmp/haproxy.cfg"
	echo '```'
	echo
	echo "</details>"
} >"$bench/BALANCER.md"
log "wrote bench/BALANCER.md"
