/* Thread scheduling for the node agent (src/util/thread-scheduling.ts decides, this applies).
 *
 * A pod start waits on the agent's answer while the runtime, runc and the pod's own processes
 * compete for the node's cores; at an ordinary priority the agent's ~1 ms of work waits tens of
 * milliseconds for a CPU. SCHED_RR at a low real-time priority lets a waking agent run at once;
 * V8's helper threads (compilers) at SCHED_IDLE keep compiling off the answer's path. Node has
 * no API for either (os.setPriority is the nice value only), hence this addon.
 *
 * setScheduler(tid, policy, priority): sched_setscheduler(2) on one thread of this process, with
 * SCHED_RESET_ON_FORK so a child process the agent spawns starts as an ordinary task. Threads
 * made later inherit the policy of the thread that makes them. Returns true, or false when the
 * thread exited meanwhile (ESRCH); throws an Error with .code "ESCHED" and .errno (EPERM without
 * CAP_SYS_NICE or an RLIMIT_RTPRIO allowance, EINVAL for a priority out of range) otherwise.
 * policy(): [policy, priority] of the calling thread (SCHED_OTHER 0, SCHED_RR 2, …).
 * poolThreadIds(n): a Promise of the thread ids that run libuv's work pool: n work items, each
 * records its thread's id and waits (at most 2 s) until all n have started, so each lands on a
 * thread of its own when the pool has n threads. Ids may repeat or be fewer than n when the pool
 * is smaller or busy: the caller counts the distinct ids. */
#define _GNU_SOURCE
#include <node_api.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif

#define MAX_POOL 1024 /* libuv's MAX_THREADPOOL_SIZE */

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

static napi_value SetScheduler(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  int32_t tid, policy, prio;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 3 || napi_get_value_int32(env, argv[0], &tid) != napi_ok || napi_get_value_int32(env, argv[1], &policy) != napi_ok ||
      napi_get_value_int32(env, argv[2], &prio) != napi_ok) {
    napi_throw_type_error(env, NULL, "setScheduler(tid, policy, priority) expects three integers");
    return NULL;
  }
  struct sched_param p = { .sched_priority = prio };
  napi_value ok;
  if (sched_setscheduler((pid_t)tid, policy | SCHED_RESET_ON_FORK, &p) != 0) {
    if (errno != ESRCH) return throw_errno(env, errno);
    napi_get_boolean(env, false, &ok);
    return ok;
  }
  napi_get_boolean(env, true, &ok);
  return ok;
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

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int want, started, completed, gave_up;
  pid_t tids[MAX_POOL];
  napi_deferred deferred;
  napi_async_work works[MAX_POOL];
} pool_probe;

/* On a pool thread: note this thread, then hold it until every item has started (so the next
 * item cannot run on it), or until 2 s have passed (then every later item returns at once). */
static void probe_execute(napi_env env, void *data) {
  (void)env;
  pool_probe *p = data;
  pid_t tid = (pid_t)syscall(SYS_gettid);
  pthread_mutex_lock(&p->mu);
  p->tids[p->started++] = tid;
  pthread_cond_broadcast(&p->cv);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 2;
  while (p->started < p->want && !p->gave_up) {
    if (pthread_cond_timedwait(&p->cv, &p->mu, &deadline) == ETIMEDOUT) p->gave_up = 1;
  }
  pthread_mutex_unlock(&p->mu);
}

/* On the main thread, once per item: the last one settles the promise and frees the probe. */
static void probe_complete(napi_env env, napi_status status, void *data) {
  (void)status;
  pool_probe *p = data;
  if (++p->completed < p->want) return;
  napi_value arr, v;
  napi_create_array_with_length(env, (size_t)p->started, &arr);
  for (int i = 0; i < p->started; i++) {
    napi_create_int32(env, p->tids[i], &v);
    napi_set_element(env, arr, (uint32_t)i, v);
  }
  napi_resolve_deferred(env, p->deferred, arr);
  for (int i = 0; i < p->want; i++) napi_delete_async_work(env, p->works[i]);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

static napi_value PoolThreadIds(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], promise, name;
  int32_t n;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_int32(env, argv[0], &n) != napi_ok || n < 1 || n > MAX_POOL) {
    napi_throw_range_error(env, NULL, "poolThreadIds(n) expects an integer from 1 to 1024");
    return NULL;
  }
  pool_probe *p = calloc(1, sizeof(pool_probe));
  if (p == NULL) return throw_errno(env, ENOMEM);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->want = n;
  napi_create_promise(env, &p->deferred, &promise);
  napi_create_string_utf8(env, "podipam:poolThreadIds", NAPI_AUTO_LENGTH, &name);
  for (int i = 0; i < n; i++) {
    napi_create_async_work(env, NULL, name, probe_execute, probe_complete, p, &p->works[i]);
    napi_queue_async_work(env, p->works[i]);
  }
  return promise;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "setScheduler", NAPI_AUTO_LENGTH, SetScheduler, NULL, &fn);
  napi_set_named_property(env, exports, "setScheduler", fn);
  napi_create_function(env, "policy", NAPI_AUTO_LENGTH, Policy, NULL, &fn);
  napi_set_named_property(env, exports, "policy", fn);
  napi_create_function(env, "poolThreadIds", NAPI_AUTO_LENGTH, PoolThreadIds, NULL, &fn);
  napi_set_named_property(env, exports, "poolThreadIds", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
