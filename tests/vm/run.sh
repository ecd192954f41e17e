#!/bin/bash
# run.sh - run a command under another kernel: a Debian kernel package's
# image booted in qemu (TCG), the host's files seen read-only through 9p
# with a writable overlay on top, so the build and its tests run as they
# are.  Prints what the command printed, and exits with its status.
#
#   tests/vm/run.sh [--kernel PACKAGE] [--timeout SECONDS] [--mem MIB]
#                   -- COMMAND [ARG...]
#
# PACKAGE is a Debian kernel image package (default: the newest
# linux-image-6.1.0-*-amd64-unsigned the archive has: Debian 12's own
# kernel).  It is fetched with apt-get download into $WC_VM_CACHE (default
# /var/tmp/wallclock-vm) and unpacked there once, never installed.  The
# guest runs COMMAND as root in the host's current directory, with /proc,
# /sys, bpffs, debugfs, tracefs, and a disk of its own at /var/tmp (so
# that waits for I/O are real: the host's /var/tmp is not seen there);
# nothing it writes reaches the host but through $WC_VM_OUT (default: a
# temporary directory, removed), mounted at the same path in the guest.  A guest that does not
# finish within the timeout (default 900 s) is killed: exit 124.
#
# Needs root, qemu-system-x86 and busybox-static (tests/deps.sh installs
# them).
set -euo pipefail

KERNEL_PKG=""
TIMEOUT=900
MEM=2048
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) KERNEL_PKG=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--mem) MEM=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: run.sh [--kernel PKG] -- COMMAND..." >&2; exit 2; }
for tool in qemu-system-x86_64 busybox dpkg-deb; do
	command -v "$tool" >/dev/null || {
		echo "run.sh: $tool is missing (tests/deps.sh installs it)" >&2
		exit 2
	}
done
if ldd "$(command -v busybox)" >/dev/null 2>&1; then
	echo "run.sh: busybox is not static (install busybox-static)" >&2
	exit 2
fi

case $PWD/ in
/var/tmp/*)
	echo "run.sh: $PWD is under /var/tmp, which the guest's own disk" \
		"covers: run from a checkout elsewhere" >&2
	exit 2 ;;
esac

CACHE=${WC_VM_CACHE:-/var/tmp/wallclock-vm}
mkdir -p "$CACHE"
if [ -z "$KERNEL_PKG" ]; then
	KERNEL_PKG=$(apt-cache search --names-only \
		'^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' |
		awk '{print $1}' | sort -V | tail -1)
	[ -n "$KERNEL_PKG" ] || {
		echo "run.sh: no linux-image-6.1.0-*-amd64-unsigned in the" \
			"archive (apt-get update?)" >&2
		exit 2
	}
fi

# The kernel, fetched and unpacked once.
KDIR=$CACHE/$KERNEL_PKG
if [ ! -d "$KDIR/boot" ]; then
	rm -rf "$KDIR" "$KDIR.tmp"
	mkdir -p "$KDIR.tmp"
	(cd "$KDIR.tmp" && apt-get download -q "$KERNEL_PKG" >/dev/null 2>&1 &&
		dpkg-deb -x ./*.deb unpacked) || {
		echo "run.sh: cannot fetch $KERNEL_PKG" >&2
		exit 2
	}
	mv "$KDIR.tmp/unpacked" "$KDIR"
	rm -rf "$KDIR.tmp"
fi
VMLINUZ=$(ls "$KDIR"/boot/vmlinuz-* | head -1)
KVER=${VMLINUZ##*/vmlinuz-}
MODDIR=$KDIR/lib/modules/$KVER

WORK=$(mktemp -d /var/tmp/wcvm.XXXXXX)
OUT=${WC_VM_OUT:-$WORK/out}
mkdir -p "$OUT"
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT

# The modules 9p and the overlay need, dependencies first.
declare -A seen=()
order=()
add_module() {
	local name=$1 path dep
	[ -n "${seen[$name]:-}" ] && return
	seen[$name]=1
	path=$(find "$MODDIR/kernel" -name "$name.ko" | head -1)
	[ -n "$path" ] || return 0 # built in
	# the module's own .modinfo says what it needs (no kmod needed)
	for dep in $(grep -a -o 'depends=[[:print:]]*' "$path" |
		head -1 | cut -d= -f2 | tr ',' ' '); do
		add_module "$dep"
	done
	order+=("$path")
}
for m in virtio_pci virtio_blk 9pnet_virtio 9p overlay crc32c_generic ext4; do
	add_module "$m"
done

# The initramfs: busybox, the modules, and an init that mounts the host.
ROOT=$WORK/initramfs
mkdir -p "$ROOT"/{bin,dev,proc,sys,mods,host,rw,merged}
cp "$(command -v busybox)" "$ROOT/bin/busybox"
for p in "${order[@]}"; do
	cp "$p" "$ROOT/mods/"
	basename "$p" >>"$ROOT/mods/order"
done
printf '%q ' "$@" >"$ROOT/command"
printf '%s' "$PWD" >"$ROOT/cwd"
printf "%s" "$OUT" >"$ROOT/out.path"
cat >"$ROOT/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /mods/order); do insmod "/mods/$m" || echo "init: insmod $m failed"; done
opts=trans=virtio,version=9p2000.L,msize=524288,cache=loose
mount -t 9p -o "$opts,ro" hostroot /host || echo "init: 9p mount failed"
mount -t tmpfs -o size=1g rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work /merged ||
	echo "init: overlay failed"
# /tmp stays the host's (a checkout may be there), written to in memory
for fs in proc:/proc sysfs:/sys devtmpfs:/dev tmpfs:/run; do
	mount -t "${fs%%:*}" "${fs%%:*}" "/merged${fs#*:}"
done
# a disk of its own, so that waits for I/O are real
if [ -b /dev/vda ] && mke2fs -q /dev/vda && mount -t ext4 /dev/vda /merged/var/tmp; then
	chmod 1777 /merged/var/tmp
else
	echo "init: no disk for /var/tmp"
fi
mount -t bpf bpf /merged/sys/fs/bpf
mount -t debugfs debugfs /merged/sys/kernel/debug
mount -t tracefs tracefs /merged/sys/kernel/tracing 2>/dev/null
# last: the mounts above may cover where it goes
out=$(cat /out.path)
mkdir -p "/merged$out"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 out "/merged$out"
echo "init: kernel $(uname -r), running the command"
chroot /merged /bin/sh -c "cd '$(cat /cwd)' && $(cat /command)" \
	>"/merged$out/console.log" 2>&1
echo $? >"/merged$out/status"
sync
poweroff -f
INIT
chmod +x "$ROOT/init"
(cd "$ROOT" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) \
	>"$WORK/initrd.gz"
truncate -s 4G "$WORK/disk.img"

# Boot it.  TCG: a guest under KVM hung on these VMs.  A CPU stuck in
# the guest's kernel for 40 s panics it (and qemu exits: -no-reboot), so a
# lockup shows its stack at once instead of a silent wait for the timeout;
# warnings reach the console for the same reason.  One CPU, ahead of the
# host's other work (nice -10): a TCG guest has no steal clock, and two
# CPUs take turns on this one thread a tenth of a second at a time, so
# time the guest did not run would land on whatever it ran last, as no
# real machine shows (README.md, Portability); its own workloads load it.
start=$(date +%s)
set +e
timeout --kill-after=10 "$TIMEOUT" nice -n -10 qemu-system-x86_64 \
	-machine q35 -accel tcg,thread=single -cpu max -smp 1 -m "$MEM" \
	-nographic -no-reboot -kernel "$VMLINUZ" -initrd "$WORK/initrd.gz" \
	-append "console=ttyS0 panic=-1 loglevel=5 tsc=reliable softlockup_panic=1 watchdog_thresh=20" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs "local,path=$OUT,mount_tag=out,security_model=none" \
	-drive "file=$WORK/disk.img,if=virtio,format=raw" \
	>"$WORK/qemu.log" 2>&1
qrc=$?
set -e
[ -f "$OUT/console.log" ] && cat "$OUT/console.log"
echo "# vm: $KERNEL_PKG ($KVER), $(($(date +%s) - start)) s in qemu (TCG)"
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	echo "# vm: killed after $TIMEOUT s; its console:"
	tail -40 "$WORK/qemu.log"
	exit 124
fi
if [ ! -f "$OUT/status" ]; then
	echo "# vm: the command did not finish; the guest's console:"
	if grep -q "Kernel panic" "$WORK/qemu.log"; then
		sed -n '/BUG: \|Kernel panic/,$p' "$WORK/qemu.log" | head -120
	else
		tail -40 "$WORK/qemu.log"
	fi
	exit 125
fi
exit "$(cat "$OUT/status")"
