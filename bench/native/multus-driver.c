/*
 * multus-driver: runs Multus-style pods' CNI calls the way a runtime does — posix_spawn with
 * each call's environment, its network config on stdin, stdout collected, exit status kept —
 * with far less overhead per call than Node's child_process (bench/multus.ts; built there with
 * the system's cc; not part of the product). Each pod's calls run one after another (Multus's
 * delegates: ADD in the plan's order, DEL in reverse), INFLIGHT pods at a time; a pod whose call
 * fails stops there, as Multus does.
 *
 *   multus-driver PLUGIN PLAN_FILE INFLIGHT ADD|DEL|VERSION ANSWERS_FILE
 *
 * (VERSION: the ADD order; the harness's own floor, a plugin answering without work.)
 *
 * PLAN_FILE: "PODS NETWORKS\n", then per pod, per network (ADD order): "ENVLEN CONFLEN\n", the
 * environment (ENVLEN bytes of NUL-terminated KEY=VALUE entries, CNI_COMMAND left out: added
 * here) and the config (CONFLEN bytes). ANSWERS_FILE gets per call, in completion order,
 * "POD NET STATUS LEN\n" and the LEN bytes the plugin printed, then "\n" (STATUS: the exit
 * status, or 128+signal). stdout: "WALL_MS\n", then "POD MS\n" per pod (its first call's start
 * to its last answer). An answer larger than the pipe's buffer (64 KiB) is not expected of an
 * IPAM plugin: the driver reads it after the plugin exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct call {
  char **env;
  const char *conf;
  size_t conf_len;
};

struct lane {
  int pod, k; /* pod, and how many of its calls are done */
  pid_t pid;
  int out;
  double start_us;
};

static int pods, nets;
static struct call *calls; /* pods * nets */

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) die(path);
  if (fseek(f, 0, SEEK_END)) die(path);
  long n = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) die(path);
  buf[n] = 0;
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static void parse_plan(char *buf, size_t len, const char *command) {
  char *p = buf, *end = buf + len;
  if (sscanf(p, "%d %d", &pods, &nets) != 2 || pods < 1 || nets < 1) { fprintf(stderr, "plan: bad header\n"); exit(1); }
  p = memchr(p, '\n', (size_t)(end - p)) + 1;
  calls = calloc((size_t)pods * (size_t)nets, sizeof *calls);
  static char cmd[64];
  snprintf(cmd, sizeof cmd, "CNI_COMMAND=%s", command);
  for (int i = 0; i < pods * nets; i++) {
    size_t envlen, conflen;
    if (p >= end || sscanf(p, "%zu %zu", &envlen, &conflen) != 2) { fprintf(stderr, "plan: bad call %d\n", i); exit(1); }
    p = memchr(p, '\n', (size_t)(end - p)) + 1;
    if ((size_t)(end - p) < envlen + conflen) { fprintf(stderr, "plan: call %d truncated\n", i); exit(1); }
    int n = 0;
    for (size_t j = 0; j < envlen; j++) if (p[j] == 0) n++;
    char **env = calloc((size_t)n + 2, sizeof *env);
    int e = 0;
    for (char *q = p; q < p + envlen; q += strlen(q) + 1) env[e++] = q;
    env[e++] = cmd;
    env[e] = NULL;
    calls[i].env = env;
    calls[i].conf = p + envlen;
    calls[i].conf_len = conflen;
    p += envlen + conflen;
  }
}

static int net_of(int k, int del) { return del ? nets - 1 - k : k; }

static void start(struct lane *l, const char *plugin, int del) {
  struct call *c = &calls[l->pod * nets + net_of(l->k, del)];
  int in[2], o[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(o, O_CLOEXEC)) die("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, o[1], 1);
  char *argv[] = {(char *)plugin, NULL};
  int err = posix_spawn(&l->pid, plugin, &fa, NULL, argv, c->env);
  if (err) { errno = err; die("posix_spawn"); }
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(o[1]);
  /* A config fits the pipe's buffer; a plugin that exits without reading it gets EPIPE here, ignored. */
  if (write(in[1], c->conf, c->conf_len) < 0 && errno != EPIPE) die("write");
  close(in[1]);
  l->out = o[0];
}

int main(int argc, char **argv) {
  if (argc != 6 || (strcmp(argv[4], "ADD") && strcmp(argv[4], "DEL") && strcmp(argv[4], "VERSION"))) {
    fprintf(stderr, "usage: multus-driver PLUGIN PLAN_FILE INFLIGHT ADD|DEL|VERSION ANSWERS_FILE\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  const char *plugin = argv[1];
  int del = strcmp(argv[4], "DEL") == 0;
  size_t len;
  char *plan = slurp(argv[2], &len);
  parse_plan(plan, len, argv[4]);
  int inflight = atoi(argv[3]);
  if (inflight < 1) inflight = 1;
  if (inflight > pods) inflight = pods;
  FILE *answers = fopen(argv[5], "wb");
  if (!answers) die(argv[5]);
  double *pod_ms = calloc((size_t)pods, sizeof *pod_ms);
  struct lane *lanes = calloc((size_t)inflight, sizeof *lanes);
  static char buf[1 << 20];
  double t0 = now_us();
  int next = 0, running = 0;
  for (int i = 0; i < inflight; i++) {
    lanes[i] = (struct lane){.pod = next++, .k = 0, .start_us = now_us()};
    start(&lanes[i], plugin, del);
    running++;
  }
  while (running > 0) {
    int st;
    pid_t pid = wait(&st);
    if (pid < 0) die("wait");
    struct lane *l = NULL;
    for (int i = 0; i < inflight; i++) if (lanes[i].pid == pid) l = &lanes[i];
    if (!l) continue;
    size_t have = 0;
    ssize_t r;
    while ((r = read(l->out, buf + have, sizeof buf - have)) > 0) have += (size_t)r;
    close(l->out);
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    fprintf(answers, "%d %d %d %zu\n", l->pod, net_of(l->k, del), status, have);
    fwrite(buf, 1, have, answers);
    fputc('\n', answers);
    l->k++;
    if (status == 0 && l->k < nets) {
      start(l, plugin, del);
      continue;
    }
    pod_ms[l->pod] = (now_us() - l->start_us) / 1e3;
    if (next < pods) {
      *l = (struct lane){.pod = next++, .k = 0, .start_us = now_us()};
      start(l, plugin, del);
    } else {
      l->pid = 0;
      running--;
    }
  }
  double wall = (now_us() - t0) / 1e3;
  if (fclose(answers)) die(argv[5]);
  printf("%.1f\n", wall);
  for (int p = 0; p < pods; p++) printf("%d %.1f\n", p, pod_ms[p]);
  return 0;
}
