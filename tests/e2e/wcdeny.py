#!/usr/bin/env python3
"""wcdeny.py NR[,NR...] CMD...: run CMD with the system calls numbered NR
(x86-64's numbers) failing with EPERM, as a seccomp filter or a security
module would refuse them while the capabilities are there."""
import ctypes
import os
import struct
import sys

AUDIT_ARCH_X86_64 = 0xc000003e


def insn(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)


def main():
    nrs = [int(x) for x in sys.argv[1].split(",")]
    ld_arch, ld_nr, jeq, ret = (0x20, 4), (0x20, 0), 0x15, 0x06
    prog = insn(ld_arch[0], 0, 0, ld_arch[1])
    prog += insn(jeq, 1, 0, AUDIT_ARCH_X86_64)
    prog += insn(ret, 0, 0, 0x7fff0000)  # another arch: as it is
    prog += insn(ld_nr[0], 0, 0, ld_nr[1])
    for nr in nrs:
        prog += insn(jeq, 0, 1, nr)
        prog += insn(ret, 0, 0, 0x00050000 | 1)  # SECCOMP_RET_ERRNO | EPERM
    prog += insn(ret, 0, 0, 0x7fff0000)  # SECCOMP_RET_ALLOW
    buf = ctypes.create_string_buffer(prog)

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    # PR_SET_SECCOMP, SECCOMP_MODE_FILTER (root: no_new_privs not needed)
    if libc.prctl(22, 2, ctypes.byref(fp), 0, 0) != 0:
        sys.exit("wcdeny: seccomp: " + os.strerror(ctypes.get_errno()))
    os.execvp(sys.argv[2], sys.argv[2:])


main()
