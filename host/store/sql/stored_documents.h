#pragma once

#include <string>

namespace ductwork::sql {

// The stored form of a job's arguments (jobs.input_args) and of a step's
// return value (jobs.output_payload): {"args": [...]} and {"payload": ...},
// read back with `input_args -> 'args'` and `output_payload -> 'payload'`.
// The JSON inside is the engine's own serialisation, written as it is.
inline std::string args_document(const std::string& args_json) { return "{\"args\":" + args_json + "}"; }
inline std::string payload_document(const std::string& value_json) { return "{\"payload\":" + value_json + "}"; }

}  // namespace ductwork::sql
