"""Unit tests of the @NAME@ steps, without a host: python3 -m unittest discover -s test"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plugins"))

import @NAME@_steps  # noqa: E402,F401  (declares the steps)
from ductwork_steps import testing  # noqa: E402


class @CAMEL@StepsTest(unittest.TestCase):
    def test_greet_greets_by_name(self):
        result = testing.run("@CAMEL@Greet", "Ada")
        self.assertTrue(result.ok, result)
        self.assertEqual(result.output, "Hello, Ada!")
        self.assertEqual(result.logs, [("info", "greeting Ada")])

    def test_greet_refuses_an_empty_name_for_good(self):
        result = testing.run("@CAMEL@Greet", "")
        self.assertFalse(result.ok)
        self.assertFalse(result.retryable)
        self.assertEqual(result.error_class, "ductwork_steps.NotRetryable")

    def test_shout_upper_cases(self):
        self.assertEqual(testing.run("@CAMEL@Shout", "Hello, Ada!").output, "HELLO, ADA!")


if __name__ == "__main__":
    unittest.main()
