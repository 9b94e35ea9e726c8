// `ductwork trigger PIPELINE [ARG_JSON ...]` and
// `ductwork trigger PIPELINE --from FILE` (one JSON array of arguments per
// line, `-` for standard input).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/bootstrap.h"
#include "cli/json_argument.h"
#include "engine/catalog.h"
#include "engine/trigger.h"
#include "util/bounded_read.h"
#include "util/json_limits.h"
#include "util/suggest.h"

namespace ductwork::cli {
namespace {

const char* kUsage =
    "usage: ductwork trigger PIPELINE [ARG_JSON ...] [--idempotency-key KEY] [--priority P] | ductwork trigger "
    "PIPELINE --from FILE [--priority P]";

// `--priority P`: a whole number from 0 (claimed first) to kMaxPriority;
// nullopt when not given (the definition's priority, else 0).
std::optional<int> priority_option(const Args& args) {
  const std::string* given = args.option("priority");
  if (!given) return std::nullopt;
  int priority = -1;
  auto [end, ec] = std::from_chars(given->data(), given->data() + given->size(), priority);
  if (ec != std::errc() || end != given->data() + given->size() || priority < 0 || priority > kMaxPriority) {
    throw BadInput("--priority '" + shown(*given, 40) + "' is not a whole number from 0 (claimed first) to " +
                   std::to_string(kMaxPriority));
  }
  return priority;
}

// The definition of `name`, checked the way `start` checks what it hosts.
// A broken definition file elsewhere in the folder does not stop it (as it
// does not stop `start`); when `name` is not found, the refused files are
// named, since its own may be among them.
const Definition& triggerable(Bootstrap& boot, const std::string& name) {
  boot.tolerate_broken_definitions();
  TriggerTarget target = find_triggerable(boot.definitions(), boot.plugins(), name);
  if (!target.definition) {
    std::string problem = target.problem;
    if (target.unknown) {
      for (const auto& refused : boot.definition_problems()) problem += "\n  refused definition: " + refused;
    }
    throw BadInput(problem);
  }
  return *target.definition;
}

// The argument list of `trigger PIPELINE ARG_JSON...`. Size and depth are
// checked before parsing: a deeply nested argument must never reach a
// recursive parser.
Json arguments_from_command_line(const std::vector<std::string>& positionals, size_t max_bytes) {
  Json trigger_args = Json::array();
  size_t total_bytes = 0;
  for (size_t i = 1; i < positionals.size(); ++i) {
    const std::string& text = positionals[i];
    total_bytes += text.size();
    trigger_args.push_back(parse_json_argument(text, "argument " + std::to_string(i), max_bytes));
  }
  if (total_bytes > max_bytes) {
    throw BadInput("the arguments are " + std::to_string(total_bytes) + " bytes of JSON together, more than the limit of " +
                   std::to_string(max_bytes) + " (job_worker.max_output_bytes)");
  }
  return trigger_args;
}

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

// The argument array of one line of a --from file, as the JSON text to
// store; BadInput naming the line when it cannot be one. The same limits as
// for command-line arguments: the line (the whole argument list) at most
// `max_bytes`, each argument nested at most kMaxJsonDepth levels inside it.
std::string line_arguments(const std::string& line, const std::string& where, size_t max_bytes) {
  if (line.size() > max_bytes) {
    throw BadInput(where + " is " + std::to_string(line.size()) + " bytes of JSON, more than the limit of " +
                   std::to_string(max_bytes) + " for one pipeline's arguments (job_worker.max_output_bytes)");
  }
  if (json_nesting_depth(line, kMaxJsonDepth + 1) > kMaxJsonDepth + 1) {
    throw BadInput(where + " nests arrays/objects deeper than " + std::to_string(kMaxJsonDepth) +
                   " levels inside its argument array");
  }
  Json value;
  try {
    value = parse_exact_json(line);
  } catch (const JsonError& e) {
    throw BadInput(where + " ('" + shown(line, 60) + "') is not valid JSON: " + e.what());
  } catch (const InexactNumber& e) {
    throw BadInput(where + ": " + e.what());
  }
  if (!value.is_array()) {
    throw BadInput(where + " ('" + shown(line, 60) + "') is a JSON " + json_kind(value) +
                   ", not an array of arguments: write one array per line, e.g. [1, \"x\"] ([] for none)");
  }
  return value.dump();
}

// Every line of `source` (a path, or "-" for standard input) as the text of
// its argument array, blank lines skipped. The whole input is read and
// checked before anything is written; a line is read no further than its
// limit, so /dev/zero or a huge line without a newline is refused after
// `max_bytes`, not after filling the memory.
std::vector<std::string> arguments_from_lines(const std::string& source, size_t max_bytes) {
  const std::string name = source == "-" ? std::string("standard input") : source;
  int fd = STDIN_FILENO;
  struct CloseFile {
    int fd = -1;
    ~CloseFile() {
      if (fd >= 0) ::close(fd);
    }
  } owned;
  if (source != "-") {
    owned.fd = ::open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (owned.fd < 0) throw BadInput("cannot read --from file " + source + ": " + std::strerror(errno));
    fd = owned.fd;
  }
  BoundedLineReader reader(fd, max_bytes + 1);  // +1: a trailing '\r' is not counted
  std::vector<std::string> out;
  std::string line;
  for (BoundedLineReader::Next next; (next = reader.next(&line)) != BoundedLineReader::Next::kEnd;) {
    const std::string where = "line " + std::to_string(reader.line_number()) + " of " + name;
    if (next == BoundedLineReader::Next::kError) {
      throw BadInput("cannot read --from file " + name + ": " + std::strerror(reader.error()));
    }
    if (next == BoundedLineReader::Next::kTooLong) {
      throw BadInput(where + " is more than " + std::to_string(max_bytes) +
                     " bytes, the limit for one pipeline's arguments (job_worker.max_output_bytes); reading stopped "
                     "there");
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (blank(line)) continue;
    out.push_back(line_arguments(line, where, max_bytes));
  }
  return out;
}

int trigger_from(Bootstrap& boot, const Definition& definition, const std::string& source, size_t max_bytes,
                 std::optional<int> priority) {
  std::vector<std::string> lines = arguments_from_lines(source, max_bytes);
  // Nothing to trigger: the database is not even opened (or created).
  if (lines.empty()) return kExitOk;
  auto store = boot.open_store();
  // Thrown when the ids of a committed batch cannot be printed.
  struct OutputFailed : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  size_t created = 0;
  try {
    trigger_pipelines(*store, definition, lines, [&](const std::vector<TriggeredPipeline>& batch) {
      created += batch.size();
      std::string ids;
      ids.reserve(batch.size() * 37);
      for (const TriggeredPipeline& t : batch) ids += t.pipeline_id + "\n";
      // Each committed batch's ids are out before the next batch starts, so
      // whatever stops the command later, every id printed exists.
      if (std::fwrite(ids.data(), 1, ids.size(), stdout) != ids.size() || std::fflush(stdout) != 0) {
        throw OutputFailed(std::strerror(errno));
      }
    }, priority);
  } catch (const OutputFailed& e) {
    throw std::runtime_error("created " + std::to_string(created) + " of " + std::to_string(lines.size()) +
                             " pipelines, then could not write their ids to standard output (" + e.what() +
                             "); the other " + std::to_string(lines.size() - created) + " were not written");
  } catch (const std::exception& e) {
    // Every line was checked before the first batch: what fails here is the
    // database (or the machine), and the batches before it stay committed.
    if (created == 0) {
      throw std::runtime_error("created none of the " + std::to_string(lines.size()) + " pipelines: " + e.what());
    }
    throw std::runtime_error("created " + std::to_string(created) + " of " + std::to_string(lines.size()) +
                             " pipelines (their ids are printed above, in input order); the other " +
                             std::to_string(lines.size() - created) + " were not written: " + e.what());
  }
  return kExitOk;
}

}  // namespace

int cmd_trigger(const Args& args) {
  if (args.positionals.empty()) throw BadInput(kUsage);
  const std::string& name = args.positionals[0];
  const std::string* from = args.option("from");
  if (from) {
    size_t given = 0;
    for (const auto& [option, _] : args.options) given += option == "from" ? 1 : 0;
    if (given > 1) throw BadInput("--from is given " + std::to_string(given) + " times; give one FILE (or -)");
    if (from->empty()) throw BadInput("--from needs a file path, or - for standard input");
    if (args.option("idempotency-key")) {
      throw BadInput("--idempotency-key is for one pipeline; --from triggers one per line and takes no key");
    }
    if (args.positionals.size() > 1) {
      throw BadInput("--from reads the arguments from " + (*from == "-" ? std::string("standard input") : *from) +
                     ", one JSON array per line; give no ARG_JSON with it (got '" + shown(args.positionals[1], 40) +
                     "')");
    }
  }
  const std::optional<int> priority = priority_option(args);
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  const size_t max_bytes = static_cast<size_t>(boot.config().job_worker.max_output_bytes);
  if (from) return trigger_from(boot, triggerable(boot, name), *from, max_bytes, priority);
  // Every argument is checked before the database is opened, so a malformed
  // one leaves it untouched.
  Json trigger_args = arguments_from_command_line(args.positionals, max_bytes);
  const Definition& definition = triggerable(boot, name);
  std::optional<std::string> key;
  if (const std::string* given = args.option("idempotency-key")) {
    if (std::string problem = idempotency_key_problem(*given); !problem.empty()) {
      throw BadInput("--idempotency-key: " + problem);
    }
    key = *given;
  }
  auto store = boot.open_store();
  TriggeredPipeline triggered = trigger_pipeline(*store, definition, trigger_args, key, priority);
  if (!triggered.created) {
    if (triggered.pipeline != name) {
      throw BadInput("--idempotency-key '" + shown(*key, 60) + "' was given before to trigger " + triggered.pipeline +
                     " (pipeline " + triggered.pipeline_id + "), not " + name + "; nothing was written");
    }
    std::fprintf(stderr, "ductwork trigger: idempotency key seen before: pipeline %s was not triggered again\n",
                 triggered.pipeline_id.c_str());
  }
  std::printf("%s\n", triggered.pipeline_id.c_str());
  return kExitOk;
}

}  // namespace ductwork::cli
