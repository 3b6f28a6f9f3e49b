/*
 * cni-driver: runs a CNI plugin the way a runtime does — posix_spawn with the CNI environment,
 * the config on stdin, stdout collected, exit status checked — with far less overhead per call
 * than Node's child_process, so that a benchmark measures the plugin rather than the harness.
 * Used by bench/agent.ts and bench/annotations.ts (built there with the system's cc); not part of the product.
 *
 *   cni-driver seq   PLUGIN CONFIG_FILE COUNT [FIRST]  ADD then DEL of COUNT containers, in turn
 *                                                      (seqFIRST, seqFIRST+1, …; FIRST 0 by default);
 *                                                      prints "add_us del_us add_start add_end" per
 *                                                      pair (the last two: CLOCK_MONOTONIC µs just
 *                                                      before the ADD's posix_spawn and after its
 *                                                      waitpid, to line up with the plugin's own
 *                                                      timestamps)
 *   cni-driver burst PLUGIN CONFIG_FILE COUNT INFLIGHT COUNT ADDs with INFLIGHT at a time, then
 *                                                      the DELs likewise; prints "add_ms del_ms"
 * Environment for the plugin: this process's environment (of its CNI_ variables, only CNI_ARGS) plus CNI_COMMAND, CNI_CONTAINERID,
 * CNI_IFNAME=eth0, CNI_NETNS=/var/run/netns/bench and CNI_PATH. Any failure exits 1 with the
 * plugin's output on stderr.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static char *config;
static size_t config_len;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Starts PLUGIN for (cmd, id); returns its pid, its stdout read end in *out (or -1: /dev/null). */
static pid_t start(const char *plugin, const char *cmd, const char *id, int *out) {
  static char *env[512];
  static char c1[64], c2[128];
  int n = 0;
  /* The caller's CNI_ARGS (the pod's identity) pass through; the other CNI_ variables are set below. */
  for (char **e = environ; *e && n < 500; e++) if (strncmp(*e, "CNI_", 4) != 0 || strncmp(*e, "CNI_ARGS=", 9) == 0) env[n++] = *e;
  snprintf(c1, sizeof c1, "CNI_COMMAND=%s", cmd);
  snprintf(c2, sizeof c2, "CNI_CONTAINERID=%s", id);
  env[n++] = c1; env[n++] = c2;
  env[n++] = "CNI_IFNAME=eth0"; env[n++] = "CNI_NETNS=/var/run/netns/bench"; env[n++] = "CNI_PATH=/usr/lib/cni";
  env[n] = NULL;
  int in[2], o[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(o, O_CLOEXEC)) { perror("pipe"); exit(1); }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  if (out) posix_spawn_file_actions_adddup2(&fa, o[1], 1);
  else posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  char *argv[] = {(char *)plugin, NULL};
  if (posix_spawn(&pid, plugin, &fa, NULL, argv, env) != 0) { perror("posix_spawn"); exit(1); }
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]); close(o[1]);
  if (write(in[1], config, config_len) != (ssize_t)config_len) { perror("write"); exit(1); } /* a config fits the pipe */
  close(in[1]);
  if (out) *out = o[0]; else close(o[0]);
  return pid;
}

static void finish(pid_t pid, int out, const char *what) {
  char buf[65536];
  size_t have = 0;
  ssize_t r;
  while (out >= 0 && (r = read(out, buf + have, sizeof buf - 1 - have)) > 0) have += (size_t)r;
  if (out >= 0) close(out);
  int st;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    buf[have] = 0;
    fprintf(stderr, "%s failed (status %d): %s\n", what, st, buf);
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc < 5) { fprintf(stderr, "usage: cni-driver seq|burst PLUGIN CONFIG COUNT [FIRST|INFLIGHT]\n"); return 2; }
  const char *plugin = argv[2];
  FILE *f = fopen(argv[3], "r");
  if (!f) { perror(argv[3]); return 1; }
  config = malloc(1 << 20);
  config_len = fread(config, 1, 1 << 20, f);
  fclose(f);
  int count = atoi(argv[4]);
  char id[64];
  if (strcmp(argv[1], "seq") == 0) {
    int first = argc > 5 ? atoi(argv[5]) : 0;
    for (int i = 0; i < count; i++) {
      snprintf(id, sizeof id, "seq%d", first + i);
      int out = -1;
      double t0 = now_us();
      pid_t p = start(plugin, "ADD", id, &out);
      finish(p, out, "ADD");
      double t1 = now_us();
      p = start(plugin, "DEL", id, &out);
      finish(p, out, "DEL");
      printf("%.1f %.1f %.1f %.1f\n", t1 - t0, now_us() - t1, t0, t1);
    }
    return 0;
  }
  int inflight = argc > 5 ? atoi(argv[5]) : 32;
  const char *cmds[2] = {"ADD", "DEL"};
  for (int c = 0; c < 2; c++) {
    double t0 = now_us();
    int next = 0, running = 0;
    while (next < count || running > 0) {
      while (running < inflight && next < count) {
        snprintf(id, sizeof id, "burst%d", next++);
        start(plugin, cmds[c], id, NULL);
        running++;
      }
      int st;
      pid_t p = wait(&st);
      if (p < 0) { perror("wait"); return 1; }
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) { fprintf(stderr, "%s failed (status %d)\n", cmds[c], st); return 1; }
      running--;
    }
    printf("%s%.1f", c ? " " : "", (now_us() - t0) / 1e3);
  }
  printf("\n");
  return 0;
}
