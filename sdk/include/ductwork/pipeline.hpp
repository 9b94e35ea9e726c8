// ductwork/pipeline.hpp — the fluent pipeline builder (SPEC §3). Builds the
// canonical definition JSON a plugin exports with DUCTWORK_PIPELINE (see
// plugin.hpp); the host compiles definition files through this same builder,
// so a file and the equivalent C++ give the same graph, node names and hash.
//
//   ductwork::Pipeline p("EnrichUserData");
//   p.start("QueryUsers")
//    .expand("LoadUserData")
//    .divide({"FetchA", "FetchB"}, [](std::vector<ductwork::Branch>& b) { b[1].chain("NormalizeB"); })
//    .combine("Collate")
//    .collapse("Report")
//    .on_halt("NotifyOps");
//   p.chain("Transcode").timeout(600).delay(5)   // options of the step just named
//    .chain("Charge").concurrency(2, "/0/customer_id")  // at most 2 in progress per customer
//    .rate_limit(50, 1)                          // and at most 50 starts a second
//    .dampen("Publish")                          // park until `ductwork resume`
//    .await("Ship", paid)                        // park until an event (await.hpp)
//    .invoke("Fulfil")                           // run pipeline Fulfil, wait for its end
//    .chain("Notify");                           // ... and go on with its final output
//   std::string text = p.dump();
//
// How it builds: the builder keeps the open *ends* (nodes whose edge is not
// set yet) and a stack of open fan-outs. Every operation but start/on_halt
// creates node(s), gives every end the same edge to them, and makes them the
// new ends. divide/expand/divert push a fan-out; combine/collapse/converge
// pop the innermost one, which must be of their kind. A block given to
// divide/divert receives one Branch per target; each branch starts at its
// target, has its own fan-out stack and must close what it opens; afterwards
// the ends are every branch's ends, in branch order.
//
// Node names are "<klass>.<8 hex>", the hex being FNV-1a (32 bit) of
// "<pipeline>:<ordinal>:<klass>" (ordinal: creation order in the whole
// graph), rehashed with ":<n>" appended while the name is taken. Building the
// same graph twice gives identical text.
//
// Every broken rule throws PipelineError whose what() names the rule. After
// one the builder is in a valid but unspecified state: discard it.
#ifndef DUCTWORK_PIPELINE_HPP
#define DUCTWORK_PIPELINE_HPP

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "ductwork/detail/utf8.hpp"
#include <vector>

#include "ductwork/await.hpp"
#include "ductwork/json.hpp"
#include "ductwork/schedule.hpp"

namespace ductwork {

// The options of an `invoke: PIPELINE` transition (SPEC §18): the previous
// step's output becomes the child pipeline's trigger arguments, the branch
// waits until the child ends, and the child's final output is the next
// step's input. When the child halts (or is cancelled) the branch halts with
// reason child_halted ("halt"), or goes on with an error document
// ({"error": "child_halted", ...}) as that input ("continue").
struct Invoke {
  std::string on_child_halt = "halt";
};

// A pipeline that breaks a rule of the pipeline language. (The host's own
// ductwork::DefinitionError adds the file and line to the same messages.)
class PipelineError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class Branch;
// The block of divide/divert: one Branch per target, in target order.
using BranchBlock = std::function<void(std::vector<Branch>&)>;
// divert's targets: routing key -> step class, in the order the nodes are
// created. One key must be "otherwise".
using Routes = std::vector<std::pair<std::string, std::string>>;

// `concurrency: {limit, key}` of a step or a pipeline (SPEC §17): at most
// `limit` executions in progress at once per value of `key`, a JSON Pointer
// into the step's arguments (empty: one limit for all).
struct ConcurrencyLimit {
  long long limit = 0;
  std::string key;
};

// `rate_limit: {limit, per, key}` of a step or a pipeline (SPEC §17): at
// most `limit` attempts start in any `per` seconds per value of `key` (a
// JSON Pointer into the step's arguments; empty: one limit for all).
struct RateLimit {
  long long limit = 0;
  double per = 0;
  std::string key;
};

namespace detail {

// A name as it may be shown in a message: printable ASCII kept, every other
// byte (control characters, NUL, invalid or non-ASCII UTF-8) as \xNN, so an
// error about a bad name is itself always valid, printable text.
inline std::string shown_name(const std::string& name) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : name.substr(0, 200)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (name.size() > 200) out += "...";
  return out;
}

inline constexpr std::size_t kMaxNameLength = 128;

// Letters, digits, '_', ':' and '-', at most kMaxNameLength bytes: what a
// step class or pipeline name may contain (`what` is "step" or "pipeline").
inline void check_name(const char* what, const std::string& name) {
  if (name.empty()) throw PipelineError(std::string("a ") + what + " name may not be empty");
  if (name.size() > kMaxNameLength) {
    throw PipelineError(std::string(what) + " name '" + shown_name(name) + "' is longer than " +
                        std::to_string(kMaxNameLength) + " characters");
  }
  for (unsigned char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == ':' || c == '-';
    if (!ok) {
      throw PipelineError(std::string(what) + " name '" + shown_name(name) +
                          "' may only contain letters, digits, '_', ':' and '-'");
    }
  }
}

inline void check_step_name(const std::string& klass) { check_name("step", klass); }
inline void check_pipeline_name(const std::string& name) { check_name("pipeline", name); }

inline std::uint32_t fnv1a_32(const std::string& text) {
  std::uint32_t hash = 2166136261u;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 16777619u;
  }
  return hash;
}

// The name of node number `ordinal` (0-based, whole graph) on its
// `attempt`th try (0 first; later ones only when a name is taken).
inline std::string node_name(const std::string& pipeline, std::size_t ordinal, const std::string& klass,
                             std::size_t attempt) {
  // Built with append rather than operator+: GCC 12 at -O3 reports a false
  // -Wrestrict for chained string concatenation, and plugins use -Werror.
  std::string seed;
  seed.append(pipeline).append(":").append(std::to_string(ordinal)).append(":").append(klass);
  if (attempt > 0) seed.append(":").append(std::to_string(attempt));
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(fnv1a_32(seed)));
  std::string name;
  name.reserve(klass.size() + 9);
  name.append(klass).append(".").append(hex, 8);
  return name;
}

inline constexpr long long kMaxConcurrencyLimit = 1000000;
inline constexpr std::size_t kMaxKeyPointerLength = 256;

// A JSON Pointer (RFC 6901) into a step's arguments, or empty for none:
// '/'-separated tokens, '~' only as "~0" or "~1", valid UTF-8.
inline void check_key_pointer(const char* what, const std::string& key, const char* part = "key") {
  if (key.empty()) return;
  const std::string prefix = std::string("the ") + part + " of '" + what + "' ";
  if (key.front() != '/') {
    throw PipelineError(prefix + "must be a JSON Pointer starting with '/' (e.g. '/0/customer_id'), not '" +
                        shown_name(key) + "'");
  }
  if (key.size() > kMaxKeyPointerLength) {
    throw PipelineError(prefix + "is longer than " + std::to_string(kMaxKeyPointerLength) + " characters");
  }
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '~' && (i + 1 == key.size() || (key[i + 1] != '0' && key[i + 1] != '1'))) {
      throw PipelineError(prefix + "'" + shown_name(key) + "' is not a JSON Pointer ('~' must be '~0' or '~1')");
    }
  }
  for (std::size_t pos = 0; pos < key.size();) {
    const std::size_t length = utf8_sequence_length(key, pos);
    if (length == 0) throw PipelineError(prefix + "must be valid UTF-8");
    pos += length;
  }
}

// What `concurrency:` takes (SPEC §17): a limit of 1 to kMaxConcurrencyLimit
// and an optional key pointer.
inline void check_concurrency(long long limit, const std::string& key) {
  if (limit < 1 || limit > kMaxConcurrencyLimit) {
    throw PipelineError("'concurrency' takes a limit from 1 to " + std::to_string(kMaxConcurrencyLimit) + ", not " +
                        std::to_string(limit));
  }
  check_key_pointer("concurrency", key);
}

inline constexpr double kMinRatePeriod = 0.001;
inline constexpr double kMaxRatePeriod = 366.0 * 24 * 3600;

// What `rate_limit:` takes (SPEC §17): a limit of 1 to kMaxConcurrencyLimit
// attempts per window of `per` seconds (from a millisecond to a year) and an
// optional key pointer.
inline void check_rate_limit(long long limit, double per, const std::string& key) {
  if (limit < 1 || limit > kMaxConcurrencyLimit) {
    throw PipelineError("'rate_limit' takes a limit from 1 to " + std::to_string(kMaxConcurrencyLimit) + ", not " +
                        std::to_string(limit));
  }
  if (!(per >= kMinRatePeriod) || per > kMaxRatePeriod) {
    throw PipelineError("'rate_limit' takes 'per', a number of seconds from 0.001 to " +
                        std::to_string(static_cast<long long>(kMaxRatePeriod)));
  }
  check_key_pointer("rate_limit", key);
}

enum class FanOut { kDivide, kExpand, kDivert };

inline const char* fan_out_name(FanOut kind) {
  switch (kind) {
    case FanOut::kDivide: return "divide";
    case FanOut::kExpand: return "expand";
    case FanOut::kDivert: return "divert";
  }
  return "?";
}
// "a 'divide'", "an 'expand'".
inline std::string fan_out_phrase(FanOut kind) {
  return std::string(kind == FanOut::kExpand ? "an '" : "a '") + fan_out_name(kind) + "'";
}
inline const char* fan_in_name(FanOut kind) {
  switch (kind) {
    case FanOut::kDivide: return "combine";
    case FanOut::kExpand: return "collapse";
    case FanOut::kDivert: return "converge";
  }
  return "?";
}

// The graph under construction. Owned by a Pipeline; the Branches of a block
// point into it while the block runs.
class PipelineGraph {
 public:
  struct Node {
    std::string klass;
    std::string type;  // "" until the node's edge is set
    std::vector<std::string> to;
    Routes routes;  // divert: key -> node
    std::vector<std::string> barrier;
    // SPEC §13: seconds the step may run before it is timed out, and
    // seconds its job waits after the transition that created it (unset:
    // none). Stored as integers when whole, so `timeout: 600` in a file and
    // .timeout(600) give the same text.
    std::optional<double> timeout;
    std::optional<double> delay;
    // SPEC §17: at most `limit` executions of this step with the same key
    // value in progress at once, across every host.
    std::optional<ConcurrencyLimit> concurrency;
    // SPEC §17: at most `limit` attempts of this step with the same key
    // value start in any `per` seconds, across every host.
    std::optional<RateLimit> rate_limit;
    // SPEC §18: what an `await` edge leaving this node waits for.
    std::optional<Await> await;
    // SPEC §18: an `invoke` edge leaving this node goes on when the child
    // halts ("continue"); "" halts the branch.
    std::string on_child_halt;
  };

  explicit PipelineGraph(std::string name) : name_(std::move(name)) {
    if (name_.empty()) throw PipelineError("a pipeline needs a non-empty name");
  }

  const std::string& name() const { return name_; }
  bool empty() const { return order_.empty(); }

  // Creates a node of class `klass` (already checked) and returns its name.
  std::string add_node(const std::string& klass) {
    std::size_t ordinal = order_.size();
    std::string name = node_name(name_, ordinal, klass, 0);
    for (std::size_t attempt = 1; nodes_.count(name); ++attempt) name = node_name(name_, ordinal, klass, attempt);
    order_.push_back(name);
    nodes_[name].klass = klass;
    return name;
  }

  // Gives every node of `ends` the same edge.
  void link(const std::vector<std::string>& ends, const std::string& type, const std::vector<std::string>& to,
            const Routes& routes = {}, const std::vector<std::string>& barrier = {}) {
    for (const auto& end : ends) {
      Node& node = nodes_.at(end);
      node.type = type;
      node.to = to;
      node.routes = routes;
      node.barrier = barrier;
      node.await.reset();
      node.on_child_halt.clear();
    }
  }

  // What the `invoke` edges leaving `nodes` do when the child halts.
  void set_invoke(const std::vector<std::string>& nodes, const Invoke& options) {
    if (options.on_child_halt != "halt" && options.on_child_halt != "continue") {
      throw PipelineError("'invoke' takes 'on_child_halt: halt' or 'on_child_halt: continue', not '" +
                          options.on_child_halt + "'");
    }
    for (const auto& name : nodes) nodes_.at(name).on_child_halt = options.on_child_halt == "continue" ? "continue" : "";
  }

  // The event the `await` edges leaving `nodes` wait for.
  void set_await(const std::vector<std::string>& nodes, const Await& spec) {
    check_await(spec, [](const std::string& rule) { throw PipelineError(rule); });
    check_key_pointer("await", spec.match, "match");
    for (const auto& name : nodes) nodes_.at(name).await = spec;
  }

  // Sets a step option (`what`: "timeout" or "delay") on every node of
  // `nodes`: a positive, finite number of seconds, at most a year, given
  // once per step.
  void set_option(const std::vector<std::string>& nodes, const char* what, double seconds) {
    if (!(seconds > 0) || seconds > kMaxOptionSeconds) {
      throw PipelineError(std::string("'") + what + "' must be a number of seconds > 0 and <= " +
                          std::to_string(static_cast<long long>(kMaxOptionSeconds)));
    }
    for (const auto& name : nodes) {
      Node& node = nodes_.at(name);
      std::optional<double>& slot = std::string(what) == "timeout" ? node.timeout : node.delay;
      if (slot) throw PipelineError(std::string("'") + what + "' is given twice for step " + node.klass);
      slot = seconds;
    }
  }

  // Sets the concurrency limit of every node of `nodes`, once per step.
  void set_concurrency(const std::vector<std::string>& nodes, long long limit, const std::string& key) {
    check_concurrency(limit, key);
    for (const auto& name : nodes) {
      Node& node = nodes_.at(name);
      if (node.concurrency) throw PipelineError("'concurrency' is given twice for step " + node.klass);
      node.concurrency = ConcurrencyLimit{limit, key};
    }
  }

  // The pipeline's own limit: every step without its own counts against it.
  void set_pipeline_concurrency(long long limit, const std::string& key) {
    if (concurrency_) throw PipelineError("the pipeline's 'concurrency' is given twice");
    check_concurrency(limit, key);
    concurrency_ = ConcurrencyLimit{limit, key};
  }

  // Sets the rate limit of every node of `nodes`, once per step.
  void set_rate_limit(const std::vector<std::string>& nodes, long long limit, double per, const std::string& key) {
    check_rate_limit(limit, per, key);
    for (const auto& name : nodes) {
      Node& node = nodes_.at(name);
      if (node.rate_limit) throw PipelineError("'rate_limit' is given twice for step " + node.klass);
      node.rate_limit = RateLimit{limit, per, key};
    }
  }

  // The pipeline's own rate limit: every step without its own counts
  // against it.
  void set_pipeline_rate_limit(long long limit, double per, const std::string& key) {
    if (rate_limit_) throw PipelineError("the pipeline's 'rate_limit' is given twice");
    check_rate_limit(limit, per, key);
    rate_limit_ = RateLimit{limit, per, key};
  }

  void set_on_halt(const std::string& klass) {
    if (on_halt_) throw PipelineError("'on_halt' is given twice (a pipeline has one on-halt step)");
    on_halt_ = klass;
  }

  void add_schedule(Schedule schedule) {
    detail::check_schedule(schedule, [](const std::string& rule) { throw PipelineError(rule); });
    if (schedule.name.empty()) schedule.name = schedule.cron;
    for (const Schedule& s : schedules_) {
      if (s.name == schedule.name) {
        throw PipelineError("two schedules are named '" + schedule.name +
                            "' (give each its own 'name'; it defaults to the cron text)");
      }
    }
    schedules_.push_back(std::move(schedule));
  }

  void set_priority(long long priority) {
    if (priority_) throw PipelineError("'priority' is given twice (a pipeline has one priority)");
    if (priority < 0 || priority > 9) {
      throw PipelineError("'priority' must be a whole number from 0 (first) to 9, not " + std::to_string(priority));
    }
    priority_ = static_cast<int>(priority);
  }

  // Built from Json::Array/Object values constructed in place: GCC 12
  // reports a false -Wmaybe-uninitialized for Json temporaries moved into
  // push_back here, which would break plugins built with -Werror.
  Json to_json() const {
    Json::Object metadata;
    if (on_halt_) metadata.emplace("on_halt", Json::Object{{"klass", Json(*on_halt_)}});
    if (priority_) metadata.emplace("priority", Json(static_cast<std::int64_t>(*priority_)));
    if (concurrency_) metadata.emplace("concurrency", limit_json(*concurrency_));
    if (rate_limit_) metadata.emplace("rate_limit", limit_json(*rate_limit_));
    if (!schedules_.empty()) {
      Json::Array schedules;
      for (const Schedule& s : schedules_) schedules.push_back(detail::schedule_json(s));
      metadata.emplace("schedules", std::move(schedules));
    }
    Json::Array nodes;
    Json::Object edges;
    for (const auto& name : order_) {
      nodes.emplace_back(name);
      const Node& node = nodes_.at(name);
      Json::Object entry;
      entry.emplace("klass", node.klass);
      if (node.timeout) entry.emplace("timeout", seconds_json(*node.timeout));
      if (node.delay) entry.emplace("delay", seconds_json(*node.delay));
      if (node.concurrency) entry.emplace("concurrency", limit_json(*node.concurrency));
      if (node.rate_limit) entry.emplace("rate_limit", limit_json(*node.rate_limit));
      if (!node.type.empty()) {
        entry.emplace("type", node.type);
        if (node.type == "divert") {
          Json::Object to;
          for (const auto& [key, target] : node.routes) to.emplace(key, target);
          entry.emplace("to", std::move(to));
        } else {
          entry.emplace("to", strings(node.to));
        }
        if (node.barrier.size() == 1) {
          entry.emplace("barrier_node", node.barrier.front());
        } else if (!node.barrier.empty()) {
          entry.emplace("barrier_node", strings(node.barrier));
        }
        if (node.await) entry.emplace("await", await_json(*node.await));
        if (!node.on_child_halt.empty()) entry.emplace("on_child_halt", node.on_child_halt);
      }
      edges.emplace(name, std::move(entry));
    }
    Json::Object doc;
    doc.emplace("pipeline", name_);
    doc.emplace("metadata", std::move(metadata));
    doc.emplace("nodes", std::move(nodes));
    doc.emplace("edges", std::move(edges));
    return Json(std::move(doc));
  }

 private:
  static constexpr double kMaxOptionSeconds = 366.0 * 24 * 3600;

  static Json seconds_json(double seconds) {
    double whole = static_cast<double>(static_cast<std::int64_t>(seconds));
    return whole == seconds ? Json(static_cast<std::int64_t>(seconds)) : Json(seconds);
  }

  static Json limit_json(const ConcurrencyLimit& c) {
    Json::Object out;
    out.emplace("limit", Json(static_cast<std::int64_t>(c.limit)));
    if (!c.key.empty()) out.emplace("key", c.key);
    return Json(std::move(out));
  }

  static Json limit_json(const RateLimit& r) {
    Json::Object out;
    out.emplace("limit", Json(static_cast<std::int64_t>(r.limit)));
    out.emplace("per", seconds_json(r.per));
    if (!r.key.empty()) out.emplace("key", r.key);
    return Json(std::move(out));
  }

  static Json::Array strings(const std::vector<std::string>& items) {
    Json::Array out;
    for (const auto& item : items) out.emplace_back(item);
    return out;
  }

  std::string name_;
  std::vector<std::string> order_;  // creation order; order_[0] is the start
  std::map<std::string, Node> nodes_;
  std::optional<std::string> on_halt_;
  std::optional<int> priority_;
  std::optional<ConcurrencyLimit> concurrency_;
  std::optional<RateLimit> rate_limit_;
  std::vector<Schedule> schedules_;
};

// Where building continues: the open ends and the open fan-outs of one
// pipeline or branch. The operations of Pipeline and Branch live here.
class Cursor {
 public:
  Cursor() = default;
  explicit Cursor(std::string end) : ends_{end}, made_{std::move(end)} {}

  const std::vector<std::string>& ends() const { return ends_; }
  void reset(std::string end) {
    ends_ = {end};
    made_ = {std::move(end)};
  }
  // The steps the latest operation named (a divide's or divert's targets):
  // what timeout() and delay() apply to.
  const std::vector<std::string>& made() const { return made_; }
  void option(PipelineGraph& g, const char* what, double seconds) {
    if (made_.empty()) throw PipelineError(std::string("'") + what + "' before 'start' (it follows a step)");
    g.set_option(made_, what, seconds);
  }
  void concurrency(PipelineGraph& g, long long limit, const std::string& key) {
    if (made_.empty()) throw PipelineError("'concurrency' before 'start' (it follows a step)");
    g.set_concurrency(made_, limit, key);
  }
  void rate_limit(PipelineGraph& g, long long limit, double per, const std::string& key) {
    if (made_.empty()) throw PipelineError("'rate_limit' before 'start' (it follows a step)");
    g.set_rate_limit(made_, limit, per, key);
  }
  // The innermost open fan-out, if any.
  std::optional<FanOut> innermost() const {
    if (open_.empty()) return std::nullopt;
    return open_.back().kind;
  }

  void chain(PipelineGraph& g, const std::string& klass) { step_on(g, "chain", klass); }
  // Like chain, but the branch parks `dampened` before `klass` runs, until
  // `ductwork resume` (SPEC §13).
  void dampen(PipelineGraph& g, const std::string& klass) { step_on(g, "dampen", klass); }
  // Like dampen, but the branch waits for an event (SPEC §18, await.hpp).
  void await(PipelineGraph& g, const std::string& klass, const Await& spec) {
    const std::vector<std::string> from = ends_;
    step_on(g, "await", klass);
    g.set_await(from, spec);
  }
  // The branch waits while pipeline `pipeline` runs as a child (SPEC §18);
  // the node made stands for the child and carries its name as klass.
  void invoke(PipelineGraph& g, const std::string& pipeline, const Invoke& options) {
    const std::vector<std::string> from = ends_;
    g.set_invoke(from, options);  // checked before anything is linked
    step_on(g, "invoke", pipeline);
    g.set_invoke(from, options);
  }

  void expand(PipelineGraph& g, const std::string& klass) {
    check_step_name(klass);
    std::string node = g.add_node(klass);
    g.link(ends_, "expand", {node});
    open_.push_back({FanOut::kExpand, ends_});
    ends_ = {node};
    made_ = ends_;
  }

  void combine(PipelineGraph& g, const std::string& klass) { fan_in(g, FanOut::kDivide, klass); }
  void collapse(PipelineGraph& g, const std::string& klass) { fan_in(g, FanOut::kExpand, klass); }
  void converge(PipelineGraph& g, const std::string& klass) { fan_in(g, FanOut::kDivert, klass); }

  inline void divide(PipelineGraph& g, const std::vector<std::string>& klasses, const BranchBlock& block);
  inline void divert(PipelineGraph& g, const Routes& routes, const BranchBlock& block);

 private:
  struct Open {
    FanOut kind;
    std::vector<std::string> sources;  // the nodes that carried the fan-out edge
  };

  // One new node on the same branch, joined from every end by `type`.
  void step_on(PipelineGraph& g, const char* type, const std::string& klass) {
    check_step_name(klass);
    std::string node = g.add_node(klass);
    g.link(ends_, type, {node});
    ends_ = {node};
    made_ = ends_;
  }

  // Pops the innermost fan-out, which must be `kind`, and joins the ends in
  // one new node.
  void fan_in(PipelineGraph& g, FanOut kind, const std::string& klass) {
    const std::string op = fan_in_name(kind);
    if (open_.empty()) throw PipelineError("'" + op + "' needs an open '" + fan_out_name(kind) + "'");
    if (open_.back().kind != kind) {
      FanOut other = open_.back().kind;
      throw PipelineError("ambiguous '" + op + "': the innermost open fan-out is " + fan_out_phrase(other) +
                          " (close it with '" + fan_in_name(other) + "' first)");
    }
    check_step_name(klass);
    std::vector<std::string> sources = open_.back().sources;
    open_.pop_back();
    std::string node = g.add_node(klass);
    // converge needs no barrier: exactly one route of a divert runs.
    g.link(ends_, op, {node}, {}, kind == FanOut::kDivert ? std::vector<std::string>{} : sources);
    ends_ = {node};
    made_ = ends_;
  }

  // Runs `block` over one Branch per target; the ends become theirs.
  inline void run_block(PipelineGraph& g, FanOut kind, const std::vector<std::string>& targets,
                        const std::vector<std::string>& labels, const BranchBlock& block);

  std::vector<std::string> ends_;
  std::vector<std::string> made_;
  std::vector<Open> open_;
};

}  // namespace detail

// One branch of a divide or divert, inside its block. It starts at the
// branch's target and supports the same operations as Pipeline (but start
// and on_halt); every fan-out it opens must be closed inside it.
class Branch {
 public:
  Branch(Branch&&) noexcept = default;
  Branch& operator=(Branch&&) noexcept = default;
  Branch(const Branch&) = delete;
  Branch& operator=(const Branch&) = delete;

  Branch& chain(const std::string& klass) {
    cursor_.chain(*graph_, klass);
    return *this;
  }
  Branch& divide(const std::vector<std::string>& klasses, const BranchBlock& block = {}) {
    cursor_.divide(*graph_, klasses, block);
    return *this;
  }
  Branch& combine(const std::string& klass) {
    cursor_.combine(*graph_, klass);
    return *this;
  }
  Branch& expand(const std::string& klass) {
    cursor_.expand(*graph_, klass);
    return *this;
  }
  Branch& collapse(const std::string& klass) {
    cursor_.collapse(*graph_, klass);
    return *this;
  }
  Branch& divert(const Routes& routes, const BranchBlock& block = {}) {
    cursor_.divert(*graph_, routes, block);
    return *this;
  }
  Branch& converge(const std::string& klass) {
    cursor_.converge(*graph_, klass);
    return *this;
  }
  Branch& dampen(const std::string& klass) {
    cursor_.dampen(*graph_, klass);
    return *this;
  }
  Branch& await(const std::string& klass, const Await& spec) {
    cursor_.await(*graph_, klass, spec);
    return *this;
  }
  Branch& invoke(const std::string& pipeline, const Invoke& options = {}) {
    cursor_.invoke(*graph_, pipeline, options);
    return *this;
  }
  Branch& timeout(double seconds) {
    cursor_.option(*graph_, "timeout", seconds);
    return *this;
  }
  Branch& delay(double seconds) {
    cursor_.option(*graph_, "delay", seconds);
    return *this;
  }
  Branch& concurrency(long long limit, const std::string& key = "") {
    cursor_.concurrency(*graph_, limit, key);
    return *this;
  }
  Branch& rate_limit(long long limit, double per, const std::string& key = "") {
    cursor_.rate_limit(*graph_, limit, per, key);
    return *this;
  }

 private:
  friend class detail::Cursor;
  Branch(detail::PipelineGraph* graph, std::string start) : graph_(graph), cursor_(std::move(start)) {}

  detail::PipelineGraph* graph_;
  detail::Cursor cursor_;
};

namespace detail {

inline void Cursor::run_block(PipelineGraph& g, FanOut kind, const std::vector<std::string>& targets,
                              const std::vector<std::string>& labels, const BranchBlock& block) {
  std::vector<Branch> branches;
  for (const auto& target : targets) branches.push_back(Branch(&g, target));
  block(branches);
  if (branches.size() != targets.size()) {
    throw PipelineError(std::string("the block of '") + fan_out_name(kind) +
                        "' must not add or remove branches");
  }
  std::vector<std::string> ends;
  for (std::size_t i = 0; i < branches.size(); ++i) {
    const Cursor& branch = branches[i].cursor_;
    if (auto open = branch.innermost()) {
      throw PipelineError("branch " + std::to_string(i + 1) + labels[i] + " of '" + fan_out_name(kind) +
                          "' leaves " + fan_out_phrase(*open) + " open (close it inside the branch)");
    }
    ends.insert(ends.end(), branch.ends().begin(), branch.ends().end());
  }
  ends_ = std::move(ends);
  made_ = targets;
}

inline void Cursor::divide(PipelineGraph& g, const std::vector<std::string>& klasses, const BranchBlock& block) {
  if (klasses.empty()) throw PipelineError("'divide' needs at least one target");
  for (const auto& klass : klasses) check_step_name(klass);
  std::vector<std::string> targets;
  for (const auto& klass : klasses) targets.push_back(g.add_node(klass));
  g.link(ends_, "divide", targets);
  open_.push_back({FanOut::kDivide, ends_});
  ends_ = targets;
  made_ = targets;
  if (block) run_block(g, FanOut::kDivide, targets, std::vector<std::string>(targets.size()), block);
}

inline void Cursor::divert(PipelineGraph& g, const Routes& routes, const BranchBlock& block) {
  std::set<std::string> keys;
  for (const auto& [key, klass] : routes) {
    if (key.empty()) throw PipelineError("a 'divert' routing key may not be empty");
    // A key is compared with a step's output string, and is stored in the
    // definition's JSON: it must be text (found by fuzzing: invalid UTF-8
    // made the canonical JSON impossible to print).
    for (std::size_t i = 0; i < key.size();) {
      std::size_t length = utf8_sequence_length(key, i);
      if (length == 0) {
        throw PipelineError("'divert' routing key '" + shown_name(key) + "' is not valid UTF-8 text");
      }
      i += length;
    }
    if (!keys.insert(key).second) {
      throw PipelineError("'divert' has the routing key '" + shown_name(key) + "' twice");
    }
    check_step_name(klass);
  }
  if (!keys.count("otherwise")) throw PipelineError("'divert' needs an 'otherwise' target");
  Routes to;
  std::vector<std::string> targets;
  std::vector<std::string> labels;
  for (const auto& [key, klass] : routes) {
    targets.push_back(g.add_node(klass));
    to.emplace_back(key, targets.back());
    labels.push_back(" ('" + key + "')");
  }
  g.link(ends_, "divert", targets, to);
  open_.push_back({FanOut::kDivert, {}});
  ends_ = targets;
  made_ = targets;
  if (block) run_block(g, FanOut::kDivert, targets, labels, block);
}

}  // namespace detail

// A pipeline definition under construction. Copyable; building the same
// operations twice gives identical JSON.
class Pipeline {
 public:
  explicit Pipeline(std::string name) : graph_(std::move(name)) {}

  const std::string& name() const { return graph_.name(); }

  // The start step: the first operation, exactly once.
  Pipeline& start(const std::string& klass) {
    if (!graph_.empty()) throw PipelineError("exactly one 'start', and it comes first");
    detail::check_step_name(klass);
    cursor_.reset(graph_.add_node(klass));
    return *this;
  }
  Pipeline& chain(const std::string& klass) {
    started("chain").chain(graph_, klass);
    return *this;
  }
  // One branch per class, in order; `block` (optional) extends the branches.
  Pipeline& divide(const std::vector<std::string>& klasses, const BranchBlock& block = {}) {
    started("divide").divide(graph_, klasses, block);
    return *this;
  }
  // Joins the branches of the innermost open divide.
  Pipeline& combine(const std::string& klass) {
    started("combine").combine(graph_, klass);
    return *this;
  }
  // Runs `klass` once per element of the ends' output (an array).
  Pipeline& expand(const std::string& klass) {
    started("expand").expand(graph_, klass);
    return *this;
  }
  // Joins the elements of the innermost open expand.
  Pipeline& collapse(const std::string& klass) {
    started("collapse").collapse(graph_, klass);
    return *this;
  }
  // Routes to one target by key; "otherwise" is required.
  Pipeline& divert(const Routes& routes, const BranchBlock& block = {}) {
    started("divert").divert(graph_, routes, block);
    return *this;
  }
  // Joins the routes of the innermost open divert.
  Pipeline& converge(const std::string& klass) {
    started("converge").converge(graph_, klass);
    return *this;
  }
  // Parks the branch `dampened` instead of running `klass`, until
  // `ductwork resume` enqueues it with [previous output, resume value].
  Pipeline& dampen(const std::string& klass) {
    started("dampen").dampen(graph_, klass);
    return *this;
  }
  // Parks the branch instead of running `klass` until an event named
  // spec.event arrives whose key matches (await.hpp), then enqueues it with
  // [previous output, event value]; `ductwork signal` delivers events.
  Pipeline& await(const std::string& klass, const Await& spec) {
    started("await").await(graph_, klass, spec);
    return *this;
  }
  // Starts pipeline `pipeline` as a child with the previous output as its
  // arguments; the branch waits (state `waiting`) until the child ends, and
  // the next step gets the child's final output (Invoke above).
  Pipeline& invoke(const std::string& pipeline, const Invoke& options = {}) {
    started("invoke").invoke(graph_, pipeline, options);
    return *this;
  }
  // Options of the step(s) the previous operation named (start, chain,
  // expand, a fan-in, dampen, await; a divide's or divert's first steps), in
  // seconds: how long each may run before it is timed out (SPEC §13), and
  // how long its job waits after the transition that creates it.
  Pipeline& timeout(double seconds) {
    started("timeout").option(graph_, "timeout", seconds);
    return *this;
  }
  Pipeline& delay(double seconds) {
    started("delay").option(graph_, "delay", seconds);
    return *this;
  }
  // At most `limit` executions of the step(s) the previous operation named
  // in progress at once across every host (SPEC §17), per value of `key`, a
  // JSON Pointer into the step's arguments ("/0/customer_id"; empty: one
  // limit for the step).
  Pipeline& concurrency(long long limit, const std::string& key = "") {
    started("concurrency").concurrency(graph_, limit, key);
    return *this;
  }
  // The same limit for the whole pipeline (metadata.concurrency): every
  // step without a concurrency of its own counts against it, whatever the
  // step. At most once.
  Pipeline& pipeline_concurrency(long long limit, const std::string& key = "") {
    graph_.set_pipeline_concurrency(limit, key);
    return *this;
  }
  // At most `limit` attempts of the step(s) the previous operation named
  // start in any `per` seconds across every host (SPEC §17), per value of
  // `key` (a JSON Pointer into the step's arguments; empty: one limit for
  // the step).
  Pipeline& rate_limit(long long limit, double per, const std::string& key = "") {
    started("rate_limit").rate_limit(graph_, limit, per, key);
    return *this;
  }
  // The same rate limit for the whole pipeline (metadata.rate_limit): every
  // step without a rate limit of its own counts against it. At most once.
  Pipeline& pipeline_rate_limit(long long limit, double per, const std::string& key = "") {
    graph_.set_pipeline_rate_limit(limit, per, key);
    return *this;
  }
  // The step run when the pipeline halts (metadata.on_halt); at most once.
  Pipeline& on_halt(const std::string& klass) {
    detail::check_step_name(klass);
    graph_.set_on_halt(klass);
    return *this;
  }

  // Triggers this pipeline on a cron schedule (metadata.schedules, SPEC
  // §18; schedule.hpp); any number, each with its own name.
  Pipeline& schedule(Schedule schedule) {
    graph_.add_schedule(std::move(schedule));
    return *this;
  }

  // The claim order of this pipeline's runs (metadata.priority): 0 is taken
  // first, 9 last; a trigger may give its own. At most once.
  Pipeline& priority(long long priority) {
    graph_.set_priority(priority);
    return *this;
  }

  // The canonical definition with its top-level "pipeline" name. Fan-outs
  // still open simply end their branches.
  Json to_json() const {
    if (graph_.empty()) {
      throw PipelineError("pipeline " + name() + " has no 'start' (exactly one 'start', and it comes first)");
    }
    return graph_.to_json();
  }
  // to_json() as compact text with sorted keys.
  std::string dump() const { return to_json().dump(); }

 private:
  detail::Cursor& started(const char* op) {
    if (graph_.empty()) {
      throw PipelineError(std::string("'") + op + "' before 'start' (exactly one 'start', and it comes first)");
    }
    return cursor_;
  }

  detail::PipelineGraph graph_;
  detail::Cursor cursor_;
};

namespace detail {
// What DUCTWORK_PIPELINE's producer returns; takes the Pipeline by reference
// so the expression may be a temporary's chained call.
inline std::string pipeline_text(const Pipeline& pipeline) { return pipeline.dump(); }
}  // namespace detail

}  // namespace ductwork

#endif  // DUCTWORK_PIPELINE_HPP
