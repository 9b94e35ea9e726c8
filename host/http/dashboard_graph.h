#pragma once

// A run's definition drawn as an SVG graph: one box per node, laid out left
// to right by depth, coloured by the statuses of the steps that ran it, a
// fan-out shown with its counts ("Inc × 100,000 — 99,812 completed, 3
// failed"). Built from the aggregate counts, never from the steps. A node
// where branches are parked by a dampen is marked ("parked": its own
// colour when nothing there is still running or failed).
#include <string>
#include <vector>

#include "engine/definition.h"
#include "store/dashboard_types.h"

namespace ductwork::http {

std::string definition_svg(const Definition& definition, const std::vector<NodeStatusCount>& counts,
                           const std::vector<BranchStatusCount>& branches = {});

// The colour class of a set of statuses: failed, running, dampened,
// cancelled, completed, or idle (never ran).
std::string status_class(const std::vector<NodeStatusCount>& counts_of_one_node);

}  // namespace ductwork::http
