#!/usr/bin/env bash
# Throughput of the mock APNs server against nghttpd (the nghttp2 project's own C server) on
# this machine, driven by the same h2load command: POST of a ~300-byte Live Activity update to
# /3/device/<token>, same headers (including a valid provider token), same concurrency.
#
#   scripts/bench-mock.sh [runs] [extra h2load args...]
#
# Environment: REQUESTS (default 400000), CLIENTS (4), STREAMS (100), THREADS (event loops of the
# mock and worker threads of nghttpd, kept equal; default: number of CPUs, the mock's own
# default), SKIP_BUILD=1 to reuse the release build.
# Needs: openssl, h2load (nghttp2-client), nghttpd (nghttp2-server).
set -euo pipefail
export LC_ALL=C

RUNS=${1:-5}
shift || true
REQUESTS=${REQUESTS:-400000}
CLIENTS=${CLIENTS:-4}
STREAMS=${STREAMS:-100}
THREADS=${THREADS:-$(nproc)}
NGHTTPD=${NGHTTPD:-$(command -v nghttpd || echo /usr/sbin/nghttpd)}

cd "$(dirname "$0")/.."
for tool in openssl h2load xxd ss; do
    command -v "$tool" >/dev/null || { echo "bench-mock: $tool is not installed" >&2; exit 1; }
done
[ -x "$NGHTTPD" ] || { echo "bench-mock: nghttpd not found (package nghttp2-server)" >&2; exit 1; }

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    swift build -c release --product touchline-mock-apns >/dev/null
fi
MOCK=$(swift build -c release --show-bin-path)/touchline-mock-apns

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

BUNDLE=com.example.sports
TEAM=TEAM123456
KID=KEY1234567
TOKEN=$(printf 'ab%.0s' $(seq 32))
DEVICE_PATH=/3/device/$TOKEN

# Provider key and an ES256 token signed with the openssl command (JWS wants raw R||S).
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/key.p8" 2>/dev/null
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
SIGNING_INPUT=$(printf '{"alg":"ES256","kid":"%s"}' "$KID" | b64url).$(printf '{"iss":"%s","iat":%s}' "$TEAM" "$(date +%s)" | b64url)
printf '%s' "$SIGNING_INPUT" | openssl dgst -sha256 -sign "$WORK/key.p8" -out "$WORK/sig.der"
SIG=$(openssl asn1parse -inform DER -in "$WORK/sig.der" | sed -n 's/.*INTEGER *://p' |
      while read -r n; do printf '%064s' "$n" | tr ' ' 0 | tail -c 64; done | xxd -r -p | b64url)
JWT=$SIGNING_INPUT.$SIG

# A ~300-byte Live Activity update.
printf '%s' '{"aps":{"timestamp":1767290400,"event":"update","content-state":{"home":2,"away":1,"clock":"67'"'"'","period":"2H","lastEvent":"Goal - Home","scorer":"Player Nine","assist":"Player Seven"},"stale-date":1767291300,"relevance-score":100,"alert":{"title":"Goal!","body":"Home 2-1 Away","sound":"default"}}}' > "$WORK/body.json"

# The mock generates the throwaway CA and certificate; nghttpd reuses them.
# --initial-streams 1000: h2load opens its streams before it reads the server's SETTINGS, and
# the APNs-like limit of 1 would refuse them; the benchmark measures serving, not that rule.
"$MOCK" --bundle-id "$BUNDLE" --team-id "$TEAM" --key "$KID=$WORK/key.p8" --push-port 0 --management-port 0 \
    --cert-dir "$WORK/tls" --threads "$THREADS" --initial-streams 1000 --no-detail-header > "$WORK/mock.out" 2>&1 &
MOCK_PID=$!
PIDS+=($MOCK_PID)
for _ in $(seq 100); do grep -q '^CA file' "$WORK/mock.out" 2>/dev/null && break; sleep 0.1; done
MOCK_PORT=$(sed -n 's/^push port \([0-9]*\).*/\1/p' "$WORK/mock.out")
[ -n "$MOCK_PORT" ] || { echo "bench-mock: the mock did not start:" >&2; cat "$WORK/mock.out" >&2; exit 1; }

mkdir -p "$WORK/htdocs/3/device"
: > "$WORK/htdocs$DEVICE_PATH"
# nghttpd needs a fixed port: take one that nothing listens on.
while :; do
    NGHTTPD_PORT=$(( 20000 + RANDOM % 20000 ))
    [ "$NGHTTPD_PORT" != "$MOCK_PORT" ] && ! ss -ltnH "sport = :$NGHTTPD_PORT" | grep -q . && break
done
"$NGHTTPD" -n "$THREADS" -d "$WORK/htdocs" "$NGHTTPD_PORT" "$WORK/tls/server.key" "$WORK/tls/server.pem" > "$WORK/nghttpd.out" 2>&1 &
NGHTTPD_PID=$!
PIDS+=($NGHTTPD_PID)
sleep 0.5
kill -0 "$NGHTTPD_PID" 2>/dev/null || { echo "bench-mock: nghttpd did not start:" >&2; cat "$WORK/nghttpd.out" >&2; exit 1; }

HEADERS=(-H "authorization: bearer $JWT" -H "apns-push-type: liveactivity" -H "apns-topic: $BUNDLE.push-type.liveactivity"
         -H "apns-priority: 10" -H "apns-expiration: 0")

# CPU time (user + system, in clock ticks) used so far by process $1.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)

# Prints "<req/s> <server CPU µs per request> <succeeded> (<status codes>)" for one h2load run
# against port $1 served by process $2.
run() {
    local port=$1 pid=$2 out before after
    shift 2
    before=$(cpu_ticks "$pid")
    out=$(h2load -n "$REQUESTS" -c "$CLIENTS" -m "$STREAMS" -t 1 -d "$WORK/body.json" "${HEADERS[@]}" "$@" \
          "https://127.0.0.1:$port$DEVICE_PATH" 2>&1) || true
    after=$(cpu_ticks "$pid")
    local rate ok status
    rate=$(printf '%s\n' "$out" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')
    ok=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9]*\) succeeded.*/\1/p')
    status=$(printf '%s\n' "$out" | sed -n 's/^status codes: \(.*\)/\1/p')
    local cpu
    cpu=$(awk -v t=$((after - before)) -v hz="$TICK" -v n="$ok" 'BEGIN { printf "%.2f", n ? t / hz * 1e6 / n : 0 }')
    echo "$rate $cpu $ok ($status)"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "h2load -n $REQUESTS -c $CLIENTS -m $STREAMS -t 1, body $(wc -c < "$WORK/body.json") bytes, server threads $THREADS"
run "$MOCK_PORT" "$MOCK_PID" "$@" > /dev/null      # warm-up
run "$NGHTTPD_PORT" "$NGHTTPD_PID" "$@" > /dev/null
: > "$WORK/mock.runs"
: > "$WORK/nghttpd.runs"
echo "columns: req/s, server CPU µs/request, succeeded (status codes)"
: > "$WORK/ratios"
for i in $(seq "$RUNS"); do
    m=$(run "$MOCK_PORT" "$MOCK_PID" "$@")
    n=$(run "$NGHTTPD_PORT" "$NGHTTPD_PID" "$@")
    ratio=$(awk -v m="${m%% *}" -v n="${n%% *}" 'BEGIN { printf "%.2f", n ? m / n : 0 }')
    echo "run $i: mock $m | nghttpd $n | ratio $ratio"
    echo "$m" >> "$WORK/mock.runs"
    echo "$n" >> "$WORK/nghttpd.runs"
    echo "$ratio" >> "$WORK/ratios"
done
column() { awk -v c="$1" '{ print $c }' "$2" | median; }
echo "median rate: mock $(column 1 "$WORK/mock.runs") req/s, nghttpd $(column 1 "$WORK/nghttpd.runs") req/s"
echo "median of the per-run ratios (mock / nghttpd, back-to-back runs): $(median < "$WORK/ratios")"
echo "median server CPU per request: mock $(column 2 "$WORK/mock.runs") µs, nghttpd $(column 2 "$WORK/nghttpd.runs") µs"
