/* dirWatch for Node: which entries of one directory changed since the last look, read
 * synchronously. The agent's local back end keeps each network directory's reservation files
 * in memory and, under host-local's flock, asks this addon which names changed instead of
 * reading every file again (the locked scan is most of an ADD's cost in a burst).
 *
 * Why this is safe against other writers (host-local, the per-pod plugin): inotify queues an
 * event inside the system call that changes the directory entry or the file, before that call
 * returns. Every writer changes the directory only while it holds the flock, and releases the
 * flock after its writes returned; we read the queue after we took the flock. So every change a
 * writer made before we got the lock is in the queue when we drain it. When the queue
 * overflowed, or the directory itself was removed, renamed or unmounted, drain answers null
 * and the caller reads everything again.
 *
 *   open(dir)  -> fd        inotify instance watching dir (not following a link), non-blocking
 *   drain(fd)  -> string[] | null   names with events since the last drain (may repeat), or
 *                           null: overflow / the watch is gone (then close it and start over)
 *   close(fd)
 * Errors throw with code = the errno name's text (e.g. EMFILE when out of inotify instances). */
#define _GNU_SOURCE
#include <node_api.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define MASK (IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | \
              IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)

static napi_value throw_errno(napi_env env, const char *what) {
  char msg[PATH_MAX + 64];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
  napi_throw_error(env, errno == EMFILE ? "EMFILE" : errno == ENOSPC ? "ENOSPC" : errno == ENOENT ? "ENOENT" : "EDIRWATCH", msg);
  return NULL;
}

static int fd_arg(napi_env env, napi_callback_info info, int32_t *fd) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_int32(env, argv[0], fd) != napi_ok || *fd < 0) {
    napi_throw_type_error(env, NULL, "expects an inotify fd from open()");
    return 0;
  }
  return 1;
}

static napi_value Open(napi_env env, napi_callback_info info) {
  size_t argc = 1, dl;
  napi_value argv[1], out;
  char dir[PATH_MAX];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_string_utf8(env, argv[0], dir, sizeof dir, &dl) != napi_ok || dl >= sizeof dir - 1) {
    napi_throw_type_error(env, NULL, "open(dir) expects a directory path");
    return NULL;
  }
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return throw_errno(env, "inotify_init1");
  if (inotify_add_watch(fd, dir, MASK) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return throw_errno(env, dir);
  }
  napi_create_int32(env, fd, &out);
  return out;
}

static napi_value Drain(napi_env env, napi_callback_info info) {
  int32_t fd;
  if (!fd_arg(env, info, &fd)) return NULL;
  napi_value names, out;
  napi_create_array(env, &names);
  uint32_t n = 0;
  /* Aligned as inotify(7) asks; one event is at most sizeof(struct inotify_event) + NAME_MAX + 1. */
  char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (;;) {
    ssize_t len = read(fd, buf, sizeof buf);
    if (len < 0 && errno == EINTR) continue;
    if (len < 0 && errno == EAGAIN) break; /* queue empty: done */
    if (len <= 0) return throw_errno(env, "read inotify");
    for (char *p = buf; p < buf + len;) {
      const struct inotify_event *ev = (const struct inotify_event *)p;
      if (ev->mask & (IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) {
        napi_get_null(env, &out);
        return out; /* lost events, or not the directory we watched any more */
      }
      if (ev->len > 0 && ev->name[0] != '\0') {
        napi_value s;
        napi_create_string_utf8(env, ev->name, NAPI_AUTO_LENGTH, &s);
        napi_set_element(env, names, n++, s);
      }
      p += sizeof(struct inotify_event) + ev->len;
    }
  }
  return names;
}

static napi_value Close(napi_env env, napi_callback_info info) {
  int32_t fd;
  if (!fd_arg(env, info, &fd)) return NULL;
  close(fd);
  return NULL;
}

static napi_value Init(napi_env env, napi_value exports) {
  const struct { const char *name; napi_callback fn; } fns[] = {{"open", Open}, {"drain", Drain}, {"close", Close}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value f;
    napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f);
    napi_set_named_property(env, exports, fns[i].name, f);
  }
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
