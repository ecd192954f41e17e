#!/bin/bash
# deps.sh - install the Debian 12 packages wallclock needs to build, run and
# test.  Idempotent: installs only what is missing (apt-get update first).
# Needs root.
set -euo pipefail

PACKAGES=(
	# build
	build-essential autoconf automake libtool pkg-config
	clang llvm bpftool libbpf-dev libelf-dev libdw-dev zlib1g-dev libiberty-dev
	collectd-core collectd-dev
	# run and test (libc6-dbg names libc's internal functions)
	collectd-utils rrdtool python3 linux-perf util-linux procps libc6-dbg
	g++ binutils libxml2-utils graphite-carbon python3-whisper
	# programs nobody here wrote, unwound by their tables (test_unwind.py)
	xz-utils
	# the layout of the C sources (tests/format.sh)
	clang-format
	# the fuzz targets (libFuzzer's runtime)
	libclang-rt-14-dev
	# the peers the benchmark compares against (linux-perf above)
	libbpf-tools bpftrace
	# the browser test (playwright-core comes from npm at test time)
	chromium fonts-dejavu-core
	# other kernels in a VM (tests/vm; the kernels come from apt-get
	# download, never installed)
	qemu-system-x86 busybox-static
)
# A nodesource node bundles npm and conflicts with Debian's npm package:
# ask for Debian's only when there is no node or npm at all.
command -v node >/dev/null || PACKAGES+=(nodejs)
command -v npm >/dev/null || PACKAGES+=(npm)

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: needs root to install packages (try: sudo $0)" >&2
	exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# collectd-core's own service must not start competing collectds in CI
# containers; policy-rc.d refuses service starts during the install.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
	chmod +x /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -q --no-install-recommends "${missing[@]}"
