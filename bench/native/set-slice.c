/*
 * set-slice PID NS: asks the kernel's EEVDF scheduler (Linux >= 6.12) for a custom time slice of
 * NS nanoseconds on every thread of PID, keeping its policy (SCHED_OTHER) and nice value. A
 * shorter slice gives a waking task an earlier virtual deadline, so it runs sooner after it
 * wakes (and is preempted sooner): the knob for a latency-sensitive task that needs no privilege
 * and takes no CPU share from anyone. For bench/cri.ts (PODIPAM_BENCH_CRI_AGENT_SLICE_US).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct sched_attr {
  uint32_t size, sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
  uint32_t sched_util_min, sched_util_max;
};

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: set-slice PID NS\n");
    return 2;
  }
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%s/task", argv[1]);
  uint64_t ns = strtoull(argv[2], NULL, 10);
  DIR *d = opendir(dir);
  if (!d) {
    perror(dir);
    return 1;
  }
  int rc = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    int tid = atoi(e->d_name);
    struct sched_attr a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, tid, &a, sizeof a, 0) != 0) {
      perror("sched_getattr");
      rc = 1;
      continue;
    }
    a.size = sizeof a;
    a.sched_runtime = ns;
    if (syscall(SYS_sched_setattr, tid, &a, 0) != 0) {
      fprintf(stderr, "sched_setattr tid %d: ", tid);
      perror("");
      rc = 1;
    }
  }
  closedir(d);
  return rc;
}
