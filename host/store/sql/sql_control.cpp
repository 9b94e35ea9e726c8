// Operator control (SPEC §13): telling workers which of their runs were
// cancelled. (Cancel and resume are engine/control.cpp on the write port.)
#include "store/sql/sql_store.h"

namespace ductwork::sql {
std::vector<std::string> SqlStore::cancelled_runs(const std::vector<std::string>& run_ids) {
  std::vector<std::string> out;
  if (run_ids.empty()) return out;
  auto held = lock();
  auto q = conn_.prepare("SELECT id FROM runs WHERE status = 'cancelled' AND id IN (" +
                         conn_.dialect().json_text_list("?1") + ")");
  q.bind(1, json_string_list(run_ids));
  while (q.step()) out.push_back(q.text(0));
  return out;
}

}  // namespace ductwork::sql
