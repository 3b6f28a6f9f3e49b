/*
 * podipam-cni: the CNI binary operators install as /opt/cni/bin/podipam.
 *
 * A pod start should not pay for a Node.js process, so this small static program forwards the
 * call (the CNI_* environment and stdin) to `podipam agent` over a unix socket and prints the
 * agent's answer with its exit status. The protocol is src/wire/frame.ts (version 1): one
 * length-framed request and one answer per connection.
 *
 * Socket: the network config's `ipam.agent` (keys matched case-insensitively, as Go's
 * encoding/json does), else $PODIPAM_AGENT_SOCKET, else /run/podipam/agent.sock.
 * No agent listening (no socket file, connection refused): run the TypeScript plugin itself
 * ($PODIPAM_PLUGIN, else the path compiled in as PODIPAM_DEFAULT_PLUGIN, when executable) with
 * the same environment and stdin; otherwise answer CNI code 11 naming the socket.
 * Bounded: connect ($PODIPAM_SHIM_CONNECT_TIMEOUT_MS, default 2000) and the whole answer
 * ($PODIPAM_SHIM_TIMEOUT_MS, default 60000). An agent that dies mid-answer, answers garbage or
 * something that is not a CNI answer (valid_answer), or runs as a uid other than root or ours
 * gives code 11: never a hang, never a partial answer. A socket whose mode refuses us (EACCES)
 * is code 5 naming it: retrying cannot help. VERSION is answered here, without the agent.
 *
 * PODIPAM_SHIM_TRACE=1 (for the per-call bench's breakdown): on a forwarded call's success,
 * one line on stderr, "podipam-shim-trace MAIN CONNECTED SENT ANSWERED EXIT", CLOCK_MONOTONIC
 * microseconds at main's start, the connection made, the request sent, the answer read and
 * just before exit. Off (the default): one getenv.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "shim-build.h" /* generated: SHIM_VERSION_ANSWER, PODIPAM_DEFAULT_PLUGIN */

#define MAX_STDIN (1 << 20)
#define MAX_ANSWER (16 << 20)
#define DEFAULT_SOCKET "/run/podipam/agent.sock"
#define MAGIC 0x5044504dU
#define KIND_CNI 1U

extern char **environ;

/* ---- output ------------------------------------------------------------------------------- */

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return; /* stdout gone: nobody to tell */
    }
    p += w;
    n -= (size_t)w;
  }
}

/* Appends s as a JSON string escaped as Go's encoding/json does (<, >, & and controls as \u00xx). */
static size_t go_quote(char *out, size_t cap, const char *s) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
#define PUT(c) do { if (o + 1 < cap) out[o++] = (c); } while (0)
  PUT('"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') { PUT('\\'); PUT((char)c); }
    else if (c == '\n') { PUT('\\'); PUT('n'); }
    else if (c == '\r') { PUT('\\'); PUT('r'); }
    else if (c == '\t') { PUT('\\'); PUT('t'); }
    else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
      PUT('\\'); PUT('u'); PUT('0'); PUT('0'); PUT(hex[c >> 4]); PUT(hex[c & 15]);
    } else PUT((char)c);
  }
  PUT('"');
  out[o] = 0;
#undef PUT
  return o;
}

/*
 * Runtimes often drop a plugin's stderr, so every failure is also appended, one JSON line, to
 * $PODIPAM_CNI_LOG (default /var/log/podipam/cni.log) as the Node.js plugin does
 * (src/cni/failure-log.ts): rolled to <file>.1 past 1 MiB, one O_APPEND write per line, never
 * failing the call. `text` is the message, or the agent's error answer.
 */
static void log_failure(int code, const char *text) {
  const char *file = getenv("PODIPAM_CNI_LOG");
  if (!file || !*file) file = "/var/log/podipam/cni.log";
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", file);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) { *slash = 0; mkdir(dir, 0755); }
  struct stat st;
  if (stat(file, &st) == 0 && st.st_size > (1 << 20)) {
    char old[4200];
    snprintf(old, sizeof old, "%s.1", file);
    rename(file, old);
  }
  char q[4][6 * 1024 + 8]; /* a 1023-byte field escaped at most 6 bytes a byte */
  const char *vals[4] = {getenv("CNI_COMMAND"), getenv("CNI_CONTAINERID"), getenv("CNI_IFNAME"), text};
  for (int i = 0; i < 4; i++) {
    char cut[1024];
    snprintf(cut, sizeof cut, "%s", vals[i] ? vals[i] : "");
    go_quote(q[i], sizeof q[i], cut);
  }
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  char line[4 * (6 * 1024 + 8) + 512];
  int n = snprintf(line, sizeof line,
                   "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02dZ\",\"level\":\"error\",\"component\":\"cni-shim\",\"pid\":%d,"
                   "\"command\":%s,\"containerId\":%s,\"ifname\":%s,\"code\":%d,\"msg\":%s}\n",
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)getpid(), q[0], q[1], q[2], code, q[3]);
  int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) return;
  if (n > 0) write_all(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  close(fd);
}

/* Prints the CNI error JSON (Go's MarshalIndent layout, as the plugin prints it) and exits 1. */
static void cni_fail(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void cni_fail(int code, const char *fmt, ...) {
  char msg[1024], quoted[6200], out[6400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  go_quote(quoted, sizeof quoted, msg);
  int n = snprintf(out, sizeof out, "{\n    \"code\": %d,\n    \"msg\": %s\n}", code, quoted);
  if (n > 0) write_all(1, out, (size_t)n < sizeof out ? (size_t)n : sizeof out - 1);
  log_failure(code, msg);
  exit(1);
}

/* ---- time --------------------------------------------------------------------------------- */

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static long env_ms(const char *name, long dflt) {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  char *end;
  long n = strtol(v, &end, 10);
  if (*end || n <= 0 || n > 86400000L) cni_fail(4, "$%s \"%s\": must be a number of milliseconds from 1 to 86400000", name, v);
  return n;
}

/* ---- stdin -------------------------------------------------------------------------------- */

static char *read_stdin(size_t *len) {
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap + 1);
  if (!buf) cni_fail(5, "out of memory reading stdin");
  for (;;) {
    if (n == cap) {
      if (cap > MAX_STDIN) break;
      cap *= 2;
      buf = realloc(buf, cap + 1);
      if (!buf) cni_fail(5, "out of memory reading stdin");
    }
    ssize_t r = read(0, buf + n, cap - n);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EBADF) break; /* no stdin: empty, as the Go skel reads it */
      if (errno == EAGAIN) { struct pollfd p = {0, POLLIN, 0}; poll(&p, 1, 100); continue; }
      cni_fail(5, "error reading from stdin: %s", strerror(errno));
    }
    if (r == 0) break;
    n += (size_t)r;
    if (n > MAX_STDIN) cni_fail(7, "stdin is larger than the limit of %d bytes (a network config is kilobytes)", MAX_STDIN);
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

/* ---- a tiny JSON scanner: only to find the top-level "ipam" object's "agent" string ---------- */

struct scan { const char *p, *end; int depth; };

static void ws(struct scan *s) { while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) s->p++; }

/* Skips a string; returns its raw (still escaped) bounds. 0 on error. */
static int skip_string(struct scan *s, const char **start, size_t *len) {
  if (s->p >= s->end || *s->p != '"') return 0;
  const char *b = ++s->p;
  while (s->p < s->end && *s->p != '"') {
    if (*s->p == '\\') s->p++;
    s->p++;
  }
  if (s->p >= s->end) return 0;
  if (start) *start = b;
  if (len) *len = (size_t)(s->p - b);
  s->p++;
  return 1;
}

static int skip_value(struct scan *s) {
  ws(s);
  if (s->p >= s->end) return 0;
  char c = *s->p;
  if (c == '"') return skip_string(s, NULL, NULL);
  if (c == '{' || c == '[') {
    if (++s->depth > 64) return 0;
    char close = c == '{' ? '}' : ']';
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == close) { s->p++; s->depth--; return 1; }
    for (;;) {
      if (c == '{') {
        ws(s);
        if (!skip_string(s, NULL, NULL)) return 0;
        ws(s);
        if (s->p >= s->end || *s->p++ != ':') return 0;
      }
      if (!skip_value(s)) return 0;
      ws(s);
      if (s->p >= s->end) return 0;
      if (*s->p == ',') { s->p++; continue; }
      if (*s->p == close) { s->p++; s->depth--; return 1; }
      return 0;
    }
  }
  while (s->p < s->end && !strchr(",}] \t\r\n", *s->p)) s->p++; /* number, true, false, null */
  return 1;
}

/* Iterates an object's members: calls fn(key, keylen, scan at value); fn must consume the value. */
static int each_member(struct scan *s, int (*fn)(const char *, size_t, struct scan *, void *), void *ctx) {
  ws(s);
  if (s->p >= s->end || *s->p != '{') return 0;
  s->p++;
  ws(s);
  if (s->p < s->end && *s->p == '}') { s->p++; return 1; }
  for (;;) {
    const char *k;
    size_t kl;
    ws(s);
    if (!skip_string(s, &k, &kl)) return 0;
    ws(s);
    if (s->p >= s->end || *s->p++ != ':') return 0;
    ws(s);
    if (!fn(k, kl, s, ctx)) return 0;
    ws(s);
    if (s->p >= s->end) return 0;
    if (*s->p == ',') { s->p++; continue; }
    if (*s->p == '}') { s->p++; return 1; }
    return 0;
  }
}

static int key_is(const char *k, size_t kl, const char *want) {
  return strlen(want) == kl && strncasecmp(k, want, kl) == 0;
}

/* have: 0 no ipam.agent, 1 usable path, 2 present but unusable (escaped, too long, not absolute). */
struct found { char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 64]; int have; };

static int agent_member(const char *k, size_t kl, struct scan *s, void *ctx) {
  struct found *f = ctx;
  if (key_is(k, kl, "agent") && s->p < s->end && *s->p == '"') {
    const char *v;
    size_t vl;
    if (!skip_string(s, &v, &vl)) return 0;
    /* The last occurrence wins, as Go's encoding/json decodes duplicate keys. */
    if (memchr(v, '\\', vl) == NULL && vl < sizeof f->path && vl > 0 && v[0] == '/') {
      memcpy(f->path, v, vl);
      f->path[vl] = 0;
      f->have = 1;
    } else {
      f->have = 2;
    }
    return 1;
  }
  return skip_value(s);
}

static int top_member(const char *k, size_t kl, struct scan *s, void *ctx) {
  if (key_is(k, kl, "ipam") && s->p < s->end && *s->p == '{') {
    ((struct found *)ctx)->have = 0; /* a later "ipam" replaces an earlier one */
    return each_member(s, agent_member, ctx);
  }
  return skip_value(s);
}

/* The socket path: ipam.agent, else $PODIPAM_AGENT_SOCKET, else the default. */
static const char *socket_path(const char *in, size_t len, struct found *f) {
  struct scan s = {in, in + len, 0};
  f->have = 0;
  each_member(&s, top_member, f); /* invalid JSON: the agent (or plugin) reports it */
  if (f->have == 2) cni_fail(7, "ipam.agent: must be the absolute path of the agent's unix socket, without escapes, shorter than %zu bytes", sizeof(((struct sockaddr_un *)0)->sun_path));
  if (f->have == 1) return f->path;
  const char *e = getenv("PODIPAM_AGENT_SOCKET");
  return e && *e ? e : DEFAULT_SOCKET;
}

/*
 * Is the agent's answer a CNI answer to `cmd`? The rule of src/wire/cni-answer-problem.ts
 * (bin/podipam applies it too): exit status 0 to ADD is one JSON object with a string
 * "cniVersion"; status 0 to another verb is empty; any other status is one JSON object with a
 * numeric "code". Keys case-insensitive; JSON checked by the scanner above (structure, strings).
 * One pass over a few hundred bytes: nothing measurable on the pod start.
 */
struct answer_keys { int version, code; };

static int answer_member(const char *k, size_t kl, struct scan *s, void *ctx) {
  struct answer_keys *a = ctx;
  if (s->p < s->end && key_is(k, kl, "cniVersion")) a->version = *s->p == '"';
  if (s->p < s->end && key_is(k, kl, "code")) a->code = (*s->p >= '0' && *s->p <= '9') || *s->p == '-';
  return skip_value(s);
}

static const char *valid_answer(const char *cmd, int status, const char *body, size_t len) {
  struct scan s = {body, body + len, 0};
  if (status == 0 && strcmp(cmd, "ADD") != 0) {
    ws(&s);
    return s.p == s.end ? NULL : "bytes to a verb that prints nothing: not a CNI result";
  }
  struct answer_keys a = {0, 0};
  int ok = each_member(&s, answer_member, &a);
  ws(&s);
  ok = ok && s.p == s.end;
  if (status == 0) return ok && a.version ? NULL : "bytes that are not a CNI result (a JSON object naming its cniVersion)";
  return ok && a.code ? NULL : "bytes with a failure status that are not a CNI error (a JSON object with a numeric code)";
}

/* ---- standalone fallback: the TypeScript plugin, same env, same stdin ----------------------- */

static const char *fallback_plugin(void) {
  const char *p = getenv("PODIPAM_PLUGIN");
  if (p) return *p ? p : NULL; /* set but empty: fallback disabled */
  return PODIPAM_DEFAULT_PLUGIN[0] ? PODIPAM_DEFAULT_PLUGIN : NULL;
}

static void run_fallback(const char *plugin, const char *in, size_t len, const char *sock, const char *why) {
  if (access(plugin, X_OK) != 0) return;
  int fd = memfd_create("podipam-stdin", MFD_CLOEXEC);
  if (fd < 0) return;
  write_all(fd, in, len);
  if (lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) < 0) return;
  setenv("PODIPAM_SHIM_FALLBACK", "1", 1); /* the plugin knows the agent is not there */
  char *argv[] = {(char *)plugin, NULL};
  execv(plugin, argv);
  (void)sock; (void)why; /* exec failed: the caller answers code 11 */
}

/* ---- the call ----------------------------------------------------------------------------- */

static void put32(unsigned char *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static uint32_t get32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static int forwarded(const char *kv) {
  return strncmp(kv, "CNI_", 4) == 0 || strncmp(kv, "PODIPAM_", 8) == 0 || strncmp(kv, "NODENAME=", 9) == 0 ||
         strncmp(kv, "NODE_NAME=", 10) == 0;
}

static unsigned char *build_request(const char *in, size_t len, size_t *out_len) {
  size_t body = 4 + 4 + len;
  uint32_t n = 0;
  for (char **e = environ; *e; e++) if (forwarded(*e)) { body += 4 + strlen(*e); n++; }
  unsigned char *req = malloc(16 + body);
  if (!req) cni_fail(5, "out of memory");
  put32(req, MAGIC); put32(req + 4, 1); put32(req + 8, KIND_CNI); put32(req + 12, (uint32_t)body);
  unsigned char *p = req + 16;
  put32(p, n); p += 4;
  for (char **e = environ; *e; e++) {
    if (!forwarded(*e)) continue;
    size_t l = strlen(*e);
    put32(p, (uint32_t)l); memcpy(p + 4, *e, l); p += 4 + l;
  }
  put32(p, (uint32_t)len); memcpy(p + 4, in, len);
  *out_len = 16 + body;
  return req;
}

/* Waits for `events` on fd until the deadline; 0 on timeout. */
static int wait_fd(int fd, short events, long long deadline) {
  for (;;) {
    long long left = deadline - now_ms();
    if (left <= 0) return 0;
    struct pollfd p = {fd, events, 0};
    int r = poll(&p, 1, (int)(left > 60000 ? 60000 : left));
    if (r > 0) return 1;
    if (r < 0 && errno != EINTR) return 0;
  }
}

int main(void) {
  double t_main = now_us(), t_connected = 0, t_sent = 0, t_answered = 0;
  const char *cmd = getenv("CNI_COMMAND");
  if (cmd && strcmp(cmd, "VERSION") == 0) {
    write_all(1, SHIM_VERSION_ANSWER, strlen(SHIM_VERSION_ANSWER));
    return 0;
  }
  size_t len;
  char *in = read_stdin(&len);
  struct found f;
  const char *sock = socket_path(in, len, &f);
  long connect_ms = env_ms("PODIPAM_SHIM_CONNECT_TIMEOUT_MS", 2000);
  long answer_ms = env_ms("PODIPAM_SHIM_TIMEOUT_MS", 60000);

  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(sock) >= sizeof addr.sun_path) cni_fail(7, "agent socket path \"%s\" is longer than %zu bytes", sock, sizeof addr.sun_path - 1);
  strcpy(addr.sun_path, sock);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) cni_fail(11, "podipam agent at %s: socket: %s", sock, strerror(errno));
  long long deadline = now_ms() + connect_ms;
  int rc = connect(fd, (struct sockaddr *)&addr, sizeof addr);
  if (rc != 0 && errno == EAGAIN) { /* backlog full: wait, bounded */
    while (rc != 0 && errno == EAGAIN && now_ms() < deadline) {
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL); /* interrupted or not: try again until the deadline */
      rc = connect(fd, (struct sockaddr *)&addr, sizeof addr);
    }
  }
  if (rc != 0 && errno == EINPROGRESS) {
    int err = ETIMEDOUT;
    socklen_t el = sizeof err;
    if (wait_fd(fd, POLLOUT, deadline)) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
    rc = err ? -1 : 0;
    errno = err;
  }
  if (rc != 0) {
    int err = errno;
    const char *plugin = fallback_plugin();
    if (plugin && (err == ENOENT || err == ECONNREFUSED || err == ENOTSOCK)) {
      run_fallback(plugin, in, len, sock, strerror(err));
    }
    if (err == EACCES || err == EPERM) /* the socket's mode: permanent, so not 11 (as bin/podipam) */
      cni_fail(5, "podipam agent at %s: permission denied connecting as uid %u: the socket admits root and the agent's uid "
               "(run the caller as root, or run the agent as uid %u)", sock, geteuid(), geteuid());
    cni_fail(11, "no podipam agent answering at %s: %s%s", sock, strerror(err),
             plugin ? "" : " (and no standalone plugin: $PODIPAM_PLUGIN is empty)");
  }
  t_connected = now_us();
  /* The agent must be root or our own uid: anyone else could answer with addresses of their choosing. */
  struct ucred cred;
  socklen_t cl = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0) cni_fail(11, "podipam agent at %s: SO_PEERCRED: %s", sock, strerror(errno));
  if (cred.uid != 0 && cred.uid != geteuid()) cni_fail(11, "podipam agent at %s runs as uid %u, not root or uid %u: refused", sock, cred.uid, geteuid());

  size_t rl;
  unsigned char *req = build_request(in, len, &rl);
  deadline = now_ms() + answer_ms;
  for (size_t off = 0; off < rl;) {
    ssize_t w = send(fd, req + off, rl - off, MSG_NOSIGNAL);
    if (w > 0) { off += (size_t)w; continue; }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN && wait_fd(fd, POLLOUT, deadline)) continue;
    cni_fail(11, "podipam agent at %s: sending the request: %s", sock, w < 0 && errno != EAGAIN ? strerror(errno) : "timed out");
  }
  t_sent = now_us();
  unsigned char head[16];
  unsigned char *body = NULL;
  size_t have = 0, need = sizeof head;
  uint32_t blen = 0;
  while (have < need) {
    unsigned char *dst = have < sizeof head ? head + have : body + (have - sizeof head);
    size_t room = have < sizeof head ? sizeof head - have : need - have;
    ssize_t r = recv(fd, dst, room, 0);
    if (r > 0) {
      have += (size_t)r;
      if (have == sizeof head && !body) {
        if (get32(head) != MAGIC || get32(head + 4) != 1) cni_fail(11, "podipam agent at %s answered garbage (not protocol version 1)", sock);
        blen = get32(head + 12);
        if (blen > MAX_ANSWER) cni_fail(11, "podipam agent at %s answered %u bytes, more than the limit of %d", sock, blen, MAX_ANSWER);
        body = malloc(blen + 1);
        if (!body) cni_fail(5, "out of memory");
        need = sizeof head + blen;
      }
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EAGAIN) {
      if (wait_fd(fd, POLLIN, deadline)) continue;
      cni_fail(11, "podipam agent at %s did not answer within %ld ms", sock, answer_ms);
    }
    cni_fail(11, "podipam agent at %s closed the connection %s", sock, have == 0 ? "without answering" : "mid-answer");
  }
  t_answered = now_us();
  if (!body) body = malloc(1);
  /* Anything after the answer is garbage too (an agent speaking another protocol). */
  char extra;
  if (recv(fd, &extra, 1, MSG_DONTWAIT) > 0) cni_fail(11, "podipam agent at %s answered garbage (bytes after the answer)", sock);
  int status = (int)(get32(head + 8) & 0xff);
  const char *bad = valid_answer(cmd ? cmd : "", status, (const char *)body, blen);
  if (bad) cni_fail(11, "podipam agent at %s answered %u %s", sock, blen, bad);
  write_all(1, (const char *)body, blen);
  if (status != 0) {
    body[blen] = 0;
    const char *c = strstr((const char *)body, "\"code\":");
    log_failure(c ? atoi(c + 7) : 0, (const char *)body);
  }
  const char *trace = getenv("PODIPAM_SHIM_TRACE");
  if (trace && strcmp(trace, "1") == 0 && status == 0) {
    char line[160];
    int n = snprintf(line, sizeof line, "podipam-shim-trace %.1f %.1f %.1f %.1f %.1f\n", t_main, t_connected, t_sent, t_answered, now_us());
    if (n > 0) write_all(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  }
  return status;
}
