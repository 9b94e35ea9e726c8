#include "engine/definition_compiler.h"

#include <ductwork/pipeline.hpp>

#include <type_traits>
#include <vector>

#include "engine/definition_schedules.h"

namespace ductwork {
namespace {

// Compiles one file by replaying its entries on the SDK's builder, so a file
// and the same pipeline written in C++ give the same graph and node names.
// The builder enforces the rules; this class adds the file, the line of the
// offending entry and the pipeline to its messages.
class Compiler {
 public:
  explicit Compiler(std::string source) : source_(std::move(source)) {}

  Definition compile(const YAML::Node& root) {
    if (!root.IsMap()) fail(root, "a definition file must be a map with 'pipeline' and 'steps'");
    for (const auto& kv : root) {
      std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      if (key != "pipeline" && key != "steps" && key != "on_halt" && key != "priority" && key != "concurrency" &&
          key != "rate_limit" && key != "schedules") {
        fail(kv.first, "unknown key '" + key +
                           "' (expected 'pipeline', 'steps', 'on_halt', 'priority', 'concurrency', 'rate_limit' "
                           "and 'schedules')");
      }
    }
    if (!root["pipeline"] || !root["pipeline"].IsScalar() || root["pipeline"].Scalar().empty()) {
      fail(root, "'pipeline' must name the pipeline");
    }
    pipeline_ = root["pipeline"].Scalar();
    guarded(root["pipeline"], [&] { detail::check_pipeline_name(pipeline_); });
    const YAML::Node steps = root["steps"];
    if (!steps || !steps.IsSequence() || steps.size() == 0) {
      fail(steps ? steps : root, "'steps' must be a non-empty list starting with '- start: StepName'");
    }

    Pipeline pipeline(pipeline_);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const YAML::Node entry = steps[i];
      if (!entry.IsMap() || entry.size() == 0) {
        fail(entry, "each entry of 'steps' is one 'keyword: StepName' pair");
      }
      if (i == 0) {
        if (keyword(entry) != "start") {
          fail(entry, "the first entry must be 'start' (exactly one 'start', and it comes first)");
        }
        std::string klass = step_name(keyword_value(entry), "start", entry);
        guarded(entry, [&] { pipeline.start(klass); });
        apply_options(pipeline, entry);
      } else {
        apply(pipeline, entry);
      }
    }
    for (const auto& kv : root) {
      if (kv.first.Scalar() == "priority") {
        long long priority = -1;
        if (kv.second.IsScalar()) {
          try {
            priority = kv.second.as<long long>();
          } catch (const YAML::Exception&) {
            priority = -1;
          }
        }
        if (priority < 0 || priority > 9) {
          fail(kv.second.IsDefined() && !kv.second.IsNull() ? kv.second : kv.first,
               "'priority' takes a whole number from 0 (claimed first) to 9, e.g. 'priority: 3'");
        }
        guarded(kv.first, [&] { pipeline.priority(priority); });
      }
      if (kv.first.Scalar() == "concurrency") {
        const ConcurrencyLimit limit = read_concurrency(kv.first, kv.second, "the pipeline's ");
        pipeline.pipeline_concurrency(limit.limit, limit.key);
      }
      if (kv.first.Scalar() == "rate_limit") {
        const RateLimit limit = read_rate_limit(kv.first, kv.second, "the pipeline's ");
        pipeline.pipeline_rate_limit(limit.limit, limit.per, limit.key);
      }
      if (kv.first.Scalar() == "schedules") {
        try {
          const std::vector<Schedule> schedules = read_schedules(kv.second);
          for (size_t i = 0; i < schedules.size(); ++i) {
            const YAML::Node at = kv.second[i];
            guarded(at, [&] { pipeline.schedule(schedules[i]); });
            const std::string problem = schedule_problem(schedules[i]);
            if (!problem.empty()) fail(at, problem);
          }
        } catch (const ScheduleEntryError& e) {
          fail(e.at, e.rule);
        }
      }
      if (kv.first.Scalar() != "on_halt") continue;
      std::string klass = step_name(kv.second, "on_halt", kv.first);
      guarded(kv.first, [&] { pipeline.on_halt(klass); });
    }
    return Definition::from_json(parse_json(pipeline.dump()), pipeline_, source_);
  }

 private:
  [[noreturn]] void fail(const YAML::Node& at, const std::string& rule) const {
    std::ostringstream msg;
    msg << source_;
    if (at.IsDefined() && at.Mark().line >= 0) msg << ":" << at.Mark().line + 1;
    if (!pipeline_.empty()) msg << ": pipeline " << detail::shown_name(pipeline_);
    msg << ": " << rule;
    throw DefinitionError(msg.str());
  }

  // Runs one builder call, reporting a rule it rejects at `at`'s line.
  template <class F>
  void guarded(const YAML::Node& at, F&& call) const {
    try {
      call();
    } catch (const PipelineError& e) {
      fail(at, e.what());
    }
  }

  static bool is_option(const std::string& key) {
    return key == "timeout" || key == "delay" || key == "concurrency" || key == "rate_limit" || is_await_option(key) ||
           key == "on_child_halt";
  }
  // The keys beside `await: STEP` (SPEC §18); its `timeout` is the wait's.
  static bool is_await_option(const std::string& key) {
    return key == "event" || key == "match" || key == "on_timeout";
  }

  // The event an `await:` entry waits for: `event: NAME`, `match: /POINTER`,
  // `timeout: SECONDS`, `on_timeout: halt|continue`; the builder checks them.
  Await read_await(const YAML::Node& entry) const {
    Await out;
    const YAML::Node event = entry["event"];
    if (!event || !event.IsScalar()) fail(entry, "'await' needs 'event: NAME', the event it waits for");
    out.event = event.Scalar();
    if (const YAML::Node match = entry["match"]) {
      if (!match.IsScalar()) fail(match, "'match' takes a JSON Pointer into the previous output, e.g. '/order_id'");
      out.match = match.Scalar();
    }
    if (const YAML::Node timeout = entry["timeout"]) {
      bool number = timeout.IsScalar();
      if (number) {
        try {
          out.timeout = timeout.as<double>();
        } catch (const YAML::Exception&) {
          number = false;
        }
      }
      if (!number) fail(timeout, "the 'timeout' of 'await' takes a number of seconds, e.g. 'timeout: 3600'");
    }
    if (const YAML::Node on_timeout = entry["on_timeout"]) {
      if (!on_timeout.IsScalar()) fail(on_timeout, "'on_timeout' takes halt or continue");
      out.on_timeout = on_timeout.Scalar();
    }
    return out;
  }

  // `concurrency: {limit: N, key: /POINTER}` (or `concurrency: N`), checked
  // by the builder's rules; `whose` ("step Charge: ") leads each message.
  ConcurrencyLimit read_concurrency(const YAML::Node& at, const YAML::Node& value, const std::string& whose) const {
    const std::string form = whose + "'concurrency' takes {limit: N, key: /POINTER} (or just N), e.g. "
                                     "'concurrency: {limit: 2, key: /0/customer_id}'";
    ConcurrencyLimit out;
    // (Node::reset, not assignment: assigning a Node writes through to the
    // node it refers to.)
    YAML::Node limit;
    limit.reset(value);
    if (value.IsMap()) {
      for (const auto& kv : value) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
        if (key != "limit" && key != "key") fail(kv.first, whose + "'concurrency' has no '" + key + "' (limit, key)");
      }
      limit.reset(value["limit"]);
      if (const YAML::Node key = value["key"]) {
        if (!key.IsScalar()) {
          fail(key, whose + "the key of 'concurrency' must be a JSON Pointer such as /0/customer_id");
        }
        out.key = key.Scalar();
      }
    }
    bool number = limit && limit.IsScalar();
    if (number) {
      try {
        out.limit = limit.as<long long>();
      } catch (const YAML::Exception&) {
        number = false;
      }
    }
    if (!number) fail(value.IsDefined() && !value.IsNull() ? value : at, form);
    try {
      detail::check_concurrency(out.limit, out.key);
    } catch (const PipelineError& e) {
      fail(value, whose + e.what());
    }
    return out;
  }

  // `rate_limit: {limit: N, per: SECONDS, key: /POINTER}`, checked by the
  // builder's rules; `whose` ("step Charge: ") leads each message.
  RateLimit read_rate_limit(const YAML::Node& at, const YAML::Node& value, const std::string& whose) const {
    const std::string form = whose + "'rate_limit' takes {limit: N, per: SECONDS, key: /POINTER}, e.g. "
                                     "'rate_limit: {limit: 50, per: 1, key: /0/customer_id}'";
    if (!value.IsMap()) fail(value.IsDefined() && !value.IsNull() ? value : at, form);
    RateLimit out;
    for (const auto& kv : value) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      if (key != "limit" && key != "per" && key != "key") {
        fail(kv.first, whose + "'rate_limit' has no '" + key + "' (limit, per, key)");
      }
    }
    if (const YAML::Node key = value["key"]) {
      if (!key.IsScalar()) fail(key, whose + "the key of 'rate_limit' must be a JSON Pointer such as /0/customer_id");
      out.key = key.Scalar();
    }
    const YAML::Node limit = value["limit"];
    const YAML::Node per = value["per"];
    bool numbers = limit && limit.IsScalar() && per && per.IsScalar();
    if (numbers) {
      try {
        out.limit = limit.as<long long>();
        out.per = per.as<double>();
      } catch (const YAML::Exception&) {
        numbers = false;
      }
    }
    if (!numbers) fail(value, form);
    try {
      detail::check_rate_limit(out.limit, out.per, out.key);
    } catch (const PipelineError& e) {
      fail(value, whose + e.what());
    }
    return out;
  }

  // The steps an entry names, for messages: "step Charge: ".
  std::string entry_steps(const YAML::Node& entry) const {
    const YAML::Node value = keyword_value(entry);
    if (value.IsScalar()) return "step " + detail::shown_name(value.Scalar()) + ": ";
    return "the steps of '" + keyword(entry) + "': ";
  }

  // The one key of an entry that is not a step option (timeout, delay).
  YAML::Node keyword_key(const YAML::Node& entry) const {
    YAML::Node found;
    int keywords = 0;
    for (const auto& kv : entry) {
      if (!kv.first.IsScalar()) fail(entry, "a keyword must be a plain word");
      if (is_option(kv.first.Scalar())) continue;
      if (++keywords == 1) found = kv.first;
    }
    if (keywords != 1) {
      fail(entry, keywords == 0 ? (entry["timeout"] || entry["delay"]
                                       ? "an entry with 'timeout' or 'delay' also needs its 'keyword: StepName'"
                                       : "an entry with 'concurrency' or 'rate_limit' also needs its "
                                         "'keyword: StepName'")
                                : "each entry of 'steps' is one 'keyword: StepName' pair");
    }
    return found;
  }
  std::string keyword(const YAML::Node& entry) const { return keyword_key(entry).Scalar(); }
  YAML::Node keyword_value(const YAML::Node& entry) const { return entry[keyword_key(entry).Scalar()]; }

  // `timeout: SECONDS` / `delay: SECONDS` beside an entry's keyword: options
  // of the step(s) that entry named (SPEC §13).
  template <class Target>
  void apply_options(Target& target, const YAML::Node& entry) const {
    const bool awaits = keyword(entry) == "await";
    for (const auto& kv : entry) {
      const std::string key = kv.first.Scalar();
      if (!is_option(key)) continue;
      if (key == "on_child_halt") {
        if (keyword(entry) != "invoke") fail(kv.first, "'on_child_halt' goes with 'invoke: PipelineName' only");
        continue;  // the invoke's (read_invoke)
      }
      if (is_await_option(key) && !awaits) fail(kv.first, "'" + key + "' goes with 'await: StepName' only");
      if (awaits && (key == "timeout" || is_await_option(key))) continue;  // the wait's (read_await)
      if (key == "concurrency") {
        const ConcurrencyLimit limit = read_concurrency(kv.first, kv.second, entry_steps(entry));
        guarded(kv.first, [&] { target.concurrency(limit.limit, limit.key); });
        continue;
      }
      if (key == "rate_limit") {
        const RateLimit limit = read_rate_limit(kv.first, kv.second, entry_steps(entry));
        guarded(kv.first, [&] { target.rate_limit(limit.limit, limit.per, limit.key); });
        continue;
      }
      double seconds = 0;
      bool number = kv.second.IsScalar();
      if (number) {
        try {
          seconds = kv.second.as<double>();
        } catch (const YAML::Exception&) {
          number = false;
        }
      }
      if (!number) fail(kv.second, "'" + key + "' takes a number of seconds, e.g. '" + key + ": 30'");
      guarded(kv.first, [&] {
        if (key == "timeout") target.timeout(seconds);
        if (key == "delay") target.delay(seconds);
      });
    }
  }

  // `node` must be one step name; an empty value has no useful line of its
  // own, so it is reported at `owner` (its entry or key).
  std::string step_name(const YAML::Node& node, const std::string& keyword, const YAML::Node& owner) const {
    if (!node.IsScalar() || node.Scalar().empty()) {
      fail(node.IsDefined() && !node.IsNull() ? node : owner, "'" + keyword + "' takes one step name");
    }
    guarded(node, [&] { detail::check_step_name(node.Scalar()); });
    return node.Scalar();
  }

  // The first step of a branch: the branch itself when it is a name, else
  // the first element of its list.
  std::string branch_start(const YAML::Node& branch, const std::string& keyword) const {
    if (branch.IsScalar()) return step_name(branch, keyword, branch);
    if (!branch.IsSequence() || branch.size() == 0) {
      fail(branch, "a branch of '" + keyword + "' is a step name or a list starting with one");
    }
    if (!branch[0].IsScalar()) {
      fail(branch[0], "a branch list starts with a bare step name (the branch's first step)");
    }
    return step_name(branch[0], keyword, branch);
  }

  // Replays the rest of each branch list on the builder's Branches.
  BranchBlock branch_block(std::vector<YAML::Node> branches) const {
    return [this, branches](std::vector<Branch>& built) {
      for (std::size_t i = 0; i < branches.size(); ++i) {
        if (!branches[i].IsSequence()) continue;
        for (std::size_t j = 1; j < branches[i].size(); ++j) apply(built[i], branches[i][j]);
      }
    };
  }

  // One entry after the start, on the pipeline or a branch (Target is
  // Pipeline or Branch). Inside a branch a bare name means chain.
  template <class Target>
  void apply(Target& target, const YAML::Node& entry) const {
    constexpr bool kInBranch = std::is_same_v<Target, Branch>;
    if (kInBranch && entry.IsScalar()) {
      std::string klass = step_name(entry, "chain", entry);
      guarded(entry, [&] { target.chain(klass); });
      return;
    }
    if (!entry.IsMap() || entry.size() == 0) {
      fail(entry, kInBranch ? "each later entry of a branch is a step name (chain) or one 'keyword: StepName' pair"
                            : "each entry of 'steps' is one 'keyword: StepName' pair");
    }
    const std::string kw = keyword(entry);
    const YAML::Node value = keyword_value(entry);
    if (kw == "start") fail(entry, "exactly one 'start', and it comes first");
    if (kw == "chain" || kw == "combine" || kw == "expand" || kw == "collapse" || kw == "converge" ||
        kw == "dampen") {
      std::string klass = step_name(value, kw, entry);
      guarded(entry, [&] {
        if (kw == "chain") target.chain(klass);
        if (kw == "combine") target.combine(klass);
        if (kw == "expand") target.expand(klass);
        if (kw == "collapse") target.collapse(klass);
        if (kw == "converge") target.converge(klass);
        if (kw == "dampen") target.dampen(klass);
      });
    } else if (kw == "divide") {
      if (!value.IsSequence() || value.size() == 0) {
        fail(value.IsDefined() && !value.IsNull() ? value : entry,
             "'divide' takes a list of branches (each a step name or a list starting with one)");
      }
      std::vector<std::string> klasses;
      std::vector<YAML::Node> branches;
      for (const auto& branch : value) {
        klasses.push_back(branch_start(branch, kw));
        branches.push_back(branch);
      }
      guarded(entry, [&] { target.divide(klasses, branch_block(branches)); });
    } else if (kw == "divert") {
      if (!value.IsMap() || value.size() == 0) {
        fail(value.IsDefined() && !value.IsNull() ? value : entry,
             "'divert' takes a map of routing key -> branch, with an 'otherwise' key");
      }
      Routes routes;
      std::vector<YAML::Node> branches;
      for (const auto& kv : value) {
        if (!kv.first.IsScalar()) fail(kv.first, "a 'divert' routing key must be a plain string");
        routes.emplace_back(kv.first.Scalar(), branch_start(kv.second, kw));
        branches.push_back(kv.second);
      }
      guarded(entry, [&] { target.divert(routes, branch_block(branches)); });
    } else if (kw == "await") {
      std::string klass = step_name(value, kw, entry);
      const Await spec = read_await(entry);
      guarded(entry, [&] { target.await(klass, spec); });
    } else if (kw == "invoke") {
      if (!value.IsScalar() || value.Scalar().empty()) {
        fail(value.IsDefined() && !value.IsNull() ? value : entry, "'invoke' takes a pipeline name, e.g. 'invoke: Fulfil'");
      }
      Invoke options;
      if (const YAML::Node halt = entry["on_child_halt"]) {
        if (!halt.IsScalar()) fail(halt, "'on_child_halt' takes halt or continue");
        options.on_child_halt = halt.Scalar();
      }
      const std::string pipeline = value.Scalar();
      guarded(entry, [&] { target.invoke(pipeline, options); });
    } else {
      fail(entry, "unknown keyword '" + kw +
                      "' (expected chain, divide, combine, expand, collapse, divert, converge, dampen, await or "
                      "invoke)");
    }
    apply_options(target, entry);
  }

  std::string source_;
  std::string pipeline_;
};

}  // namespace

Definition compile_definition_yaml(const YAML::Node& root, const std::string& source) {
  return Compiler(source).compile(root);
}

}  // namespace ductwork
