#include "process/machine.h"

#include <unistd.h>

#include <fstream>

namespace ductwork {

std::string machine_identifier() {
  std::ifstream in("/etc/machine-id");
  std::string id;
  if (in && std::getline(in, id) && !id.empty()) return id;
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0]) return host;
  return "unknown-machine";
}

}  // namespace ductwork
