#include "engine/trigger.h"

namespace ductwork {

TriggeredPipeline trigger_pipeline(Store& store, const Definition& definition, const json& args) {
  NewPipeline request;
  request.pipeline = definition.pipeline;
  request.definition_json = definition.canonical_text();
  request.definition_sha1 = definition.sha1();
  request.start_node = definition.start_node();
  request.start_klass = definition.edge(request.start_node).klass;
  request.args_json = args.is_array() ? args.dump() : json::array({args}).dump();
  return store.trigger(request);
}

}  // namespace ductwork
