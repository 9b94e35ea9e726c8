#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

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
  std::string type;  // "", chain, divide, combine, expand, collapse, divert, converge
  std::vector<std::string> to;
  // divert only: routing key -> target node; always has "otherwise".
  std::map<std::string, std::string> routes;
  // The fan-out this fan-in closes: for collapse the node(s) that carried
  // the matching expand, for combine the node(s) that carried the matching
  // divide. A fan-in finds its barrier branch by walking parent links to
  // the nearest ancestor that ran one of them.
  std::vector<std::string> barrier_nodes;
};

// A pipeline definition in its canonical form (SPEC §3): nodes named
// "<klass>.<8 hex>", nodes[0] the start, at most one edge per node.
struct Definition {
  std::string pipeline;
  std::vector<std::string> nodes;
  std::map<std::string, Edge> edges;
  std::optional<std::string> on_halt;

  const std::string& start_node() const { return nodes.front(); }
  const Edge& edge(const std::string& node) const;
  // Every step class the definition names (including on_halt).
  std::vector<std::string> step_classes() const;

  // Canonical JSON: {"metadata":{...},"nodes":[...],"edges":{...}}.
  json to_json() const;
  // to_json() dumped compactly; what runs store as their snapshot.
  std::string canonical_text() const;
  std::string sha1() const;

  // Parses the canonical JSON (with the pipeline name given separately).
  // Throws DefinitionError naming `source` for a malformed document. With
  // `strict` an unknown edge type is an error too; a run's stored snapshot is
  // read leniently, so routing can halt it as transition_invalid instead.
  static Definition from_json(const json& doc, const std::string& pipeline, const std::string& source,
                              bool strict = true);
};

// "<klass>.<8 hex>": the hex is derived from the pipeline, the node's
// position and its class, so loading the same file twice gives the same
// graph (and the same definition_sha1).
std::string make_node_name(const std::string& pipeline, size_t ordinal, const std::string& klass);

}  // namespace ductwork
