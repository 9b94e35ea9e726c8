#pragma once

// /metrics in the Prometheus text format 0.0.4: the host's counters and
// histograms (a Collector's snapshot) and the database's gauges.
#include <string>

#include "metrics/metric_table.h"
#include "store/store_types.h"

namespace ductwork::metrics {

std::string exposition(const Snapshot& snapshot, const MetricGauges& gauges);

}  // namespace ductwork::metrics
