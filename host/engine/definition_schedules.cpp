#include "engine/definition_schedules.h"

#include <cerrno>
#include <cstdlib>
#include <set>

#include "util/json.h"

namespace ductwork {
namespace {

const char* const kForm =
    "each entry of 'schedules' is a map such as {cron: \"30 2 * * *\", timezone: Europe/Berlin, args: [...]}";

// A plain scalar as JSON reads it where it can (YAML 1.2's core schema):
// an exact integer, a number, a boolean; otherwise its text.
Json plain_scalar(const std::string& text) {
  if (text == "true" || text == "True" || text == "TRUE") return Json(true);
  if (text == "false" || text == "False" || text == "FALSE") return Json(false);
  if (text == "null" || text == "Null" || text == "NULL" || text == "~") return Json();
  if (!text.empty()) {
    errno = 0;
    char* end = nullptr;
    const long long i = std::strtoll(text.c_str(), &end, 10);
    if (errno == 0 && end == text.c_str() + text.size()) return Json(static_cast<int64_t>(i));
    errno = 0;
    const double d = std::strtod(text.c_str(), &end);
    const bool numeric = text.find_first_not_of("0123456789+-.eE") == std::string::npos;
    if (numeric && errno == 0 && end == text.c_str() + text.size()) return Json(d);
  }
  return Json(text);
}

Json yaml_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return Json();
    case YAML::NodeType::Scalar:
      return node.Tag() == "!" ? Json(node.Scalar()) : plain_scalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& item : node) out.as_array().push_back(yaml_json(item));
      return out;
    }
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) throw ScheduleEntryError{kv.first, "a key inside 'args' must be a text"};
        out[kv.first.Scalar()] = yaml_json(kv.second);
      }
      return out;
    }
  }
  return Json();
}

std::string text_of(const YAML::Node& value, const std::string& key) {
  if (!value.IsScalar() || value.Scalar().empty()) {
    throw ScheduleEntryError{value, "a schedule's '" + key + "' takes a text"};
  }
  return value.Scalar();
}

}  // namespace

std::vector<Schedule> read_schedules(const YAML::Node& list) {
  if (!list.IsSequence()) throw ScheduleEntryError{list, "'schedules' is a list; " + std::string(kForm)};
  std::vector<Schedule> out;
  for (const auto& entry : list) {
    if (!entry.IsMap()) throw ScheduleEntryError{entry, kForm};
    Schedule s;
    bool has_cron = false;
    for (const auto& kv : entry) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      if (key == "cron") {
        s.cron = text_of(kv.second, key);
        has_cron = true;
      } else if (key == "timezone") {
        s.timezone = text_of(kv.second, key);
      } else if (key == "name") {
        s.name = text_of(kv.second, key);
      } else if (key == "overlap") {
        s.overlap = text_of(kv.second, key);
      } else if (key == "catch_up") {
        s.catch_up = text_of(kv.second, key);
      } else if (key == "catch_up_limit") {
        const Json n = kv.second.IsScalar() && kv.second.Tag() != "!" ? plain_scalar(kv.second.Scalar()) : Json();
        if (!n.is_int64()) {
          throw ScheduleEntryError{kv.second, "a schedule's 'catch_up_limit' takes a whole number, e.g. 24"};
        }
        s.catch_up_limit = n.as_int();
      } else if (key == "args") {
        s.args = yaml_json(kv.second);
        if (!s.args.is_array()) {
          throw ScheduleEntryError{kv.second, "a schedule's 'args' must be a list (the trigger's arguments), e.g. "
                                              "'args: [{region: eu}]'"};
        }
      } else {
        throw ScheduleEntryError{kv.first, "unknown schedule key '" + key +
                                               "' (expected cron, timezone, args, name, overlap, catch_up and "
                                               "catch_up_limit)"};
      }
    }
    if (!has_cron) throw ScheduleEntryError{entry, "a schedule needs 'cron', e.g. 'cron: \"30 2 * * *\"'"};
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ductwork
