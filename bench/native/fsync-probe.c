/*
 * fsync-probe FILE INTERVAL_MS MAX_S: every INTERVAL_MS, rewrites one 4 KiB page of FILE in place
 * (16 pages in turn, as a reused SQLite WAL is written) and fsyncs it, timing the fsync; stops on
 * SIGTERM (or its parent's death) and prints "n P50 P90 P99 MAX" (milliseconds) on stdout — or,
 * stopped by a limit (MAX_S seconds, its sample buffer), prints them and exits 3.
 * It prints "ready" on a line of its own once it takes SIGUSR1, which pauses the sampling, and
 * SIGUSR2, which resumes it (it starts paused). bench/lib/fsync-probe.ts runs it for
 * bench/cri.ts: what one durable commit costs on the disk while the runtime starts sandboxes, to
 * tell the cluster agent's own time from the disk's (PODIPAM_BENCH_CRI_FSYNC_PROBE_MS).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define PAGES 16
#define MAX_SAMPLES 200000

static volatile sig_atomic_t stop, paused = 1;
static void on_term(int sig) { (void)sig; stop = 1; }
static void on_pause(int sig) { paused = sig == SIGUSR1; }

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: fsync-probe FILE INTERVAL_MS MAX_S\n");
    return 2;
  }
  // First: a pause or resume sent right after the start must not kill it (their default action).
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_flags = SA_RESTART; // a pause or resume never fails a write or fsync (usleep still wakes)
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sa.sa_handler = on_pause;
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGUSR2, &sa, NULL);
  // Ends with the bench that started it, even one killed outright (MAX_S bounds the rest).
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  char *end1, *end2;
  long interval = strtol(argv[2], &end1, 10), max_s = strtol(argv[3], &end2, 10);
  if (*end1 || *end2 || interval < 1 || interval > 10000 || max_s < 1 || max_s > 86400) {
    fprintf(stderr, "fsync-probe: INTERVAL_MS must be 1-10000 and MAX_S 1-86400, got %s and %s\n", argv[2], argv[3]);
    return 2;
  }
  int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  static char page[PAGE];
  memset(page, 'p', sizeof page);
  for (int i = 0; i < PAGES; i++) {
    if (pwrite(fd, page, PAGE, (off_t)i * PAGE) != PAGE) { perror("pwrite"); return 1; }
  }
  if (fsync(fd) != 0) { perror("fsync"); return 1; }
  printf("ready\n");
  fflush(stdout);
  static double ms[MAX_SAMPLES];
  int n = 0;
  double end = now_ms() + max_s * 1e3;
  while (!stop && n < MAX_SAMPLES && now_ms() < end) {
    if (paused) {
      usleep(100000); // a resume's signal ends the sleep at once
      continue;
    }
    page[0] = (char)('a' + n % 26);
    double t0 = now_ms();
    if (pwrite(fd, page, PAGE, (off_t)(n % PAGES) * PAGE) != PAGE || fsync(fd) != 0) { perror("write or fsync"); return 1; }
    ms[n++] = now_ms() - t0;
    usleep((useconds_t)(interval * 1000));
  }
  int limited = !stop;
  close(fd);
  unlink(argv[1]);
  if (n == 0) {
    printf("0 0 0 0 0\n");
    return limited ? 3 : 0;
  }
  qsort(ms, n, sizeof ms[0], cmp);
  printf("%d %.3f %.3f %.3f %.3f\n", n, ms[n / 2], ms[(int)(n * 0.9)], ms[(int)(n * 0.99)], ms[n - 1]);
  return limited ? 3 : 0;
}
