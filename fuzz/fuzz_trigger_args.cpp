// fuzz_trigger_args: one command-line argument of `ductwork trigger` through
// the door checks (size, depth, exact numbers) and the parse the CLI does.
// A refused argument is one of the named errors; what is accepted must be
// readable by a step (the SDK parser) inside its argument list: the host's
// parser (Poco's) is never more lenient than the SDK's.
#include <cstddef>
#include <cstdint>
#include <string>

#include <ductwork/json.hpp>

#include "util/json_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (ductwork::json_limit_problem(text, 1 << 20, "argument 1")) return 0;
  ductwork::Json value;
  try {
    value = ductwork::parse_exact_json(text);
  } catch (const ductwork::JsonParseError&) {
    return 0;
  } catch (const ductwork::InexactNumber&) {
    return 0;
  }
  std::string stored = ductwork::json_list_text(value.dump());
  try {
    (void)ductwork::Json::parse(stored);
  } catch (const ductwork::JsonError&) {
    // The host accepted what no step could read.
    __builtin_trap();
  }
  return 0;
}
