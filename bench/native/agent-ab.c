/*
 * agent-ab: the agent's own cost per call, two agents side by side — no exec, no shim: a
 * connection per call, as the shim makes it, writing a request framed as src/wire/frame.ts
 * (prepared by bench/tools/agent-ab.ts) and reading the answer to its length. Calls alternate
 * between the agents pair by pair (A's ADD and DEL, then B's), `GAP_US` of sleep before each,
 * so both see the same machine at the same moments. Not part of the product.
 *
 *   agent-ab SOCK_A FRAMES_A SOCK_B FRAMES_B GAP_US SKIP
 *
 * FRAMES_*: the calls in order (ADD, DEL, ADD, …), each a u32 length (little-endian) and the
 * frame. Prints one line per pair after the first SKIP: "a_add_us a_del_us b_add_us b_del_us".
 * A call whose answer is not status 0 exits 2 with the answer on stderr.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static char *load(const char *path, long *size) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  rewind(f);
  char *all = malloc(*size);
  if (fread(all, 1, *size, f) != (size_t)*size) { perror(path); exit(1); }
  fclose(f);
  return all;
}

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* One call: µs from before socket() to the whole answer read. */
static double call(const char *sock, const char *frame, uint32_t len) {
  static unsigned char buf[1 << 16];
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  strncpy(a.sun_path, sock, sizeof a.sun_path - 1);
  double t0 = now_us();
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) { perror(sock); exit(1); }
  if (write(s, frame, len) != (ssize_t)len) { perror("write"); exit(1); }
  size_t got = 0;
  ssize_t k;
  while ((k = read(s, buf + got, sizeof buf - got)) > 0) {
    got += (size_t)k;
    if (got >= 16 && got >= 16 + (size_t)be32(buf + 12)) break;
    if (got == sizeof buf) { fprintf(stderr, "%s: an answer larger than %zu bytes\n", sock, sizeof buf); exit(1); }
  }
  if (k < 0) { perror(sock); exit(1); }
  close(s);
  double t = now_us() - t0;
  if (got < 16 || be32(buf + 8) != 0) {
    fprintf(stderr, "%s answered status %u: %.*s\n", sock, got >= 16 ? be32(buf + 8) : 0, got > 16 ? (int)(got - 16) : 0, buf + 16);
    exit(2);
  }
  return t;
}

int main(int argc, char **argv) {
  if (argc != 7) { fprintf(stderr, "usage: agent-ab SOCK_A FRAMES_A SOCK_B FRAMES_B GAP_US SKIP\n"); return 1; }
  signal(SIGPIPE, SIG_IGN); /* an agent gone mid-call: write fails, named below */
  long size[2];
  char *frames[2] = {load(argv[2], &size[0]), load(argv[4], &size[1])};
  const char *sock[2] = {argv[1], argv[3]};
  long gap = atol(argv[5]), skip = atol(argv[6]);
  long off[2] = {0, 0};
  for (long pair = 0; off[0] < size[0] && off[1] < size[1]; pair++) {
    double us[4];
    for (int side = 0; side < 2; side++) {
      for (int verb = 0; verb < 2; verb++) {
        uint32_t len;
        if (off[side] + 4 > size[side]) { fprintf(stderr, "frames of %s end mid-pair\n", sock[side]); return 1; }
        memcpy(&len, frames[side] + off[side], 4);
        off[side] += 4;
        if (len > (uint32_t)(size[side] - off[side])) { fprintf(stderr, "frames of %s: a frame runs past the end\n", sock[side]); return 1; }
        if (gap > 0) usleep((useconds_t)gap);
        us[side * 2 + verb] = call(sock[side], frames[side] + off[side], len);
        off[side] += len;
      }
    }
    if (pair >= skip) printf("%.1f %.1f %.1f %.1f\n", us[0], us[1], us[2], us[3]);
  }
  return 0;
}
