// JSON Pointers (RFC 6901) into a document: how a concurrency limit's key
// (issue 38) finds its value in a job's arguments.
#pragma once

#include <string_view>

#include "util/json.h"

namespace ductwork {

// The value `pointer` names in `doc` ("" is the whole document), or nullptr
// when it names nothing: a member that is missing, an index past the end or
// not a plain decimal ("01", "-"), or a step into a scalar.
const Json* resolve_json_pointer(const Json& doc, std::string_view pointer);

}  // namespace ductwork
