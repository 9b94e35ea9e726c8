// fuzz_config: ductwork.yml text through the config parser. A bad file is a
// ConfigError naming the key; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    ductwork::Config config = ductwork::parse_config(text, "fuzz.yml", "/nonexistent");
    (void)config.job_worker.count.get("P");
  } catch (const ductwork::ConfigError&) {
  }
  return 0;
}
