/* packet_socket — open an AF_PACKET socket (link layer: every frame of the interface). */
#include "attack.h"
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <sys/socket.h>

int main(void) {
        int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
        if (s < 0)
                BLOCKED_ERRNO("socket(AF_PACKET)");
        ESCAPED("packet socket fd %d", s);
}
