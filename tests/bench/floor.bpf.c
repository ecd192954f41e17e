// SPDX-License-Identifier: GPL-2.0
/*
 * floor.bpf.c - the benchmark's yardsticks for a context-switch hook.
 *
 * Owns nothing the plugin uses.  Two programs on the same tracepoint as
 * ours, measured in the same run so our ns per switch reads against what
 * this machine charges for any hook at all: an empty program, and one that
 * keeps a per-thread timestamp in task storage (the least an accounting
 * hook can do).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} floor_stamps SEC(".maps");

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_empty, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_stamp, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	__u64 *ts = bpf_task_storage_get(&floor_stamps, prev, 0,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (ts)
		*ts = next->se.cfs_rq->rq->clock;
	return 0;
}
