#include "engine/definition.h"

#include <Poco/DigestEngine.h>
#include <Poco/SHA1Engine.h>

#include <ductwork/pipeline.hpp>

#include <cstdint>
#include <set>

#include "util/cron.h"

namespace ductwork {
namespace {

std::string sha1_hex(const std::string& text) {
  Poco::SHA1Engine engine;
  engine.update(text);
  return Poco::DigestEngine::digestToHex(engine.digest());
}

const std::set<std::string> kEdgeTypes = {"chain",  "divide",   "combine", "expand", "collapse",
                                          "divert", "converge", "dampen",  "await",   "invoke"};
// Edge types that lead to exactly one node.
const std::set<std::string> kSingleTarget = {"chain", "expand", "collapse", "combine", "converge", "dampen", "await",
                                             "invoke"};

// A step option as canonical JSON: an integer when whole (as the SDK's
// builder writes it), so the text and its SHA-1 do not depend on the form.
Json seconds_json(double seconds) {
  auto whole = static_cast<int64_t>(seconds);
  return static_cast<double>(whole) == seconds ? Json(whole) : Json(seconds);
}

Json string_map(const std::map<std::string, std::string>& items) {
  Json::Object out;
  for (const auto& [key, value] : items) out.emplace(key, value);
  return Json(std::move(out));
}

// Reads one canonical document. Shape errors are found in every mode; the
// rules of the language (rule()) only in strict mode.
class Reader {
 public:
  Reader(const Json& doc, const std::string& pipeline, const std::string& source, bool strict)
      : doc_(doc), source_(source), strict_(strict) {
    def_.pipeline = pipeline;
  }

  Definition read() {
    if (strict_) {
      // A name that is not plain text broke every command that printed it
      // (invalid UTF-8) or restarted workers forever (a NUL byte).
      try {
        detail::check_pipeline_name(def_.pipeline);
      } catch (const PipelineError& e) {
        throw DefinitionError(source_ + ": " + e.what());
      }
    }
    if (!doc_.is_object()) throw fail("the definition must be an object");
    read_nodes();
    for (const auto& node : def_.nodes) def_.edges.emplace(node, read_edge(node));
    mark_invoked();
    if (strict_) {
      for (const auto& [node, _] : doc_["edges"].as_object()) {
        if (!nodes_.count(node)) throw fail("\"edges\" has an entry for " + node + ", which is not in \"nodes\"");
      }
      for (const auto& node : def_.nodes) check_edge(node, def_.edges.at(node));
    }
    read_metadata();
    return std::move(def_);
  }

 private:
  DefinitionError fail(const std::string& rule) const {
    return DefinitionError(source_ + ": pipeline " + detail::shown_name(def_.pipeline) + ": " + rule);
  }
  DefinitionError fail_at(const std::string& node, const std::string& rule) const {
    return fail("node " + node + ": " + rule);
  }

  void check_step_name(const std::string& where, const std::string& klass) const {
    try {
      detail::check_step_name(klass);
    } catch (const PipelineError& e) {
      throw fail(where + e.what());
    }
  }

  // The targets of invoke edges stand for child pipelines (SPEC §18).
  void mark_invoked() {
    for (const auto& [node, edge] : def_.edges) {
      if (edge.type != "invoke") continue;
      for (const auto& target : edge.to) {
        auto it = def_.edges.find(target);
        if (it == def_.edges.end()) continue;
        it->second.invoked = true;
        if (edge.on_child_halt == "continue") it->second.child_halt_continues = true;
      }
    }
  }

  void read_nodes() {
    if (!doc_.contains("nodes") || !doc_["nodes"].is_array() || doc_["nodes"].empty()) {
      throw fail("\"nodes\" must be a non-empty list (nodes[0] is the start)");
    }
    if (!doc_.contains("edges") || !doc_["edges"].is_object()) throw fail("\"edges\" must be an object");
    for (const Json& n : doc_["nodes"].as_array()) {
      if (!n.is_string()) throw fail("every node must be a string");
      std::string node = n.as_string();
      if (!nodes_.insert(node).second && strict_) throw fail_at(node, "listed twice in \"nodes\"");
      def_.nodes.push_back(node);
    }
  }

  std::string target(const std::string& node, const Json& t) const {
    if (!t.is_string()) throw fail_at(node, "every target must be a node name");
    std::string name = t.as_string();
    bool known = strict_ ? nodes_.count(name) > 0 : doc_["edges"].contains(name);
    if (!known) throw fail_at(node, "targets " + name + ", which is not in \"nodes\"");
    return name;
  }

  Edge read_edge(const std::string& node) {
    if (!doc_["edges"].contains(node)) throw fail("node " + node + " has no entry in \"edges\"");
    const Json& e = doc_["edges"][node];
    if (!e.is_object() || !e.contains("klass") || !e["klass"].is_string()) {
      throw fail("edge of " + node + " must be an object with a string \"klass\"");
    }
    Edge edge;
    edge.klass = e["klass"].as_string();
    if (strict_) check_step_name("node " + node + ": ", edge.klass);
    if (e.contains("type")) {
      if (!e["type"].is_string()) throw fail_at(node, "\"type\" must be a string");
      edge.type = e["type"].as_string();
      if (strict_ && !kEdgeTypes.count(edge.type)) {
        throw fail_at(node, "unknown edge type '" + edge.type +
                                "' (expected chain, divide, combine, expand, collapse, divert, converge, dampen, await or invoke)");
      }
      const Json* to = e.find("to");
      if (to && to->is_object() && (edge.type == "divert" || !strict_)) {
        for (const auto& [key, t] : to->as_object()) edge.routes[key] = target(node, t);
        for (const auto& [key, t] : edge.routes) edge.to.push_back(t);
      } else if (edge.type == "divert") {
        throw fail_at(node, "a 'divert' edge's \"to\" must be an object of routing key -> node");
      } else if (to && to->is_array() && !to->empty()) {
        for (const Json& t : to->as_array()) edge.to.push_back(target(node, t));
      } else {
        throw fail("edge of " + node + " must list its targets in \"to\"");
      }
    } else if (strict_ && e.contains("to")) {
      throw fail_at(node, "\"to\" without a \"type\"");
    }
    edge.timeout_seconds = option(node, e, "timeout");
    edge.delay_seconds = option(node, e, "delay");
    if (e.contains("concurrency")) edge.concurrency = limit(e["concurrency"], "node " + node + ": ");
    if (e.contains("rate_limit")) edge.rate_limit = rate(e["rate_limit"], "node " + node + ": ");
    if (e.contains("await")) edge.await = await_spec(node, e["await"]);
    if (const Json* halt = e.find("on_child_halt")) {
      if (halt->is_string() && (halt->as_string() == "continue" || halt->as_string() == "halt")) {
        if (halt->as_string() == "continue") edge.on_child_halt = "continue";
      } else if (strict_) {
        throw fail_at(node, "\"on_child_halt\" must be \"halt\" or \"continue\"");
      }
    }
    if (e.contains("barrier_node")) {
      const Json& b = e["barrier_node"];
      if (b.is_string()) {
        edge.barrier_nodes.push_back(b.as_string());
      } else if (b.is_array() && !b.empty()) {
        for (const Json& x : b.as_array()) {
          if (!x.is_string()) throw fail_at(node, "\"barrier_node\" must be a node name or a list of them");
          edge.barrier_nodes.push_back(x.as_string());
        }
      } else {
        throw fail_at(node, "\"barrier_node\" must be a node name or a list of them");
      }
    }
    return edge;
  }

  // A step option (SPEC §13): a positive number of seconds; 0 when absent.
  // A stored snapshot with a bad value reads as no option (lenient mode).
  double option(const std::string& node, const Json& e, const char* key) const {
    if (!e.contains(key)) return 0;
    const Json& v = e[key];
    if (v.is_number() && v.as_double() > 0 && v.as_double() <= kMaxOptionSeconds) return v.as_double();
    if (strict_) {
      throw fail_at(node, std::string("\"") + key + "\" must be a number of seconds > 0 and <= " +
                              std::to_string(static_cast<int64_t>(kMaxOptionSeconds)));
    }
    return 0;
  }
  static constexpr double kMaxOptionSeconds = 366.0 * 24 * 3600;

  // {"limit": N, "key": "/pointer"} (SPEC §17); a stored snapshot with a
  // bad one reads as no limit (lenient mode).
  std::optional<ConcurrencyLimit> limit(const Json& v, const std::string& where) const {
    ConcurrencyLimit out;
    bool shaped = v.is_object() && v.contains("limit") && v["limit"].is_int64();
    if (shaped) {
      out.limit = v["limit"].as_int();
      for (const auto& [key, _] : v.as_object()) shaped = shaped && (key == "limit" || key == "key");
      if (v.contains("key")) {
        shaped = shaped && v["key"].is_string();
        if (shaped) out.key = v["key"].as_string();
      }
    }
    try {
      if (!shaped) throw PipelineError("\"concurrency\" must be {\"limit\": N, \"key\": \"/pointer\"}");
      detail::check_concurrency(out.limit, out.key);
    } catch (const PipelineError& e) {
      if (strict_) throw fail(where + e.what());
      return std::nullopt;
    }
    return out;
  }

  // {"limit": N, "per": SECONDS, "key": "/pointer"} (SPEC §17); a stored
  // snapshot with a bad one reads as no limit (lenient mode).
  std::optional<RateLimit> rate(const Json& v, const std::string& where) const {
    RateLimit out;
    bool shaped = v.is_object() && v.contains("limit") && v["limit"].is_int64() && v.contains("per") &&
                  v["per"].is_number();
    if (shaped) {
      out.limit = v["limit"].as_int();
      out.per = v["per"].as_double();
      for (const auto& [key, _] : v.as_object()) shaped = shaped && (key == "limit" || key == "per" || key == "key");
      if (v.contains("key")) {
        shaped = shaped && v["key"].is_string();
        if (shaped) out.key = v["key"].as_string();
      }
    }
    try {
      if (!shaped) {
        throw PipelineError("\"rate_limit\" must be {\"limit\": N, \"per\": SECONDS, \"key\": \"/pointer\"}");
      }
      detail::check_rate_limit(out.limit, out.per, out.key);
    } catch (const PipelineError& e) {
      if (strict_) throw fail(where + e.what());
      return std::nullopt;
    }
    return out;
  }

  // {"event", "match", "timeout", "on_timeout"} of an await edge (SPEC
  // §18); a stored snapshot with a bad one reads as none (lenient mode:
  // routing then halts the branch as transition_invalid).
  std::optional<Await> await_spec(const std::string& node, const Json& v) const {
    Await out;
    bool shaped = v.is_object() && v.contains("event") && v["event"].is_string();
    if (shaped) {
      out.event = v["event"].as_string();
      for (const auto& [key, value] : v.as_object()) {
        if (key == "match" && value.is_string()) {
          out.match = value.as_string();
        } else if (key == "timeout" && value.is_number()) {
          out.timeout = value.as_double();
        } else if (key == "on_timeout" && value.is_string()) {
          out.on_timeout = value.as_string();
        } else if (key != "event") {
          shaped = false;
        }
      }
    }
    try {
      if (!shaped) {
        throw PipelineError("\"await\" must be {\"event\": NAME, \"match\": \"/pointer\", \"timeout\": SECONDS, "
                            "\"on_timeout\": \"halt\"|\"continue\"}");
      }
      detail::check_await(out, [](const std::string& rule) { throw PipelineError(rule); });
      detail::check_key_pointer("await", out.match, "match");
    } catch (const PipelineError& e) {
      if (strict_) throw fail_at(node, e.what());
      return std::nullopt;
    }
    return out;
  }

  // metadata.schedules (SPEC §18): every option written, as the builder
  // writes them; strict: the expression parses, the zone is known and the
  // expression fires at all. A stored snapshot's schedules are not read
  // (a run never needs them).
  void read_schedules(const Json& list) {
    if (!strict_) return;
    if (!list.is_array()) throw fail("metadata.schedules must be a list");
    std::set<std::string> names;
    for (const Json& v : list.as_array()) {
      Schedule s;
      bool shaped = v.is_object() && v.contains("cron") && v["cron"].is_string() && v.contains("timezone") &&
                    v["timezone"].is_string() && v.contains("args") && v.contains("name") && v["name"].is_string() &&
                    v.contains("overlap") && v["overlap"].is_string() && v.contains("catch_up") &&
                    v["catch_up"].is_string() && v.contains("catch_up_limit") && v["catch_up_limit"].is_int64() &&
                    v.as_object().size() == 7;
      if (!shaped) {
        throw fail("metadata.schedules: each entry is {\"cron\", \"timezone\", \"args\", \"name\", \"overlap\", "
                   "\"catch_up\", \"catch_up_limit\"}");
      }
      s.cron = v["cron"].as_string();
      s.timezone = v["timezone"].as_string();
      s.args = v["args"];
      s.name = v["name"].as_string();
      s.overlap = v["overlap"].as_string();
      s.catch_up = v["catch_up"].as_string();
      s.catch_up_limit = v["catch_up_limit"].as_int();
      const std::string where = "schedule '" + s.name + "': ";
      detail::check_schedule(s, [&](const std::string& rule) { throw fail(where + rule); });
      if (!names.insert(s.name).second) throw fail(where + "two schedules have this name");
      const std::string problem = schedule_problem(s);
      if (!problem.empty()) throw fail(where + problem);
      def_.schedules.push_back(std::move(s));
    }
  }

  // The rules of the language for one parsed edge (strict mode).
  void check_edge(const std::string& node, const Edge& edge) const {
    if (edge.invoked && (edge.timeout_seconds > 0 || edge.delay_seconds > 0 || edge.concurrency || edge.rate_limit)) {
      throw fail_at(node, "invokes pipeline " + edge.klass +
                              " and runs no step: 'timeout', 'delay', 'concurrency' and 'rate_limit' do not apply");
    }
    if (edge.type.empty()) {
      if (!edge.barrier_nodes.empty()) throw fail_at(node, "\"barrier_node\" without a \"type\"");
      return;
    }
    for (const auto& t : edge.to) {
      if (t == def_.nodes.front()) {
        throw fail_at(node, "targets the start node " + t + " (nothing may lead back to nodes[0])");
      }
    }
    if (kSingleTarget.count(edge.type) && edge.to.size() != 1) {
      throw fail_at(node, "a '" + edge.type + "' edge has exactly one target");
    }
    if ((edge.type == "await") != edge.await.has_value()) {
      throw fail_at(node, edge.await ? "\"await\" on an edge that is not an 'await'"
                                     : "an 'await' edge names its event in \"await\"");
    }
    if (edge.type != "invoke" && !edge.on_child_halt.empty()) {
      throw fail_at(node, "\"on_child_halt\" on an edge that is not an 'invoke'");
    }
    for (const auto& t : edge.to) {
      const Edge& target = def_.edges.at(t);
      if (target.invoked && edge.type != "invoke") {
        throw fail_at(node, "a '" + edge.type + "' edge leads to " + t + ", which an 'invoke' edge leads to");
      }
    }
    if (edge.type == "divert" && !edge.routes.count("otherwise")) {
      throw fail_at(node, "'divert' needs an 'otherwise' target");
    }
    std::string opener = edge.type == "collapse" ? "expand" : edge.type == "combine" ? "divide" : "";
    if (opener.empty()) {
      if (!edge.barrier_nodes.empty()) {
        throw fail_at(node, "only 'collapse' and 'combine' edges have a \"barrier_node\"");
      }
      return;
    }
    if (edge.barrier_nodes.empty()) {
      throw fail_at(node, "a '" + edge.type + "' edge names the node(s) of its '" + opener +
                              "' in \"barrier_node\"");
    }
    for (const auto& b : edge.barrier_nodes) {
      if (!nodes_.count(b)) throw fail_at(node, "barrier_node " + b + " is not in \"nodes\"");
      if (def_.edges.at(b).type != opener) {
        const std::string an = opener == "expand" ? "an '" : "a '";
        throw fail_at(node, "barrier_node " + b + " does not carry " + an + opener + "' edge (a '" + edge.type +
                                "' closes " + an + opener + "')");
      }
    }
  }

  void read_metadata() {
    if (!doc_.contains("metadata")) return;
    const Json& metadata = doc_["metadata"];
    if (!metadata.is_object()) {
      if (strict_) throw fail("\"metadata\" must be an object");
      return;
    }
    if (metadata.contains("priority")) {
      const Json& p = metadata["priority"];
      if (p.is_int64() && p.as_int() >= 0 && p.as_int() <= 9) {
        def_.priority = static_cast<int>(p.as_int());
      } else if (strict_) {
        throw fail("metadata.priority must be a whole number from 0 to 9");
      }
    }
    if (metadata.contains("concurrency")) def_.concurrency = limit(metadata["concurrency"], "metadata: ");
    if (metadata.contains("rate_limit")) def_.rate_limit = rate(metadata["rate_limit"], "metadata: ");
    if (metadata.contains("schedules")) read_schedules(metadata["schedules"]);
    if (!metadata.contains("on_halt")) return;
    const Json& h = metadata["on_halt"];
    if (h.is_object() && h.contains("klass") && h["klass"].is_string()) {
      def_.on_halt = h["klass"].as_string();
      if (strict_) check_step_name("metadata.on_halt: ", *def_.on_halt);
    } else if (strict_) {
      throw fail("metadata.on_halt must be {\"klass\": \"StepName\"}");
    }
  }

  const Json& doc_;
  std::string source_;
  bool strict_;
  Definition def_;
  std::set<std::string> nodes_;
};

}  // namespace

std::string schedule_problem(const Schedule& s) {
  try {
    const CronExpression expr = CronExpression::parse(s.cron);
    const date::time_zone& zone = find_time_zone(s.timezone);
    if (!expr.next_after(*parse_utc_seconds("2000-01-01 00:00:00"), zone)) return "cron '" + s.cron + "' never fires";
  } catch (const CronError& e) {
    return e.what();
  }
  return "";
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
    const Edge& e = edge(node);
    if (!e.invoked && seen.insert(e.klass).second) out.push_back(e.klass);
  }
  if (on_halt && seen.insert(*on_halt).second) out.push_back(*on_halt);
  return out;
}

std::vector<std::string> Definition::invoked_pipelines() const {
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const auto& node : nodes) {
    const Edge& e = edge(node);
    if (e.invoked && seen.insert(e.klass).second) out.push_back(e.klass);
  }
  return out;
}

Json Definition::to_json() const {
  Json metadata = Json::object();
  if (on_halt) metadata["on_halt"] = Json::object({{"klass", *on_halt}});
  if (priority) metadata["priority"] = static_cast<int64_t>(*priority);
  auto limit_json = [](const ConcurrencyLimit& c) {
    Json out = Json::object({{"limit", static_cast<int64_t>(c.limit)}});
    if (!c.key.empty()) out["key"] = c.key;
    return out;
  };
  auto rate_json = [](const RateLimit& r) {
    Json out = Json::object({{"limit", static_cast<int64_t>(r.limit)}, {"per", seconds_json(r.per)}});
    if (!r.key.empty()) out["key"] = r.key;
    return out;
  };
  if (concurrency) metadata["concurrency"] = limit_json(*concurrency);
  if (rate_limit) metadata["rate_limit"] = rate_json(*rate_limit);
  if (!schedules.empty()) {
    Json list = Json::array();
    for (const Schedule& s : schedules) list.as_array().push_back(detail::schedule_json(s));
    metadata["schedules"] = list;
  }
  Json edge_doc = Json::object();
  for (const auto& node : nodes) {
    const Edge& e = edge(node);
    Json entry = Json::object({{"klass", e.klass}});
    if (e.timeout_seconds > 0) entry["timeout"] = seconds_json(e.timeout_seconds);
    if (e.delay_seconds > 0) entry["delay"] = seconds_json(e.delay_seconds);
    if (e.concurrency) entry["concurrency"] = limit_json(*e.concurrency);
    if (e.rate_limit) entry["rate_limit"] = rate_json(*e.rate_limit);
    if (!e.type.empty()) {
      entry["type"] = e.type;
      entry["to"] = e.routes.empty() ? json_strings(e.to) : string_map(e.routes);
      if (e.await) entry["await"] = detail::await_json(*e.await);
      if (!e.on_child_halt.empty()) entry["on_child_halt"] = e.on_child_halt;
      if (!e.barrier_nodes.empty()) {
        entry["barrier_node"] =
            e.barrier_nodes.size() == 1 ? Json(e.barrier_nodes.front()) : json_strings(e.barrier_nodes);
      }
    }
    edge_doc[node] = entry;
  }
  return Json::object({{"metadata", metadata}, {"nodes", json_strings(nodes)}, {"edges", edge_doc}});
}

std::string Definition::canonical_text() const { return to_json().dump(); }

std::string Definition::sha1() const { return sha1_hex(canonical_text()); }

Definition Definition::from_json(const Json& doc, const std::string& pipeline, const std::string& source, bool strict) {
  return Reader(doc, pipeline, source, strict).read();
}

}  // namespace ductwork
