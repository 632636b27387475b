/* test-seccomp-bpf.c — the BPF program sandboxer builds against the classifier the supervisor
 * uses to name what it refused (sbx_seccomp_classify()), over every syscall number from -2 to 520
 * and a spread of argument values, for several option sets: a small cBPF interpreter runs the
 * program (prefix + libseccomp's binary tree), and the two must agree on allow or refuse, and on
 * the errno of a plain refusal. test-seccomp.c checks the same against the kernel for chosen
 * calls; this one checks everything else, where a layout change (the tree) could diverge
 * silently. */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "isolate/seccomp.h"
#include "tap.h"

#if !defined(__x86_64__)
int main(void) {
        printf("1..0 # SKIP the seccomp filter is x86_64 only\n");
        return 0;
}
#else

/* The cBPF subset a seccomp program may use; -1 for anything else (a failure of the test). */
static int64_t run(const struct sock_fprog *p, const struct seccomp_data *d) {
        uint32_t a = 0, x = 0, m[BPF_MEMWORDS] = {0};
        for (unsigned pc = 0; pc < p->len; pc++) {
                const struct sock_filter *f = &p->filter[pc];
                switch (f->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        if (f->k > sizeof *d - 4 || (f->k & 3))
                                return -1;
                        memcpy(&a, (const char *) d + f->k, 4);
                        break;
                case BPF_LD | BPF_IMM:
                        a = f->k;
                        break;
                case BPF_LDX | BPF_IMM:
                        x = f->k;
                        break;
                case BPF_ST:
                case BPF_STX:
                case BPF_LD | BPF_MEM:
                case BPF_LDX | BPF_MEM:
                        if (f->k >= BPF_MEMWORDS)
                                return -1;
                        if (f->code == BPF_ST)
                                m[f->k] = a;
                        else if (f->code == BPF_STX)
                                m[f->k] = x;
                        else if (f->code == (BPF_LD | BPF_MEM))
                                a = m[f->k];
                        else
                                x = m[f->k];
                        break;
                case BPF_ALU | BPF_AND | BPF_K:
                        a &= f->k;
                        break;
                case BPF_ALU | BPF_OR | BPF_K:
                        a |= f->k;
                        break;
                case BPF_MISC | BPF_TAX:
                        x = a;
                        break;
                case BPF_MISC | BPF_TXA:
                        a = x;
                        break;
                case BPF_JMP | BPF_JA:
                        pc += f->k;
                        break;
                case BPF_JMP | BPF_JEQ | BPF_K:
                        pc += a == f->k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JGT | BPF_K:
                        pc += a > f->k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JGE | BPF_K:
                        pc += a >= f->k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JSET | BPF_K:
                        pc += (a & f->k) ? f->jt : f->jf;
                        break;
                case BPF_RET | BPF_K:
                        return f->k;
                case BPF_RET | BPF_A:
                        return a;
                default:
                        return -1;
                }
        }
        return -1; /* fell off the end */
}

/* Syscalls whose rules look at more than the first argument: all combinations there. */
static bool many_args(int nr) {
        static const int nrs[] = {2, 16, 41, 56, 85, 257, 435, 437, 54, 72};
        for (size_t i = 0; i < sizeof nrs / sizeof nrs[0]; i++)
                if (nrs[i] == nr)
                        return true;
        return false;
}

int main(void) {
        static const uint64_t vals[] = {0, 1, 2, 3, 10, 16, 17, 0x11, 0x12, 0x40, 0x41, 0x241, 01101, 0x100,
                0x4008, 0x5401, 0x541c, 0x10000, 0x20000, 0x80000, 0x7e020000, 0x10000000, 0x20000000,
                0x40000000, 0x50000000, 0x80000000ULL, 0xffffffffULL, 0x100000000ULL, 0xffffffff00000000ULL};
        const size_t nv = sizeof vals / sizeof vals[0];
        sbx_seccomp_opts o[6];
        memset(o, 0, sizeof o);
        o[1].deny_inet = o[1].deny_spawn = o[1].deny_metadata = true;
        o[2].deny_all_sockets_but_unix_pair = true, o[2].exec = SBX_SECCOMP_EXEC_NOTIFY, o[2].notify = true;
        o[3].notify = o[3].observe_network = o[3].observe_exec = o[3].observe_fs_writes = true;
        o[4].kill_on_violation = o[4].deny_spawn = true, o[4].exec = SBX_SECCOMP_EXEC_DENY;
        o[5].deny_all_sockets_but_unix_pair = o[5].deny_inet = o[5].deny_metadata = true;
        o[5].notify = o[5].observe_network = true;

        for (size_t v = 0; v < sizeof o / sizeof o[0]; v++) {
                sbx_seccomp_prog *p = NULL;
                sbx_error e = {0};
                if (sbx_seccomp_build(&o[v], &p, &e) < 0) {
                        ok(false, "option set %zu: build (%s)", v, e.message);
                        continue;
                }
                unsigned long total = 0, bad = 0, broken = 0;
                for (int nr = -2; nr <= 520; nr++)
                        for (size_t a0 = 0; a0 < nv; a0++)
                                for (size_t a1 = 0; a1 < nv; a1 += many_args(nr) ? 1 : nv)
                                        for (size_t a2 = 0; a2 < nv;
                                                a2 += (nr == 257 || nr == 41) ? 1 : nv) {
                                                struct seccomp_data d = {
                                                        .nr = nr, .arch = AUDIT_ARCH_X86_64};
                                                d.args[0] = vals[a0], d.args[1] = vals[a1],
                                                d.args[2] = vals[a2];
                                                int64_t r = run(&p->fprog, &d);
                                                sbx_seccomp_match m;
                                                if (r < 0) {
                                                        broken++;
                                                        continue;
                                                }
                                                if (sbx_seccomp_classify(&o[v], &d, &m) < 0)
                                                        continue;
                                                total++;
                                                uint32_t act = (uint32_t) r & SECCOMP_RET_ACTION_FULL;
                                                bool agree = (act == SECCOMP_RET_ALLOW) ==
                                                             (m.action == SBX_SECCOMP_ALLOW);
                                                if (agree && act == SECCOMP_RET_ERRNO && m.errnum &&
                                                        m.action != SBX_SECCOMP_OBSERVE &&
                                                        m.action != SBX_SECCOMP_EXEC_GATE &&
                                                        (int) (r & SECCOMP_RET_DATA) != m.errnum)
                                                        agree = false;
                                                if (!agree && bad++ < 5)
                                                        diag("set %zu: nr %d args %#llx %#llx %#llx: BPF "
                                                             "%#x, "
                                                             "classifier action %d errno %d",
                                                                v, nr, (unsigned long long) d.args[0],
                                                                (unsigned long long) d.args[1],
                                                                (unsigned long long) d.args[2], (unsigned) r,
                                                                (int) m.action, m.errnum);
                                        }
                ok(broken == 0,
                        "option set %zu: the program (%u instructions) runs to a return for every input", v,
                        p->fprog.len);
                ok(total > 10000 && bad == 0,
                        "option set %zu: BPF and classifier agree on %lu inputs (%lu differ)", v, total,
                        bad);
                /* other architectures: killed by the prefix, whatever the number */
                struct seccomp_data i386 = {.nr = 11, .arch = AUDIT_ARCH_I386};
                ok(run(&p->fprog, &i386) == SECCOMP_RET_KILL_PROCESS, "option set %zu: i386 is killed", v);
                sbx_seccomp_prog_free(p);
        }
        return done_testing();
}
#endif
