#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <ductwork/pipeline.hpp>

#include "util/json.h"

namespace ductwork {

// A definition that breaks a rule of the pipeline language. what() names the
// source (file and line where known) and the rule.
class DefinitionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The outgoing edge of one node. `type` is empty for a node with no edge (the
// end of a branch); `to` lists the targets in order (for divert: the route
// targets, in the order of `routes`).
struct Edge {
  std::string klass;
  std::string type;  // "", chain, divide, combine, expand, collapse, divert, converge, dampen, await, invoke
  std::vector<std::string> to;
  // divert only: routing key -> target node; always has "otherwise".
  std::map<std::string, std::string> routes;
  // The fan-out this fan-in closes: for collapse the node(s) that carried
  // the matching expand, for combine the node(s) that carried the matching
  // divide. A fan-in finds its barrier branch by walking parent links to
  // the nearest ancestor that ran one of them.
  std::vector<std::string> barrier_nodes;
  // Options of this node's step (SPEC §13), 0 when unset: how long it may
  // run before it is timed out, and how long its job waits after the
  // transition that created it (database clock).
  double timeout_seconds = 0;
  double delay_seconds = 0;
  // SPEC §17: at most `limit` executions of this node's step in progress
  // per key value, across every host.
  std::optional<ConcurrencyLimit> concurrency;
  // SPEC §17: at most `limit` attempts of this node's step start in any
  // `per` seconds per key value, across every host.
  std::optional<RateLimit> rate_limit;
  // SPEC §18, await edges only: the event the branch waits for.
  std::optional<Await> await;
  // SPEC §18, invoke edges only: "continue" when the branch goes on after
  // the child halted, "" when it halts (child_halted).
  std::string on_child_halt;
  // The node is the target of an invoke edge: it stands for a child
  // pipeline (named by `klass`) and runs no step; `child_halt_continues` is
  // its invoke edge's on_child_halt == "continue".
  bool invoked = false;
  bool child_halt_continues = false;
};

// A pipeline definition in its canonical form (SPEC §3): nodes named
// "<klass>.<8 hex>", nodes[0] the start, at most one edge per node. Files are
// compiled by definition_loader through the SDK's builder (pipeline.hpp),
// which also names the nodes.
struct Definition {
  std::string pipeline;
  std::vector<std::string> nodes;
  std::map<std::string, Edge> edges;
  std::optional<std::string> on_halt;
  // The claim order of its runs (issue 38): 0 first, 9 last; unset = 0.
  // A trigger may give its own.
  std::optional<int> priority;
  // The pipeline's concurrency limit (metadata.concurrency): a node without
  // its own counts against it.
  std::optional<ConcurrencyLimit> concurrency;
  // The pipeline's rate limit (metadata.rate_limit): a node without its own
  // counts against it.
  std::optional<RateLimit> rate_limit;
  // Cron schedules that trigger it (metadata.schedules, SPEC §18), each
  // named (the name defaults to the cron text in the builder).
  std::vector<Schedule> schedules;

  const std::string& start_node() const { return nodes.front(); }
  const Edge& edge(const std::string& node) const;
  // Every step class the definition names (including on_halt), not the
  // child pipelines its invoke nodes name.
  std::vector<std::string> step_classes() const;
  // The pipelines its invoke nodes start, each once.
  std::vector<std::string> invoked_pipelines() const;

  // Canonical JSON: {"metadata":{...},"nodes":[...],"edges":{...}}.
  Json to_json() const;
  // to_json() dumped compactly; what runs store as their snapshot.
  std::string canonical_text() const;
  std::string sha1() const;

  // Parses the canonical JSON (with the pipeline name given separately; a
  // top-level "pipeline" key, as plugins export, is ignored). Throws
  // DefinitionError "<source>: pipeline <P>: [node <N>: ]<rule>" for a
  // malformed document. With `strict` (definitions from plugins) the graph
  // must obey the rules of the pipeline language: known edge types, targets
  // that are nodes, nothing leading back to the start, one target for
  // chain/expand/collapse/combine/converge, a divert map with "otherwise",
  // fan-ins naming the node(s) of their fan-out, well-formed on_halt. A
  // run's stored snapshot is read leniently, so routing can halt it as
  // transition_invalid instead.
  static Definition from_json(const Json& doc, const std::string& pipeline, const std::string& source,
                              bool strict = true);
};

// Why a schedule's expression or zone cannot be used, "" when it can: the
// expression parses (util/cron.h), the zone is in the system's tzdata, and
// a tick comes within 28 years of 2000 (30 February never does).
std::string schedule_problem(const Schedule& s);

}  // namespace ductwork
