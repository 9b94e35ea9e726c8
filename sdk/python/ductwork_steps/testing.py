"""Runs declared steps without a host, for unit tests (as <ductwork/testing.hpp>
does for C++ steps)::

    from ductwork_steps import testing

    result = testing.run("Inc", 41)
    assert result.ok and result.output == 42

The step goes through the same code as under ``serve()``: its output must be
JSON, its exceptions become the error the host would record.
"""

import json

import ductwork_steps

__all__ = ["Result", "run"]


class Result:
    """How one execution ended."""

    def __init__(self, doc, logs, context, context_writes):
        self.ok = doc["type"] == "output"
        self.output = doc.get("value")
        self.error_class = doc.get("class", "")
        self.error_message = doc.get("message", "")
        self.error_backtrace = doc.get("backtrace", "")
        self.retryable = doc.get("retryable", True)
        self.logs = logs                      # [(level, message)]
        self.context = context                # the run's context afterwards
        self.context_writes = context_writes  # [(key, value, overwrite)]

    def __repr__(self):
        if self.ok:
            return "Result(ok, output=%r)" % (self.output,)
        return "Result(error %s: %s)" % (self.error_class, self.error_message)


class _FakeHost:
    def __init__(self, context, cancelled, context_failure):
        self.context = {k: json.loads(json.dumps(v)) for k, v in context.items()}
        self.cancelled = cancelled
        self.context_failure = context_failure
        self.logs = []
        self.writes = []

    def send(self, message):
        if message["type"] == "log":
            self.logs.append((message["level"], message["message"]))

    def ask(self, message):
        kind = message["type"]
        if kind == "cancelled":
            return {"cancelled": self.cancelled}
        if self.context_failure:
            return {"error": self.context_failure, "ok": False}
        key = message["key"]
        if kind == "context_get":
            return {"found": True, "value": self.context[key]} if key in self.context else {"found": False}
        value = json.loads(json.dumps(message["value"], allow_nan=False))
        if key in self.context and not message.get("overwrite"):
            return {"ok": False, "already_set": True,
                    "error": "can only set value once (key '%s' is already set)" % key}
        self.context[key] = value
        self.writes.append((key, value, bool(message.get("overwrite"))))
        return {"ok": True}


def run(name, *args, context=None, retry_count=0, crash_count=0, cancelled=False, run_id="test-run",
        pipeline="TestPipeline", idempotency_key="test-key", context_failure=None, steps=None):
    """Runs step ``name`` with ``args`` as one execution would; returns a
    Result. ``context`` is the run's context before the step;
    ``context_failure`` makes every context call fail with that message."""
    host = _FakeHost(context or {}, cancelled, context_failure)
    request = {"type": "execute", "step": name, "args": list(args), "run_id": run_id,
               "idempotency_key": idempotency_key, "pipeline": pipeline,
               "retry_count": retry_count, "crash_count": crash_count}
    doc = ductwork_steps.run_step(request, host, steps)
    return Result(doc, host.logs, host.context, host.writes)
