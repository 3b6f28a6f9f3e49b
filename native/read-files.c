/* readFiles(dir, names) for Node: the contents of many small files of one directory in one
 * call, as the local back end's locked scan needs them (every reservation file, on every ADD
 * and DEL, as host-local reads them). The same rules as src/local/regular-file.ts — never
 * through a symbolic link (O_NOFOLLOW), never blocking on a FIFO or device (O_NONBLOCK),
 * regular files only (fstat after open) — at a fraction of the cost of four Node fs calls per
 * file. For each name the result holds the content (a string), or an object {kind} for an
 * entry that is not a regular file ("symlink", "fifo-or-device", "directory", "fifo",
 * "socket", "char", "block", "other"), or null when it could not be read (gone, EACCES…). */
#define _GNU_SOURCE
#include <node_api.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "file-kind.h"

/* Largest file returned: a reservation file is a container id and an ifname. */
#define MAX_FILE (1 << 20)

static napi_value kind(napi_env env, const char *k) {
  napi_value o, v;
  napi_create_object(env, &o);
  napi_create_string_utf8(env, k, NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, o, "kind", v);
  return o;
}

/* One entry: content string, {kind}, or null. */
static napi_value read_one(napi_env env, int dirfd, const char *name) {
  napi_value out;
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) return kind(env, "symlink");
    if (errno == ENXIO || errno == ENODEV) return kind(env, "fifo-or-device");
    if (errno == EISDIR) return kind(env, "directory");
    napi_get_null(env, &out);
    return out;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    napi_get_null(env, &out);
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return kind(env, kind_of_mode(st.st_mode));
  }
  if (st.st_size > MAX_FILE) { /* no reservation file is this big: unreadable, never read whole */
    close(fd);
    napi_get_null(env, &out);
    return out;
  }
  size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 256, have = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) break;
    if (have == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) { free(buf); buf = NULL; break; }
      buf = nb;
    }
    ssize_t r = read(fd, buf + have, cap - have);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) { free(buf); buf = NULL; break; }
    if (r == 0) break;
    have += (size_t)r;
    if (have > MAX_FILE) { free(buf); buf = NULL; break; } /* grew while read */
  }
  close(fd);
  if (!buf) {
    napi_get_null(env, &out);
    return out;
  }
  napi_create_string_utf8(env, buf, have, &out); /* invalid UTF-8 becomes U+FFFD, as Buffer.toString does */
  free(buf);
  return out;
}

static napi_value ReadFiles(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  char dir[4096];
  size_t dl;
  uint32_t n;
  bool is_array = false;
  if (argc < 2 || napi_get_value_string_utf8(env, argv[0], dir, sizeof dir, &dl) != napi_ok || dl >= sizeof dir - 1 ||
      napi_is_array(env, argv[1], &is_array) != napi_ok || !is_array || napi_get_array_length(env, argv[1], &n) != napi_ok) {
    napi_throw_type_error(env, NULL, "readFiles(dir, names) expects a directory path and an array of names");
    return NULL;
  }
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    napi_throw_error(env, "EREADDIR", strerror(errno));
    return NULL;
  }
  napi_value result;
  napi_create_array_with_length(env, n, &result);
  for (uint32_t i = 0; i < n; i++) {
    napi_value item, v;
    char name[1024];
    size_t nl;
    napi_get_element(env, argv[1], i, &item);
    if (napi_get_value_string_utf8(env, item, name, sizeof name, &nl) != napi_ok || nl >= sizeof name - 1 || strchr(name, '/')) {
      napi_get_null(env, &v);
    } else {
      v = read_one(env, dirfd, name);
    }
    napi_set_element(env, result, i, v);
  }
  close(dirfd);
  return result;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "readFiles", NAPI_AUTO_LENGTH, ReadFiles, NULL, &fn);
  napi_set_named_property(env, exports, "readFiles", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
