"""The steps of @NAME@, in Python (written by `ductwork new-plugin --python`)."""
import ductwork_steps
from ductwork_steps import NotRetryable, step


@step("@CAMEL@Greet")
def greet(ctx, name):
    if not isinstance(name, str) or not name:
        raise NotRetryable("@CAMEL@Greet takes a non-empty name, got %r" % (name,))
    ctx.log("greeting %s" % name)
    return "Hello, %s!" % name


@step("@CAMEL@Shout")
def shout(ctx, text):
    return text.upper()


if __name__ == "__main__":
    ductwork_steps.serve()
