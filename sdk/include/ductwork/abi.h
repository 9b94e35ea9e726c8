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
 *   - Structs are versioned and append-only: each starts with `struct_size`
 *     so a reader can tell whether a field appended later is present.
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

/* What execute hands back. Every string is allocated by the plugin and
 * released by the host through dw_plugin.free_string. On success
 * `output_json` holds the return value as JSON text; on error the error_*
 * fields describe it (any may be NULL). */
typedef struct dw_step_outcome {
  char* output_json;
  char* error_klass;
  char* error_message;
  char* error_backtrace; /* newline-separated frames, nearest the raise first */
} dw_step_outcome;

/* Return codes of dw_step_class.execute. */
enum dw_execute_rc { DW_EXECUTE_OK = 0, DW_EXECUTE_ERROR = 1 };

/* One step class. `create` builds an instance for one execution, `execute`
 * runs it, `destroy` releases it. */
typedef struct dw_step_class {
  uint32_t struct_size;
  const char* name;
  void* (*create)(void);
  int (*execute)(void* instance, const dw_step_context* ctx, dw_step_outcome* out);
  void (*destroy)(void* instance);
} dw_step_class;

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
} dw_plugin;

typedef uint32_t (*dw_abi_version_fn)(void);
typedef const dw_plugin* (*dw_init_fn)(const dw_host_api* host);
typedef const char* (*dw_init_error_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* DUCTWORK_ABI_H */
