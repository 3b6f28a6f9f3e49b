/* SO_PEERCRED for Node: the uid, gid and pid of the process at the other end of a unix socket,
 * so `podipam agent` can refuse callers other than root (or the uid it was told to serve).
 * Node exposes no peer credentials; this is the whole addon. */
#define _GNU_SOURCE
#include <node_api.h>
#include <sys/socket.h>
#include <errno.h>
#include <string.h>

/* peercred(fd) -> {pid, uid, gid}; throws with the errno text on failure. */
static napi_value PeerCred(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t fd;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok) {
    napi_throw_type_error(env, NULL, "peercred(fd) expects a file descriptor");
    return NULL;
  }
  struct ucred c;
  socklen_t len = sizeof c;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0) {
    napi_throw_error(env, "EPEERCRED", strerror(errno));
    return NULL;
  }
  napi_value out, v;
  napi_create_object(env, &out);
  napi_create_int32(env, c.pid, &v); napi_set_named_property(env, out, "pid", v);
  napi_create_uint32(env, c.uid, &v); napi_set_named_property(env, out, "uid", v);
  napi_create_uint32(env, c.gid, &v); napi_set_named_property(env, out, "gid", v);
  return out;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "peercred", NAPI_AUTO_LENGTH, PeerCred, NULL, &fn);
  napi_set_named_property(env, exports, "peercred", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
