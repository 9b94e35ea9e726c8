// Steps that read and write the run context (the run-scoped key/value store).
#include <string>

#include <ductwork/step.hpp>

namespace ductwork::testkit {

// ContextSet: {"key": k, "value": v, "overwrite": bool} (overwrite optional,
// default false). Stores v under k and returns k. Without overwrite, a key
// already set fails with ductwork::ContextAlreadySet ("can only set value
// once"); ArgumentError when k is missing or not a string.
class ContextSet : public Step {
 public:
  Json execute(StepContext& ctx) override {
    const Json& arg = ctx.arg(0);
    const Json* key = arg.find("key");
    if (key == nullptr || !key->is_string()) {
      throw ArgumentError(R"(ContextSet expects {"key": k, "value": v}, got )" + arg.dump());
    }
    const Json* value = arg.find("value");
    const Json* overwrite = arg.find("overwrite");
    ctx.set(key->as_string(), value != nullptr ? *value : Json(),
            overwrite != nullptr && overwrite->as_bool());
    return *key;
  }
};
DUCTWORK_STEP(ContextSet);

// ContextGet: key k (a string) -> the value stored under k, or null when
// unset. ArgumentError when k is not a string.
class ContextGet : public Step {
 public:
  Json execute(StepContext& ctx) override {
    const Json& key = ctx.arg(0);
    if (!key.is_string()) throw ArgumentError("ContextGet expects a key string, got " + key.dump());
    return ctx.get(key.as_string()).value_or(Json());
  }
};
DUCTWORK_STEP(ContextGet);

}  // namespace ductwork::testkit

namespace ductwork::testkit {

// RecordHalt: for a definition's on_halt. Stores its first argument (the
// list of halt reasons) under the run context key "halt_reasons" and its
// second (the on_halt payload, docs/step-authors.md), when given, under
// "halt_payload", both without overwrite, so a second call on the same run
// fails with ContextAlreadySet; returns the first argument.
class RecordHalt : public Step {
 public:
  Json execute(StepContext& ctx) override {
    Json reasons = ctx.args().empty() ? Json() : ctx.arg(0);
    ctx.set("halt_reasons", reasons, false);
    if (ctx.args().size() > 1) ctx.set("halt_payload", ctx.arg(1), false);
    return reasons;
  }
};
DUCTWORK_STEP(RecordHalt);

}  // namespace ductwork::testkit
