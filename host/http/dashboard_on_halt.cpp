#include "http/dashboard_on_halt.h"

#include "http/dashboard_parts.h"

namespace ductwork::http {

std::string on_halt_section(const std::optional<OnHaltRecord>& call) {
  using parts::badge;
  using parts::or_dash;
  if (!call) return "";
  std::string out = "<h2>on_halt</h2><p class=\"on-halt\"><code>" + escape_html(call->klass) + "</code> " +
                    badge(call->status) + " started " + escape_html(call->started_at) + ", finished " +
                    or_dash(call->completed_at) + "</p>";
  if (call->error_message) {
    out += "<p class=\"error\">" + (call->error_klass ? "<code>" + escape_html(*call->error_klass) + "</code>: " : "") +
           escape_html(*call->error_message) + "</p>";
  }
  return out;
}

}  // namespace ductwork::http
