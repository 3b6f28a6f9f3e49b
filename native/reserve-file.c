/* reserve(tmp, file, content, last, lastContent) for Node: the local back end's whole
 * reservation write in one call (src/local/native-reserve.ts), the same steps, in the same
 * order and with the same rules as DiskStore's node:fs writer (src/local/disk-store.ts):
 *
 *   1. `content` into the fresh temporary file `tmp` (O_EXCL, never through a link; a leftover
 *      of a killed writer is removed once and the create tried again);
 *   2. hard-linked to the address's name `file` (link(2) fails if it exists, like O_EXCL), the
 *      temporary file removed either way;
 *   3. `lastContent` over `last` (last_reserved_ip.N) in place — opened without following a
 *      link or blocking on a FIFO, regular files only, the old content cut where longer; if
 *      that fails the address file of step 2 is removed again.
 *
 * Ten node:fs calls cost ~0.2 ms in an agent between pod starts, this ~0.09 ms: the call's
 * largest part. Returns 0 (reserved), 1 (`file` exists: taken), 2 (this file system has no
 * hard links) or 3 (a string of 4 KiB or more in UTF-8) — for both nothing is written and the
 * caller writes with node:fs —, or a failure {action, syscall, errno, path, dest?} (`path` the
 * file the action was on; a syscall on a descriptor — write, fstat, ftruncate, close — names no
 * path in node:fs's message) / {action, path, kind} (`last` is not a regular file), after which
 * nothing of this call is left on disk. */
#define _GNU_SOURCE
#include <node_api.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "file-kind.h"

#define MAX_PATH 4096
#define MAX_CONTENT 4096

static void set_str(napi_env env, napi_value o, const char *key, const char *s) {
  napi_value v;
  napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, o, key, v);
}

/* A failure of `syscall` on `path` (and `dest`, for link) while doing `action`. */
static napi_value failed(napi_env env, const char *action, const char *syscall, int err, const char *path, const char *dest) {
  napi_value o, num;
  napi_create_object(env, &o);
  set_str(env, o, "action", action);
  set_str(env, o, "syscall", syscall);
  napi_create_int32(env, err, &num);
  napi_set_named_property(env, o, "errno", num);
  set_str(env, o, "path", path);
  if (dest) set_str(env, o, "dest", dest);
  return o;
}

/* `path` is not a regular file: what it is, as native/read-files.c names kinds. */
static napi_value refused(napi_env env, const char *path, const char *kind) {
  napi_value o;
  napi_create_object(env, &o);
  set_str(env, o, "action", "open");
  set_str(env, o, "path", path);
  set_str(env, o, "kind", kind);
  return o;
}

static napi_value number(napi_env env, int n) {
  napi_value v;
  napi_create_int32(env, n, &v);
  return v;
}

/* Writes all of buf; 0, or -1 with errno set. */
static int write_all(int fd, const char *buf, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    buf += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Copies the string v into buf; false when it does not fit whole (its UTF-8 length asked
 * first: a copy into a buffer too small stops before a character cut in two, shorter than cap). */
static bool arg_string(napi_env env, napi_value v, char *buf, size_t cap, size_t *len) {
  size_t need;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &need) != napi_ok || need >= cap) return false;
  return napi_get_value_string_utf8(env, v, buf, cap, len) == napi_ok && *len == need;
}

static napi_value Reserve(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  char tmp[MAX_PATH], file[MAX_PATH], last[MAX_PATH], content[MAX_CONTENT], last_content[MAX_CONTENT];
  size_t tl, fl, ll, cl, lcl;
  napi_valuetype t = napi_undefined;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  for (size_t i = 0; i < 5; i++) {
    if (i >= argc || napi_typeof(env, argv[i], &t) != napi_ok || t != napi_string) {
      napi_throw_type_error(env, NULL, "reserve(tmp, file, content, last, lastContent) expects five strings");
      return NULL;
    }
  }
  if (!arg_string(env, argv[0], tmp, sizeof tmp, &tl) || !arg_string(env, argv[1], file, sizeof file, &fl) ||
      !arg_string(env, argv[2], content, sizeof content, &cl) || !arg_string(env, argv[3], last, sizeof last, &ll) ||
      !arg_string(env, argv[4], last_content, sizeof last_content, &lcl))
    return number(env, 3); /* longer than these buffers: nothing written, the caller writes with node:fs */
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = open(tmp, flags, 0644);
  if (fd < 0 && errno == EEXIST) { /* a leftover of a killed writer (the locked scan removes those too): once */
    unlink(tmp);
    fd = open(tmp, flags, 0644);
  }
  if (fd < 0) return failed(env, "create", "open", errno, tmp, NULL);
  if (write_all(fd, content, cl) != 0) {
    int e = errno;
    close(fd);
    unlink(tmp);
    return failed(env, "write", "write", e, tmp, NULL);
  }
  if (close(fd) != 0) {
    int e = errno;
    unlink(tmp);
    return failed(env, "write", "close", e, tmp, NULL);
  }
  int linked = link(tmp, file);
  int link_errno = errno;
  unlink(tmp);
  if (linked != 0) {
    if (link_errno == EEXIST) return number(env, 1);
    if (link_errno == EPERM || link_errno == ENOTSUP || link_errno == EOPNOTSUPP) return number(env, 2);
    return failed(env, "link", "link", link_errno, tmp, file);
  }

  /* No O_TRUNC: nothing is changed before the file is known to be regular; overwritten in
   * place, then cut (truncating first makes ext4 flush the file on close). */
  int lfd = open(last, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (lfd < 0) {
    int e = errno;
    unlink(file);
    if (e == ELOOP) return refused(env, last, "symlink");
    if (e == ENXIO || e == ENODEV) return refused(env, last, "fifo-or-device");
    if (e == EISDIR) return refused(env, last, "directory");
    return failed(env, "open", "open", e, last, NULL);
  }
  struct stat st;
  if (fstat(lfd, &st) != 0) {
    int e = errno;
    close(lfd);
    unlink(file);
    return failed(env, "open", "fstat", e, last, NULL);
  }
  if (!S_ISREG(st.st_mode)) {
    close(lfd);
    unlink(file);
    return refused(env, last, kind_of_mode(st.st_mode));
  }
  const char *step = "write";
  int bad = write_all(lfd, last_content, lcl);
  if (bad == 0 && st.st_size > (off_t)lcl) {
    step = "ftruncate";
    bad = ftruncate(lfd, (off_t)lcl);
  }
  int e = errno;
  if (close(lfd) != 0 && bad == 0) {
    bad = -1;
    e = errno;
    step = "close";
  }
  if (bad != 0) {
    unlink(file);
    return failed(env, "write", step, e, last, NULL);
  }
  return number(env, 0);
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "reserve", NAPI_AUTO_LENGTH, Reserve, NULL, &fn);
  napi_set_named_property(env, exports, "reserve", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
