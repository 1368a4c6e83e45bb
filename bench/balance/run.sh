#!/usr/bin/env bash
# Runs three backends of cmd/jsonrpc-demo behind HAProxy on loopback ports,
# in HTTP mode (keep-alive to the backends) and in TCP mode (newline-
# delimited JSON-RPC, one connection per caller), drives them with
# bench/balance/loadgen, and in the middle of a run kills one backend
# (SIGKILL), stops it (SIGTERM), or over HTTP drains it in HAProxy first.
# Then, in each mode, it restarts all three backends one after the other
# under load (a rolling restart, see roll below), with reconnecting
# clients, and checks the calls against the backends' own counts.
#
#   bench/balance/run.sh           full run (two to three minutes on 2 cores); rewrites bench/BALANCER.md
#   QUICK=1 bench/balance/run.sh   small run (about 45 seconds); writes no file
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
#   ROLLS       rolling restarts in a row, in each mode (default 2; 1 with QUICK=1)
#   ROLL_TAIL   seconds of load before the first backend of a rolling restart
#               is stopped, and after the last one is back (default 1)
#   ROLL_RECONNECT=0   the rolling restarts with plain clients, which fail
#   ROLL_ONLY=1 only the rolling restarts; writes no file
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
# Rolling restarts: how many of each mode, in a row, and how long the load
# goes on before the first backend is stopped and after the last is back.
if [ "$quick" = 1 ]; then
	roll_count="${ROLLS:-1}"
else
	roll_count="${ROLLS:-2}"
fi
roll_tail="${ROLL_TAIL:-1}"
roll_reconnect=true
[ "${ROLL_RECONNECT:-1}" != 0 ] || roll_reconnect=false

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
# gone PID [SECONDS] waits up to SECONDS (default 5) for a process to end.
gone() {
	local i
	for i in $(seq $((${2:-5} * 20))); do
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
# The loadgen's own tests: the checks of the rolling restart on made-up
# outcomes, each rule broken once.
(cd "$bench" && go test -count=1 ./balance/loadgen >/dev/null)

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

# Each backend process writes its output to a log of its own, b1-1.log,
# b1-2.log and so on; with -count it ends with the line that says how many
# calls it ran.
backend_pid=()
backend_log=()
generation=0
start_backend() {
	local i=$1
	generation=$((generation + 1))
	backend_log[i]="$tmp/b$i-$generation.log"
	"$tmp/jsonrpc-demo" -name "b$i" -count -http "127.0.0.1:${http_port[$i]}" -listen "127.0.0.1:${tcp_port[$i]}" \
		>"${backend_log[$i]}" 2>&1 &
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
touch "$table"
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

# The plain runs and the kill runs (all but the rolling restarts).
roll_only="${ROLL_ONLY:-0}"
if [ "$roll_only" = 0 ]; then
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
	"$tmp/loadgen" ready "unix:$tmp/admin.sock" http_backends/b2 # out of drain
fi

# The rolling restart: under load, each backend in turn gets SIGTERM
# (cmd/jsonrpc-demo drains with Shutdown, answering new calls "not run"),
# is started again on the same ports, and once HAProxy marks it UP again
# the next one follows. The calls alternate between subtract, declared
# idempotent, and sum, not declared so. The loadgen checks that no
# subtract call failed, that every failed sum call is classified "not
# run" or "may have run", and that the backends' counts (-count, from
# every process that served the run, the restarted ones stopped at the
# end) lie between the calls answered and those plus the calls that may
# have run. ROLL_RECONNECT=0 runs it with the plain clients instead (Dial,
# dialled again after a failure; HTTPClient without retry): then calls of
# the idempotent method fail, and so does the run.

# stop_backends I... stops these backends with SIGTERM, and waits for them.
stop_backends() {
	local i
	for i in "$@"; do
		kill -TERM "${backend_pid[$i]}" 2>/dev/null || true # b2 may have been stopped already
	done
	for i in "$@"; do
		gone "${backend_pid[$i]}" 15 || { echo "b$i did not end within 15 s of SIGTERM" >&2; return 1; }
	done
}

# wait_up I... waits until HAProxy marks these backends UP, in both modes.
wait_up() {
	local i servers=()
	for i in "$@"; do
		servers+=("http_backends/b$i" "tcp_backends/b$i")
	done
	"$tmp/loadgen" waitup "unix:$tmp/admin.sock" "${servers[@]}"
}

# wait_file FILE PID waits up to max_time seconds for FILE, while PID runs.
wait_file() {
	local i
	for i in $(seq $((max_time * 50))); do
		[ -e "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.02
	done
	return 1
}

roll_table="$tmp/roll.md"
touch "$roll_table"
rolls=0
roll_failed=() # the labels of the rolling restarts whose checks failed
# roll LABEL MODE PORT: one rolling restart of b1, b2 and b3 under load.
roll() {
	local label=$1 mode=$2 port=$3 i t0 rc=0 lg
	rolls=$((rolls + 1))
	local ctl="$tmp/roll-$rolls"
	mkdir "$ctl"
	for i in 1 2 3; do
		echo "b$i ${backend_log[$i]}"
	done >"$ctl/procs"
	log "run: $label"
	timeout -k 5 "$((max_time + 80))" "$tmp/loadgen" -label "$label" -mode "$mode" -addr "127.0.0.1:$port" \
		-backends b1,b2,b3 -callers "$callers" -max-time "${max_time}s" -md "$roll_table" \
		-control "$ctl" -reconnect="$roll_reconnect" -methods subtract,sum -idempotent subtract >"$ctl/out.txt" &
	lg=$!
	if wait_file "$ctl/calling" "$lg"; then
		sleep "$roll_tail"
		for i in 1 2 3; do
			t0=$SECONDS
			stop_backends "$i"
			start_backend "$i"
			echo "b$i ${backend_log[$i]}" >>"$ctl/procs"
			wait_up "$i"
			log "  b$i restarted and UP in HAProxy again ($((SECONDS - t0))s)"
		done
		sleep "$roll_tail"
	fi
	touch "$ctl/stop"
	if wait_file "$ctl/stopped" "$lg"; then
		# The processes that served the run's end say what they ran when
		# they stop; they are started again for what comes next.
		stop_backends 1 2 3
		cp "$ctl/procs" "$ctl/counts.tmp"
		mv "$ctl/counts.tmp" "$ctl/counts"
	fi
	wait "$lg" || rc=$?
	tee -a "$out" <"$ctl/out.txt"
	[ "$rc" = 0 ] || roll_failed+=("$label")
	for i in 1 2 3; do
		kill -0 "${backend_pid[$i]}" 2>/dev/null || start_backend "$i"
	done
	wait_up 1 2 3
}

# Every process serving the first rolling restart starts with it, so that
# its count is of that run's calls alone.
log "restarting b1 b2 b3 for the rolling restarts"
stop_backends 1 2 3
for i in 1 2 3; do
	start_backend "$i"
done
wait_up 1 2 3
for r in $(seq "$roll_count"); do
	roll "TCP, HAProxy, rolling restart of b1 b2 b3 ($r of $roll_count)" tcp "$lb_tcp"
	roll "HTTP, HAProxy, rolling restart of b1 b2 b3 ($r of $roll_count)" http "$lb_http"
done

grep -E '^Server .* is (DOWN|UP)' "$tmp/haproxy.log" | sed -e 's/, check duration.*//' >"$tmp/health.txt" || true
{
	echo "| run | transport | callers | calls | calls/s | p50 | p99 | errors | answered by | checks |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	cat "$table"
} >"$tmp/results.md"
{
	echo "| run | transport | client | calls | calls/s | p99 | subtract (idempotent) / sum (not): calls, failed, ran on the backends | checks |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
	cat "$roll_table"
} >"$tmp/roll-results.md"
echo
echo "HAProxy's log of the backends' health:"
sed 's/^/   /' "$tmp/health.txt"
echo
cat "$tmp/results.md"
echo
cat "$tmp/roll-results.md"
elapsed=$((SECONDS - started))
if [ "${#roll_failed[@]}" -gt 0 ]; then
	log "checks failed in: ${roll_failed[*]}"
	exit 1
fi
log "all checks passed (${elapsed}s)"

if [ "$quick" = 1 ] || [ "$roll_only" = 1 ]; then
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
	echo "	HTTP_DRAIN_CALLS=$http_drain_calls ROLLS=$roll_count ROLL_TAIL=$roll_tail bench/balance/run.sh"
	echo '```'
	echo
	echo "p50 and p99 are over the answered calls."
	echo
	echo "## Results"
	echo
	cat "$tmp/results.md"
	echo
	echo "## Rolling restarts"
	echo
	echo "Under load, b1, b2 and b3 in turn get SIGTERM (the demo drains with"
	echo "Shutdown, answering new calls \"not run\"), start again on the same ports, and"
	echo "the next one follows once HAProxy marks the restarted one UP. The calls"
	echo "alternate between subtract, declared idempotent (the Redialer's Retry), and"
	echo "sum, not declared so. Over TCP each caller is a jsonrpc.Redialer whose Dial"
	echo "goes through HAProxy; over HTTP, HTTPClient has no retry of its own, so the"
	echo "loadgen makes again a call that surely did not run (MayHaveRun false: the"
	echo "demo's 503, a connection refused) after a pause of 2 ms doubling to 100 ms,"
	echo "within the call's 5 s deadline, and no other call. Checked: no subtract call"
	echo "fails; each failed call is \"not run\" or \"may have run\"; for each method,"
	echo "the calls the backends ran (cmd/jsonrpc-demo -count, from every process"
	echo "that served the run) are at least those answered and, for sum, at most"
	echo "those plus the calls that may have run."
	echo
	cat "$tmp/roll-results.md"
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
