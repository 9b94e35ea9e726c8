// ductwork/detail/macros.hpp — compiler-specific macros the SDK's headers share.
#ifndef DUCTWORK_DETAIL_MACROS_HPP
#define DUCTWORK_DETAIL_MACROS_HPP

#if defined(__GNUC__) || defined(__clang__)
// The entry points of abi.h: the only symbols a plugin exports.
#define DUCTWORK_EXPORT __attribute__((visibility("default")))
// Marks the inline functions that own per-plugin state (the registries).
// Without it, a plugin built with default visibility would share those
// function-local statics with every other such plugin in the process (GCC
// makes them STB_GNU_UNIQUE) and list the other plugins' steps as its own.
#define DUCTWORK_HIDDEN __attribute__((visibility("hidden")))
// Keeps a frame-counting function out of its callers.
#define DUCTWORK_NOINLINE __attribute__((noinline))
#else
#define DUCTWORK_EXPORT
#define DUCTWORK_HIDDEN
#define DUCTWORK_NOINLINE
#endif

#define DUCTWORK_DETAIL_CONCAT2(a, b) a##b
#define DUCTWORK_DETAIL_CONCAT(a, b) DUCTWORK_DETAIL_CONCAT2(a, b)
// A name unique within the translation unit, for registrar objects.
#if defined(__COUNTER__)
#define DUCTWORK_DETAIL_UNIQUE(prefix) DUCTWORK_DETAIL_CONCAT(prefix, __COUNTER__)
#else
#define DUCTWORK_DETAIL_UNIQUE(prefix) DUCTWORK_DETAIL_CONCAT(prefix, __LINE__)
#endif

#endif  // DUCTWORK_DETAIL_MACROS_HPP
