// RecordKey: a step with a side effect named by its idempotency key, for
// tests of the key's stability (SPEC §7: retries, crashes and revives).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <ductwork/step.hpp>

namespace ductwork::testkit {

// The error RecordKey throws while its `until` file is missing (or when
// its log cannot be written); recorded under the class name
// "ductwork::testkit::KeyNotYet".
class KeyNotYet : public Error {
 public:
  explicit KeyNotYet(std::string message) : Error(std::move(message)) {}
};

// RecordKey: {"log": PATH, "tag": t, "until": PATH (optional), "then": v
// (optional)}. Appends the line "<t> <idempotency key>\n" to the log (one
// O_APPEND write, so fan-out children can share a log), then throws
// KeyNotYet (an ordinary, retryable error) while the `until` file does not
// exist; else returns `then` when given (the next RecordKey of a chain
// gets its own tag that way), the key otherwise. ArgumentError without a
// "log" or "tag" string.
class RecordKey : public Step {
 public:
  Json execute(StepContext& ctx) override {
    const Json& arg = ctx.arg(0);
    const Json* log = arg.is_object() ? arg.find("log") : nullptr;
    const Json* tag = arg.is_object() ? arg.find("tag") : nullptr;
    if (log == nullptr || !log->is_string() || tag == nullptr || !tag->is_string()) {
      throw ArgumentError(R"(RecordKey expects {"log": PATH, "tag": t}, got )" + arg.dump());
    }
    const std::string key(ctx.idempotency_key());
    const std::string line = tag->as_string() + " " + key + "\n";
    const int fd = ::open(log->as_string().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      if (fd >= 0) ::close(fd);
      throw KeyNotYet("RecordKey could not append to " + log->as_string());
    }
    ::close(fd);
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
