"""Unit tests of the Python step SDK (sdk/python/ductwork_steps): the
decorator, the unit-test helper, and serve() speaking the protocol over real
pipes to a host played by this test (docs/process-steps.md)."""
import json
import os
import subprocess
import sys
import textwrap
import unittest

import ductwork_steps
from ductwork_steps import testing

SDK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(ductwork_steps.__file__)))

declared = {}


def local_step(name):
    def register(fn):
        declared[name] = fn
        return fn
    return register


@local_step("Add")
def add(ctx, a, b):
    return a + b


@local_step("Remember")
def remember(ctx, key, value):
    ctx.context_set(key, value)
    ctx.log("remembered %s" % key, "debug")
    return ctx.context_get(key)


@local_step("Stoppable")
def stoppable(ctx):
    if ctx.cancelled():
        raise RuntimeError("stopped")
    return "ran"


@local_step("NotJson")
def not_json(ctx):
    return float("nan")


@local_step("Permanent")
def permanent(ctx):
    raise ductwork_steps.NotRetryable("no")


class TestingHelperTest(unittest.TestCase):
    def run_step(self, name, *args, **kwargs):
        return testing.run(name, *args, steps=declared, **kwargs)

    def test_output_and_exact_big_integers(self):
        result = self.run_step("Add", 9007199254740993, 1)
        self.assertTrue(result.ok, result)
        self.assertEqual(result.output, 9007199254740994)

    def test_an_exception_is_the_error_the_host_records(self):
        result = self.run_step("Add", 1, "x")
        self.assertFalse(result.ok)
        self.assertTrue(result.retryable)
        self.assertEqual(result.error_class, "TypeError")
        self.assertIn("in add", result.error_backtrace.splitlines()[0])

    def test_not_retryable(self):
        result = self.run_step("Permanent")
        self.assertEqual((result.ok, result.retryable), (False, False))
        self.assertEqual(result.error_class, "ductwork_steps.NotRetryable")

    def test_context_is_set_once_unless_overwritten(self):
        result = self.run_step("Remember", "k", [1])
        self.assertEqual(result.output, [1])
        self.assertEqual(result.context, {"k": [1]})
        self.assertEqual(result.context_writes, [("k", [1], False)])
        self.assertEqual(result.logs, [("debug", "remembered k")])
        again = self.run_step("Remember", "k", [2], context={"k": [1]})
        self.assertFalse(again.ok)
        self.assertEqual(again.error_class, "ductwork_steps.ContextAlreadySet")

    def test_a_context_failure_is_the_steps_error(self):
        result = self.run_step("Remember", "k", 1, context_failure="database gone")
        self.assertEqual((result.ok, result.error_class, result.error_message),
                         (False, "ductwork_steps.ContextError", "database gone"))

    def test_cancelled(self):
        self.assertEqual(self.run_step("Stoppable").output, "ran")
        self.assertEqual(self.run_step("Stoppable", cancelled=True).error_message, "stopped")

    def test_an_output_that_is_not_json_is_an_error(self):
        result = self.run_step("NotJson")
        self.assertFalse(result.ok)
        self.assertEqual(result.error_class, "ValueError")

    def test_an_unknown_step(self):
        self.assertEqual(self.run_step("Nope").error_class, "ductwork::UnknownStep")

    def test_a_step_declared_twice_is_refused(self):
        ductwork_steps.step("OnlyOnce")(lambda ctx: 1)
        with self.assertRaises(ValueError):
            ductwork_steps.step("OnlyOnce")(lambda ctx: 2)


class ServeTest(unittest.TestCase):
    """serve() in a real child process, this test as its host."""

    def setUp(self):
        script = textwrap.dedent("""
            import ductwork_steps

            @ductwork_steps.step("Greet")
            def greet(ctx, name):
                print("printed, not protocol")
                ctx.log("greeting " + name)
                seen = ctx.context_get("seen", 0)
                ctx.context_set("seen", seen + 1, overwrite=True)
                if ctx.cancelled():
                    raise ductwork_steps.NotRetryable("cancelled")
                return {"hello": name, "retry": ctx.retry_count, "key": ctx.idempotency_key}

            ductwork_steps.serve()
        """)
        env = dict(os.environ, PYTHONPATH=SDK_DIR)
        self.child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)

    def tearDown(self):
        for stream in (self.child.stdin, self.child.stdout, self.child.stderr):
            if stream and not stream.closed:
                stream.close()
        if self.child.poll() is None:
            self.child.kill()
        self.child.wait()

    def send(self, message):
        self.child.stdin.write((json.dumps(message) + "\n").encode())
        self.child.stdin.flush()

    def receive(self):
        return json.loads(self.child.stdout.readline())

    def test_hello_then_one_execution_with_its_requests(self):
        self.assertEqual(self.receive(), {"ductwork": "steps", "protocol": 1, "steps": ["Greet"]})
        self.send({"type": "execute", "step": "Greet", "args": ["Ada"], "run_id": "r", "idempotency_key": "k1",
                   "pipeline": "P", "retry_count": 2, "crash_count": 0})
        self.assertEqual(self.receive(), {"type": "log", "level": "info", "message": "greeting Ada"})
        self.assertEqual(self.receive(), {"type": "context_get", "key": "seen"})
        self.send({"type": "context", "found": True, "value": 4})
        self.assertEqual(self.receive(), {"type": "context_set", "key": "seen", "value": 5, "overwrite": True})
        self.send({"type": "context_set", "ok": True})
        self.assertEqual(self.receive(), {"type": "cancelled"})
        self.send({"type": "cancelled", "cancelled": False})
        self.assertEqual(self.receive(), {"type": "output", "value": {"hello": "Ada", "retry": 2, "key": "k1"}})
        # A second execution in the same process: cancelled this time.
        self.send({"type": "execute", "step": "Greet", "args": ["Bo"], "run_id": "r", "idempotency_key": "k2",
                   "pipeline": "P", "retry_count": 0, "crash_count": 0})
        self.receive()  # log
        self.receive()  # context_get
        self.send({"type": "context", "found": False})
        self.receive()  # context_set
        self.send({"type": "context_set", "ok": True})
        self.receive()  # cancelled
        self.send({"type": "cancelled", "cancelled": True})
        error = self.receive()
        self.assertEqual((error["type"], error["class"], error["retryable"]),
                         ("error", "ductwork_steps.NotRetryable", False))
        # stdin closed: serve() returns and the process exits 0; what the step
        # printed went to stderr.
        self.child.stdin.close()
        self.assertEqual(self.child.wait(10), 0)
        self.assertIn(b"printed, not protocol", self.child.stderr.read())


if __name__ == "__main__":
    unittest.main()
