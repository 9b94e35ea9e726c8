"""Ductwork process steps in Python: the step side of docs/process-steps.md.

Standard library only. Declare steps with ``@step("Name")`` on
``def f(ctx, *args)`` and call ``serve()`` at the end of the script the
manifest's ``command:`` runs::

    import ductwork_steps

    @ductwork_steps.step("Inc")
    def inc(ctx, n):
        return n + 1

    if __name__ == "__main__":
        ductwork_steps.serve()

A step returns any JSON value (``None`` is ``null``); an exception fails the
execution (it is retried as the step's retry budget allows) and
``NotRetryable`` fails it for good. Unit tests run steps without a host
through ``ductwork_steps.testing``.
"""

import json
import os
import sys
import traceback

__all__ = ["PROTOCOL", "NotRetryable", "ContextError", "ContextAlreadySet", "Context", "step", "steps", "serve"]

# The protocol version this module speaks (the hello states it).
PROTOCOL = 1

_steps = {}


class NotRetryable(Exception):
    """A permanent error: the step fails now and no retry is spent on it."""


class ContextError(Exception):
    """The run's context could not be read or written."""


class ContextAlreadySet(ContextError):
    """context_set of a key that has a value, without overwrite=True."""


def step(name):
    """Declares the decorated ``f(ctx, *args)`` as step class ``name``."""
    if not isinstance(name, str) or not name:
        raise ValueError("a step name must be a non-empty string")

    def register(fn):
        if name in _steps:
            raise ValueError("step %s is declared twice" % name)
        _steps[name] = fn
        return fn

    return register


def steps():
    """The declared steps, by name."""
    return dict(_steps)


def _dumps(value):
    # Compact, one line, and never NaN or Infinity (not JSON).
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


class Context:
    """What one execution knows and may ask of the host (the C ABI's
    dw_step_context and dw_host_api)."""

    def __init__(self, request, channel):
        self.step = request.get("step")
        self.pipeline = request.get("pipeline")
        self.run_id = request.get("run_id")
        self.idempotency_key = request.get("idempotency_key")
        self.retry_count = request.get("retry_count", 0)
        self.crash_count = request.get("crash_count", 0)
        self._channel = channel

    def log(self, message, level="info"):
        """A line in the host's log, attributed to this step (level: debug,
        info, warn or error)."""
        self._channel.send({"type": "log", "level": level, "message": str(message)})

    def cancelled(self):
        """True once the run was cancelled, the step's timeout passed or the
        host is shutting down: stop soon and raise."""
        return bool(self._channel.ask({"type": "cancelled"}).get("cancelled"))

    def context_get(self, key, default=None):
        """The run's context value of ``key``, or ``default`` when unset."""
        reply = self._channel.ask({"type": "context_get", "key": key})
        if "error" in reply:
            raise ContextError(reply["error"])
        return reply["value"] if reply.get("found") else default

    def context_set(self, key, value, overwrite=False):
        """Sets the run's context ``key`` to a JSON value. A key is set once
        unless ``overwrite``: ContextAlreadySet otherwise."""
        reply = self._channel.ask({"type": "context_set", "key": key, "value": value, "overwrite": bool(overwrite)})
        if not reply.get("ok"):
            error = reply.get("error", "context_set failed")
            raise ContextAlreadySet(error) if reply.get("already_set") else ContextError(error)


class _Channel:
    """The protocol's framing: one JSON object per line."""

    def __init__(self, reader, writer):
        self._reader = reader
        self._writer = writer

    def send(self, message):
        self.send_text(_dumps(message))

    def send_text(self, text):
        self._writer.write(text.encode("utf-8") + b"\n")
        self._writer.flush()

    def receive(self):
        line = self._reader.readline()
        if not line:
            return None
        return json.loads(line)

    def ask(self, message):
        self.send(message)
        reply = self.receive()
        if reply is None:
            raise SystemExit(0)  # the host went away
        return reply


def _qualified_name(cls):
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__main__") else module + "." + cls.__qualname__


def error_document(exc):
    """What the host records for an exception: class, message, backtrace
    (innermost frame first) and whether a retry may be spent on it."""
    frames = traceback.extract_tb(exc.__traceback__)
    backtrace = "\n".join("%s:%d:in %s" % (f.filename, f.lineno, f.name) for f in reversed(frames))
    return {
        "type": "error",
        "class": _qualified_name(type(exc)),
        "message": str(exc),
        "backtrace": backtrace,
        "retryable": not isinstance(exc, NotRetryable),
    }


def run_step(request, channel, declared=None):
    """Runs one execute request; returns the output or error message (a
    dict; run_step_text gives it as the line to send)."""
    return json.loads(run_step_text(request, channel, declared))


def run_step_text(request, channel, declared=None):
    """run_step as the text of its message."""
    table = _steps if declared is None else declared
    fn = table.get(request.get("step"))
    if fn is None:
        return _dumps({"type": "error", "class": "ductwork::UnknownStep",
                       "message": "step %s is not served by this process" % request.get("step"),
                       "backtrace": "", "retryable": True})
    ctx = Context(request, channel)
    try:
        # A value that is not JSON is the step's error too.
        return _dumps({"type": "output", "value": fn(ctx, *request.get("args", []))})
    except Exception as exc:  # every failure of the step is its result
        return _dumps(error_document(exc))


def serve(declared=None):
    """Speaks the protocol on stdin/stdout until stdin closes: the hello,
    then one execution at a time. What step code prints (to stdout too)
    goes to stderr, which the host logs, never into the protocol."""
    table = _steps if declared is None else declared
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel = _Channel(sys.stdin.buffer, protocol_out)
    channel.send({"ductwork": "steps", "protocol": PROTOCOL, "steps": sorted(table)})
    while True:
        request = channel.receive()
        if request is None:
            return
        if request.get("type") != "execute":
            continue
        channel.send_text(run_step_text(request, channel, table))
