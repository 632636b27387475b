/* vsock — open an AF_VSOCK socket and connect to the hypervisor (CID 2): a VM guest's channel to
 * its host, outside every network namespace. Creating the socket is the escape surface. */
#include "attack.h"
#include <linux/vm_sockets.h>
#include <sys/socket.h>

int main(void) {
        int s = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                BLOCKED_ERRNO("socket(AF_VSOCK)");
        ESCAPED("vsock socket fd %d", s);
}
