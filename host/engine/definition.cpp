#include "engine/definition.h"

#include <Poco/DigestEngine.h>
#include <Poco/SHA1Engine.h>

#include <set>

namespace ductwork {
namespace {

std::string sha1_hex(const std::string& text) {
  Poco::SHA1Engine engine;
  engine.update(text);
  return Poco::DigestEngine::digestToHex(engine.digest());
}

const std::set<std::string> kEdgeTypes = {"chain", "divide", "combine", "expand", "collapse", "divert", "converge"};

}  // namespace

std::string make_node_name(const std::string& pipeline, size_t ordinal, const std::string& klass) {
  return klass + "." + sha1_hex(pipeline + ":" + std::to_string(ordinal) + ":" + klass).substr(0, 8);
}

const Edge& Definition::edge(const std::string& node) const {
  auto it = edges.find(node);
  if (it == edges.end()) throw DefinitionError("pipeline " + pipeline + ": no node " + node);
  return it->second;
}

std::vector<std::string> Definition::step_classes() const {
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const auto& node : nodes) {
    const std::string& klass = edge(node).klass;
    if (seen.insert(klass).second) out.push_back(klass);
  }
  if (on_halt && seen.insert(*on_halt).second) out.push_back(*on_halt);
  return out;
}

json Definition::to_json() const {
  json metadata = json::object();
  if (on_halt) metadata["on_halt"] = json{{"klass", *on_halt}};
  json edge_doc = json::object();
  for (const auto& node : nodes) {
    const Edge& e = edge(node);
    json entry{{"klass", e.klass}};
    if (!e.type.empty()) {
      entry["type"] = e.type;
      entry["to"] = e.to;
      if (!e.barrier_nodes.empty()) {
        entry["barrier_node"] = e.barrier_nodes.size() == 1 ? json(e.barrier_nodes.front()) : json(e.barrier_nodes);
      }
    }
    edge_doc[node] = entry;
  }
  return json{{"metadata", metadata}, {"nodes", nodes}, {"edges", edge_doc}};
}

std::string Definition::canonical_text() const { return to_json().dump(); }

std::string Definition::sha1() const { return sha1_hex(canonical_text()); }

Definition Definition::from_json(const json& doc, const std::string& pipeline, const std::string& source,
                                 bool strict) {
  auto fail = [&](const std::string& rule) -> DefinitionError {
    return DefinitionError(source + ": pipeline " + pipeline + ": " + rule);
  };
  if (!doc.is_object()) throw fail("the definition must be an object");
  Definition def;
  def.pipeline = pipeline;
  if (!doc.contains("nodes") || !doc["nodes"].is_array() || doc["nodes"].empty()) {
    throw fail("\"nodes\" must be a non-empty list (nodes[0] is the start)");
  }
  if (!doc.contains("edges") || !doc["edges"].is_object()) throw fail("\"edges\" must be an object");
  for (const auto& n : doc["nodes"]) {
    if (!n.is_string()) throw fail("every node must be a string");
    def.nodes.push_back(n.get<std::string>());
  }
  for (const auto& node : def.nodes) {
    if (!doc["edges"].contains(node)) throw fail("node " + node + " has no entry in \"edges\"");
    const json& e = doc["edges"][node];
    if (!e.is_object() || !e.contains("klass") || !e["klass"].is_string()) {
      throw fail("edge of " + node + " must be an object with a string \"klass\"");
    }
    Edge edge;
    edge.klass = e["klass"].get<std::string>();
    if (e.contains("type")) {
      if (!e["type"].is_string() || (strict && !kEdgeTypes.count(e["type"].get<std::string>()))) {
        throw fail("edge of " + node + " has an unknown type");
      }
      edge.type = e["type"].get<std::string>();
      if (!e.contains("to") || !e["to"].is_array() || e["to"].empty()) {
        throw fail("edge of " + node + " must list its targets in \"to\"");
      }
      for (const auto& t : e["to"]) {
        if (!t.is_string() || !doc["edges"].contains(t.get<std::string>())) {
          throw fail("edge of " + node + " targets an unknown node");
        }
        edge.to.push_back(t.get<std::string>());
      }
    }
    if (e.contains("barrier_node")) {
      const json& b = e["barrier_node"];
      if (b.is_string()) edge.barrier_nodes.push_back(b.get<std::string>());
      else if (b.is_array())
        for (const auto& x : b) edge.barrier_nodes.push_back(x.get<std::string>());
    }
    def.edges.emplace(node, std::move(edge));
  }
  if (doc.contains("metadata") && doc["metadata"].is_object() && doc["metadata"].contains("on_halt")) {
    const json& h = doc["metadata"]["on_halt"];
    if (h.is_object() && h.contains("klass") && h["klass"].is_string()) def.on_halt = h["klass"].get<std::string>();
  }
  return def;
}

}  // namespace ductwork
