#include "process/machine.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace ductwork {

std::string machine_identifier() {
  // Lets tests (and containers that share one machine id) play several
  // machines on one box.
  if (const char* forced = std::getenv("DUCTWORK_MACHINE_ID"); forced && *forced) return forced;
  std::ifstream in("/etc/machine-id");
  std::string id;
  if (in && std::getline(in, id) && !id.empty()) return id;
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0]) return host;
  return "unknown-machine";
}

}  // namespace ductwork
