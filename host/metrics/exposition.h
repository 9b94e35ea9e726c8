#pragma once

// /metrics in the Prometheus text format 0.0.4: the host's counters and
// histograms (a Collector's snapshot) and the database's gauges.
#include <set>
#include <string>

#include "metrics/metric_table.h"
#include "store/store_types.h"

namespace ductwork::metrics {

// Every per-pipeline gauge (and the triggered count) has a series for each
// pipeline of `known_pipelines` and of the database, 0 when it has none
// queued: a dashboard sees "nothing ready", not "no data".
std::string exposition(const Snapshot& snapshot, const MetricGauges& gauges,
                       const std::set<std::string>& known_pipelines);

}  // namespace ductwork::metrics
