/* flock(2) for Node: the advisory lock the reference host-local plugin takes on
 * <dataDir>/<net>/lock, so podipam and host-local exclude each other and the kernel drops
 * the lock when a process dies (kill -9 can never leave it held). */
#include <node_api.h>
#include <sys/file.h>
#include <errno.h>
#include <string.h>

static napi_value throw_errno(napi_env env, int err) {
  napi_value code, msg, error, num;
  napi_create_string_utf8(env, err == EWOULDBLOCK ? "EWOULDBLOCK" : "EFLOCK", NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, strerror(err), NAPI_AUTO_LENGTH, &msg);
  napi_create_error(env, code, msg, &error);
  napi_create_int32(env, err, &num);
  napi_set_named_property(env, error, "errno", num);
  napi_throw(env, error);
  return NULL;
}

/* flock(fd, op) -> undefined; op is a LOCK_* combination. Throws with .errno on failure. */
static napi_value Flock(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t fd, op;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2 || napi_get_value_int32(env, argv[0], &fd) != napi_ok ||
      napi_get_value_int32(env, argv[1], &op) != napi_ok) {
    napi_throw_type_error(env, NULL, "flock(fd, op) expects two integers");
    return NULL;
  }
  int rc;
  do { rc = flock(fd, op); } while (rc != 0 && errno == EINTR);
  if (rc != 0) return throw_errno(env, errno);
  return NULL;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn, v;
  napi_create_function(env, "flock", NAPI_AUTO_LENGTH, Flock, NULL, &fn);
  napi_set_named_property(env, exports, "flock", fn);
  napi_create_int32(env, LOCK_SH, &v); napi_set_named_property(env, exports, "LOCK_SH", v);
  napi_create_int32(env, LOCK_EX, &v); napi_set_named_property(env, exports, "LOCK_EX", v);
  napi_create_int32(env, LOCK_NB, &v); napi_set_named_property(env, exports, "LOCK_NB", v);
  napi_create_int32(env, LOCK_UN, &v); napi_set_named_property(env, exports, "LOCK_UN", v);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
