/* bpf_map — create a BPF map (the bpf(2) surface: verifier bugs, kernel memory). */
#include "attack.h"
#include <linux/bpf.h>

int main(void) {
        union bpf_attr a;
        memset(&a, 0, sizeof(a));
        a.map_type = BPF_MAP_TYPE_ARRAY;
        a.key_size = 4;
        a.value_size = 8;
        a.max_entries = 1;
        long fd = syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a));
        if (fd < 0)
                BLOCKED_ERRNO("bpf(BPF_MAP_CREATE)");
        ESCAPED("BPF map fd %ld", fd);
}
