// fuzz_sdk_json: the SDK's own JSON parser and printer, what every step
// reads its input and writes its output with. Whatever parses must print,
// and what it prints must parse back to an equal value printed identically.
#include <cstddef>
#include <cstdint>
#include <string>

#include <ductwork/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  ductwork::Json value;
  try {
    value = ductwork::Json::parse(text);
  } catch (const ductwork::JsonError&) {
    return 0;
  }
  std::string printed = value.dump();  // a parsed value always prints
  ductwork::Json again = ductwork::Json::parse(printed);
  if (!(again == value) || again.dump() != printed) __builtin_trap();
  return 0;
}
