#pragma once

#include <string>

namespace ductwork {

// A stable identifier of this machine: /etc/machine-id, else the hostname.
std::string machine_identifier();

}  // namespace ductwork
