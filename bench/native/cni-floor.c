/*
 * cni-floor: the physical floor of a CNI IPAM call — a static executable that reads the config
 * on stdin, and for ADD prints a fixed CNI result (for DEL, nothing), exit 0. No allocation, no
 * store, no socket: what any plugin pays for being exec'd by the runtime and exchanging JSON.
 * Built by bench/agent.ts with the system's cc (-static); not part of the product.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char result[] =
    "{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.128.0.2/16\",\"gateway\":\"10.128.0.1\"}]}\n";

int main(void) {
  char buf[65536];
  size_t total = 0;
  for (;;) {
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0) return 1;
    if (n == 0) break;
    total += (size_t)n;
  }
  const char *cmd = getenv("CNI_COMMAND");
  if (total == 0 || cmd == NULL) return 1;
  if (strcmp(cmd, "ADD") == 0 && write(1, result, sizeof result - 1) != (ssize_t)(sizeof result - 1)) return 1;
  return 0;
}
