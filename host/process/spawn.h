#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ductwork {

// Starts `argv[0]` (an absolute path) with `argv`, this environment, no
// blocked signals and only descriptors 0-2 inherited: a listening socket or
// an HTTP connection of this process never leaks into a child, which could
// otherwise keep the port or the connection open after this process let go.
// Returns the pid, or -1 with `error` set.
pid_t spawn_process(const std::vector<std::string>& argv, std::string* error);

}  // namespace ductwork
