// RecordKey: a step with a side effect named by its idempotency key, for
// tests of the key's stability (SPEC §7: retries, crashes and revives).
#include <sys/stat.h>

#include <string>

#include <ductwork/step.hpp>

#include "append_line.h"
#include "string_field.h"

namespace ductwork::testkit {

// The error RecordKey throws while its `until` file is missing; recorded
// under the class name "ductwork::testkit::KeyNotYet".
class KeyNotYet : public Error {
 public:
  explicit KeyNotYet(std::string message) : Error(std::move(message)) {}
};

// RecordKey: {"log": PATH, "tag": t, "until": PATH (optional), "then": v
// (optional)}. Appends the line "<t> <idempotency key>\n" to the log
// (append_line.h: fan-out children can share a log), then throws
// KeyNotYet (an ordinary, retryable error) while the `until` file does not
// exist; else returns `then` when given (the next RecordKey of a chain
// gets its own tag that way), the key otherwise. ArgumentError without a
// "log" or "tag" string, LogWriteFailed when the log cannot be written.
class RecordKey : public Step {
 public:
  Json execute(StepContext& ctx) override {
    const Json& arg = ctx.arg(0);
    const char* expects = R"(RecordKey expects {"log": PATH, "tag": t})";
    const std::string& log = string_field(arg, "log", expects);
    const std::string& tag = string_field(arg, "tag", expects);
    const std::string key(ctx.idempotency_key());
    append_line(log, tag + " " + key + "\n");
    const Json* until = arg.find("until");
    struct stat st {};
    if (until != nullptr && until->is_string() && ::stat(until->as_string().c_str(), &st) != 0) {
      throw KeyNotYet("RecordKey waits for " + until->as_string());
    }
    const Json* then = arg.find("then");
    return then != nullptr ? *then : Json(key);
  }
};
DUCTWORK_STEP(RecordKey);

}  // namespace ductwork::testkit
