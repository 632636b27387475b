#!/usr/bin/env python3
"""audit-ctl.py — turn the kernel's audit on for a test and back off (root only).

    audit-ctl.py status            prints "enabled=N"
    audit-ctl.py on STATEFILE      remembers the current state in STATEFILE, then enables audit;
                                   where it was off, first adds the rule '-a never,task' so that
                                   no process gets a syscall-audit context (which would slow every
                                   system call of every later process on the host, for good)
    audit-ctl.py restore STATEFILE sets audit back to what STATEFILE says

The 'never,task' rule is left in place by restore: audit cannot be made to forget it was ever
enabled, and without the rule every process started afterwards would pay syscall auditing.
The rule changes nothing else: no record is written because of it or withheld by it.
sandboxer itself never changes the host's audit settings; only its tests do, through this.
"""
import socket
import struct
import sys

AUDIT_GET, AUDIT_SET, AUDIT_ADD_RULE = 1000, 1001, 1011
AUDIT_STATUS_ENABLED = 1
AUDIT_FILTER_TASK, AUDIT_NEVER = 1, 0


def request(s, typ, payload=b""):
    s.send(struct.pack("=IHHII", 16 + len(payload), typ, 1 | 4, 1, 0) + payload)  # REQUEST|ACK
    status = None
    while True:
        d = s.recv(65536)
        length, t = struct.unpack("=IH", d[:6])
        if t == AUDIT_GET:
            status = struct.unpack("=II", d[16:24])
        elif t == 2:  # NLMSG_ERROR: the acknowledgement (0) or an error
            err = struct.unpack("=i", d[16:20])[0]
            if err and err != -17:  # EEXIST: the rule is there already
                raise OSError(-err, "audit request %d refused" % typ)
            if typ != AUDIT_GET or status is not None:
                return status
        if typ == AUDIT_GET and status is not None:
            return status


def enabled(s):
    return request(s, AUDIT_GET)[1]


def set_enabled(s, v):
    request(s, AUDIT_SET, struct.pack("=9I", AUDIT_STATUS_ENABLED, v, 0, 0, 0, 0, 0, 0, 0))


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("status", "on", "restore") or (sys.argv[1] != "status" and len(sys.argv) != 3):
        sys.exit(__doc__)
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)
    s.bind((0, 0))
    if sys.argv[1] == "status":
        print("enabled=%d" % enabled(s))
    elif sys.argv[1] == "on":
        was = enabled(s)
        with open(sys.argv[2], "w") as f:
            f.write("%d\n" % was)
        if was == 0:
            rule = struct.pack("=III", AUDIT_FILTER_TASK, AUDIT_NEVER, 0) + struct.pack("=64I", *([0xFFFFFFFF] * 64))
            rule += b"\0" * (64 * 4 * 3) + struct.pack("=I", 0)
            request(s, AUDIT_ADD_RULE, rule)
            set_enabled(s, 1)
        print("enabled=%d (was %d)" % (enabled(s), was))
    else:
        was = int(open(sys.argv[2]).read().strip() or "0")
        set_enabled(s, was)
        print("enabled=%d" % enabled(s))


if __name__ == "__main__":
    main()
