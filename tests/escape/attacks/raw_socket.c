/* raw_socket — open a raw IPv4 socket (forge packets, sniff ICMP). */
#include "attack.h"
#include <netinet/in.h>
#include <sys/socket.h>

int main(void) {
        int s = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
        if (s < 0)
                BLOCKED_ERRNO("socket(AF_INET, SOCK_RAW)");
        ESCAPED("raw socket fd %d", s);
}
