#!/bin/bash
# demo.sh - see wallclock work on this machine in one command: installs what
# is missing, builds, then runs collectd in the foreground with the plugin
# (csv, rrdtool and unixsock writers into ./demo) next to a small workload
# (spinners, a sleeper, a disk writer), and prints live per-group numbers
# every interval until Ctrl-C.  Needs root (BPF).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
cd "$SRC"
INTERVAL=${WC_DEMO_INTERVAL:-2}

tests/deps.sh
BUILD=$(tests/build.sh)
DEMO=$SRC/demo
mkdir -p "$DEMO/bin" "$DEMO/spool"
chmod 0755 "$DEMO"
chmod 0700 "$DEMO/spool"
rm -f "$DEMO/collectd.log"

cat > "$DEMO/collectd.conf" <<CONF
# The embedded default: everything the plugin needs, nothing else.
Hostname "demo"
Interval $INTERVAL
BaseDir "$DEMO"
PIDFile "$DEMO/collectd.pid"
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File "$DEMO/collectd.log"
  Timestamp true
</Plugin>
LoadPlugin csv
<Plugin csv>
  DataDir "$DEMO/csv"
</Plugin>
LoadPlugin rrdtool
<Plugin rrdtool>
  DataDir "$DEMO/rrd"
</Plugin>
LoadPlugin unixsock
<Plugin unixsock>
  SocketFile "$DEMO/collectd.sock"
  SocketGroup "root"
</Plugin>
PluginDir "$BUILD/.libs"
LoadPlugin wallclock
PluginDir "/usr/lib/collectd"
<Plugin wallclock>
  SampleFrequency 49
  SpoolDir "$DEMO/spool"
  FlushInterval 10
</Plugin>
CONF

pids=()
cleanup() {
	trap - INT TERM EXIT
	kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	echo
	echo "demo: stopped.  Data is in $DEMO (csv/, rrd/, collectd.log);"
	echo "demo: flame graphs in $DEMO/spool (open latest.svg in a browser)."
}
trap cleanup INT TERM EXIT

# the symbolizer's helper, from the build tree (make install puts it
# where the plugin finds it without this)
WALLCLOCK_SYMD=$BUILD/wallclock-symd collectd -f -C "$DEMO/collectd.conf" &
pids+=($!)
# three spinners on however many CPUs, a sleeper and a disk writer, each
# under its own name so each is its own group
for w in demo_spin demo_sleep demo_disk; do
	ln -sf "$BUILD/tests/workload" "$DEMO/bin/$w"
done
"$DEMO/bin/demo_spin" --spin 3 --seconds 86400 >/dev/null &
pids+=($!)
"$DEMO/bin/demo_sleep" --sleep 2 --sleep-ms 100 --seconds 86400 >/dev/null &
pids+=($!)
"$DEMO/bin/demo_disk" --disk 1 --dir "$DEMO" --seconds 86400 >/dev/null &
pids+=($!)

echo "demo: a folded file and a flame graph every 10 s: $DEMO/spool/latest.svg"
python3 "$SRC/tests/demo_top.py" "$DEMO/collectd.sock" "$INTERVAL" \
	"$DEMO/collectd.log"
