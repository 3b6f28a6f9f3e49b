/* Real-time scheduling for the node agent (`podipam agent --realtime-priority N`).
 *
 * A pod start waits on the agent's answer while the runtime, runc and the pod's own processes
 * compete for the node's cores; at an ordinary priority the agent's ~1 ms of work waits tens of
 * milliseconds for a CPU. SCHED_RR at a low real-time priority lets a waking agent run at once.
 * Node has no API for it (os.setPriority is the nice value only), hence this addon.
 *
 * setRealtime(priority): every thread of this process (each /proc/self/task entry: the main
 * thread, V8's and libuv's workers) to SCHED_RR at `priority`, with SCHED_RESET_ON_FORK so a
 * child process the agent spawns — and a thread made later, which the kernel treats alike —
 * starts as an ordinary task. Returns the number of threads changed; throws an Error
 * with .code "ESCHED" and .errno (EPERM without CAP_SYS_NICE or an RLIMIT_RTPRIO allowance,
 * EINVAL for a priority out of range) on the first thread that refuses.
 * policy(): [policy, priority] of the calling thread (SCHED_OTHER 0, SCHED_RR 2, …). */
#define _GNU_SOURCE
#include <node_api.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif

static napi_value throw_errno(napi_env env, int err) {
  napi_value code, msg, error, num;
  napi_create_string_utf8(env, "ESCHED", NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, strerror(err), NAPI_AUTO_LENGTH, &msg);
  napi_create_error(env, code, msg, &error);
  napi_create_int32(env, err, &num);
  napi_set_named_property(env, error, "errno", num);
  napi_throw(env, error);
  return NULL;
}

static napi_value SetRealtime(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t prio;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_int32(env, argv[0], &prio) != napi_ok) {
    napi_throw_type_error(env, NULL, "setRealtime(priority) expects an integer");
    return NULL;
  }
  DIR *d = opendir("/proc/self/task");
  if (d == NULL) return throw_errno(env, errno);
  struct sched_param p = { .sched_priority = prio };
  int changed = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    pid_t tid = (pid_t)atoi(e->d_name);
    if (sched_setscheduler(tid, SCHED_RR | SCHED_RESET_ON_FORK, &p) != 0) {
      /* A thread that exited since readdir listed it is not a refusal. */
      if (errno == ESRCH) continue;
      int err = errno;
      closedir(d);
      return throw_errno(env, err);
    }
    changed++;
  }
  closedir(d);
  napi_value n;
  napi_create_int32(env, changed, &n);
  return n;
}

static napi_value Policy(napi_env env, napi_callback_info info) {
  (void)info;
  struct sched_param p;
  int pol = sched_getscheduler(0);
  if (pol < 0 || sched_getparam(0, &p) != 0) return throw_errno(env, errno);
  napi_value arr, a, b;
  napi_create_array_with_length(env, 2, &arr);
  napi_create_int32(env, pol & ~SCHED_RESET_ON_FORK, &a);
  napi_create_int32(env, p.sched_priority, &b);
  napi_set_element(env, arr, 0, a);
  napi_set_element(env, arr, 1, b);
  return arr;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "setRealtime", NAPI_AUTO_LENGTH, SetRealtime, NULL, &fn);
  napi_set_named_property(env, exports, "setRealtime", fn);
  napi_create_function(env, "policy", NAPI_AUTO_LENGTH, Policy, NULL, &fn);
  napi_set_named_property(env, exports, "policy", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
