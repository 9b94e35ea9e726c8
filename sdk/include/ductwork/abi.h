/*
 * ductwork/abi.h — the binary boundary between the Ductwork host and a step
 * plugin. Plain C so that any compiler (and any C++ standard library) on
 * either side can meet here.
 *
 * Rules of the boundary:
 *   - Only C types, UTF-8 strings and JSON text cross it. Never STL types,
 *     never exceptions.
 *   - The side that allocates a string frees it: strings the plugin returns
 *     are released with the plugin's `free_string`, strings the host returns
 *     with the host's `free_string`.
 *   - Structs are versioned and append-only: every struct here starts with
 *     `struct_size` so a reader can tell whether a field appended later is
 *     present. The side that allocates a struct sets it; the other side
 *     reads (or writes) only the fields that fit within it.
 *   - docs/abi.md states what a host release may change and how long an ABI
 *     version stays loadable; tests/fixtures/abi/v1/ keeps the first ABI-1
 *     headers, and every host must load and run a plugin built from them.
 *
 * Loading sequence (the host's side):
 *   1. resolve `ductwork_plugin_abi_version` and call it. A plugin built
 *      against an ABI version the host does not support is refused before any
 *      other plugin code runs (compare PostgreSQL's PG_MODULE_MAGIC).
 *   2. resolve and call `ductwork_plugin_init(host)`; it returns the plugin's
 *      table, valid until the library is unloaded.
 */
#ifndef DUCTWORK_ABI_H
#define DUCTWORK_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. Bumped only for incompatible
 * changes; appending a field to a struct is compatible. */
#define DUCTWORK_ABI_VERSION 1u

#define DUCTWORK_ABI_VERSION_SYMBOL "ductwork_plugin_abi_version"
#define DUCTWORK_INIT_SYMBOL "ductwork_plugin_init"
/* Optional (a plugin built with an older SDK lacks it): after init returned
 * NULL, says why in one line of text owned by the plugin, or NULL. */
#define DUCTWORK_INIT_ERROR_SYMBOL "ductwork_plugin_init_error"

/* Log levels accepted by dw_host_api.log. */
enum dw_log_level { DW_LOG_DEBUG = 0, DW_LOG_INFO = 1, DW_LOG_WARN = 2, DW_LOG_ERROR = 3 };

/* Return codes of the host's run-context functions. */
enum dw_context_rc {
  DW_CONTEXT_OK = 0,
  DW_CONTEXT_NOT_FOUND = 1,   /* context_get: no such key */
  DW_CONTEXT_ALREADY_SET = 2, /* context_set without overwrite on an existing key */
  DW_CONTEXT_ERROR = -1       /* anything else; *error_out says what */
};

/* Functions the host offers a running step. Every function takes the
 * `host_handle` of the dw_step_context it was called for. Strings written to
 * an out-parameter are allocated by the host and released with free_string. */
typedef struct dw_host_api {
  uint32_t struct_size;
  uint32_t abi_version;
  /* Non-zero once the host asks the step to stop early (shutdown). */
  int (*is_cancelled)(void* host_handle);
  /* Writes one log line attributed to the running step. */
  void (*log)(void* host_handle, int level, const char* message);
  /* Run context (the run-scoped key/value store). Values are JSON text. */
  int (*context_get)(void* host_handle, const char* key, char** value_json_out, char** error_out);
  int (*context_set)(void* host_handle, const char* key, const char* value_json, int overwrite,
                     char** error_out);
  void (*free_string)(char* s);
  /* Appended in ABI 1 (check struct_size before calling): flags describing
   * the error the current execute call is about to return, DW_ERROR_* bits.
   * A host without this field treats every error as retryable. */
  void (*set_error_flags)(void* host_handle, uint32_t flags);
} dw_host_api;

/* Bits of dw_host_api.set_error_flags. */
/* The error is permanent: the host fails the step at once, without spending
 * (or waiting for) the remaining retries. */
#define DW_ERROR_NOT_RETRYABLE 1u

/* What the host passes to one call of execute. Valid only during the call. */
typedef struct dw_step_context {
  uint32_t struct_size;
  const char* args_json;       /* JSON array: the job's arguments */
  const char* run_id;
  const char* idempotency_key; /* stable across retries, crashes and revives of the step (docs/step-authors.md) */
  const char* pipeline;        /* pipeline name */
  const char* step_name;       /* the step class being executed */
  int64_t retry_count;         /* of the current execution */
  int64_t crash_count;         /* of the current execution */
  const dw_host_api* host;
  void* host_handle;
} dw_step_context;

/* What execute2 (and a hook) hands back. The host allocates it, zeroed,
 * with `struct_size` set to the size it knows; the plugin writes only the
 * fields that fit within that size. Every string is allocated by the plugin
 * and released by the host through dw_plugin.free_string. On success
 * `output_json` holds the return value as JSON text; on error the error_*
 * fields describe it (any may be NULL). */
typedef struct dw_outcome {
  uint32_t struct_size;
  /* DW_ERROR_* bits describing the error (0: an ordinary, retryable one). */
  uint32_t error_flags;
  char* output_json;
  char* error_klass;
  char* error_message;
  char* error_backtrace; /* newline-separated frames, nearest the raise first */
} dw_outcome;

/* The outcome of ABI 1's first entry point, `execute`: four string slots
 * the plugin fills, in this order. Its layout is frozen (it has no
 * struct_size and never grows); execute2 and dw_outcome replace it. A host
 * calls `execute` only for a plugin without execute2. */
enum dw_outcome_v1_slot {
  DW_V1_OUTPUT_JSON = 0,
  DW_V1_ERROR_KLASS = 1,
  DW_V1_ERROR_MESSAGE = 2,
  DW_V1_ERROR_BACKTRACE = 3,
  DW_V1_OUTCOME_SLOTS = 4
};

/* Return codes of dw_step_class.execute, execute2 and dw_hook.run. */
enum dw_execute_rc { DW_EXECUTE_OK = 0, DW_EXECUTE_ERROR = 1 };

/* One step class. `create` builds an instance for one execution, `execute2`
 * (or, without it, `execute`) runs it, `destroy` releases it. */
typedef struct dw_step_class {
  uint32_t struct_size;
  const char* name;
  void* (*create)(void);
  /* ABI 1's first entry: fills outcome_v1[0..3] (dw_outcome_v1_slot). */
  int (*execute)(void* instance, const dw_step_context* ctx, char** outcome_v1);
  void (*destroy)(void* instance);
  /* Appended in ABI 1 (check struct_size; may be NULL): preferred over
   * execute when present. */
  int (*execute2)(void* instance, const dw_step_context* ctx, dw_outcome* out);
} dw_step_class;

/* Lifecycle hooks (SPEC §15): which moment of which process a hook runs at. */
enum dw_hook_event {
  DW_ON_SUPERVISOR_START = 1,
  DW_ON_SUPERVISOR_STOP = 2,
  DW_ON_ADVANCER_START = 3,
  DW_ON_ADVANCER_STOP = 4,
  DW_ON_WORKER_START = 5,
  DW_ON_WORKER_STOP = 6
};

/* What the host passes to one call of a hook. Valid only during the call.
 * Logging goes through host->log(host_handle, ...); the run-context
 * functions fail (a hook belongs to no run) and is_cancelled is non-zero
 * once the hook's time (supervisor.shutdown_timeout) is up. */
typedef struct dw_process_info {
  uint32_t struct_size;
  const char* role;                  /* "supervisor", "advancer" or "worker" */
  int64_t pid;                       /* the process whose start or stop this is */
  size_t pipeline_count;             /* the pipelines that process serves */
  const char* const* pipelines;
  const dw_host_api* host;
  void* host_handle;
} dw_process_info;

/* One lifecycle hook. `run` returns DW_EXECUTE_OK, or an error described
 * in `out` (the error_* fields, as for execute2). */
typedef struct dw_hook {
  uint32_t struct_size;
  uint32_t event;   /* dw_hook_event; a host skips events it does not know */
  const char* name; /* what the hook is called, for logs and `ductwork plugins` */
  int (*run)(const dw_process_info* info, dw_outcome* out);
} dw_hook;

/* The plugin's table, returned by ductwork_plugin_init. */
typedef struct dw_plugin {
  uint32_t struct_size;
  uint32_t abi_version;
  const char* name;
  const char* version;
  size_t step_count;
  const dw_step_class* const* steps;
  /* Pipelines the plugin defines, each as canonical definition JSON with a
   * top-level "pipeline" name (may be 0 / NULL). */
  size_t pipeline_count;
  const char* const* pipelines_json;
  void (*free_string)(char* s);
  /* Appended in ABI 1 (check struct_size): the plugin's lifecycle hooks,
   * in the order they run within one event. */
  size_t hook_count;
  const dw_hook* const* hooks;
} dw_plugin;

typedef uint32_t (*dw_abi_version_fn)(void);
typedef const dw_plugin* (*dw_init_fn)(const dw_host_api* host);
typedef const char* (*dw_init_error_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* DUCTWORK_ABI_H */
