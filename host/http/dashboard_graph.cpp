#include "http/dashboard_graph.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "http/html.h"

namespace ductwork::http {
namespace {

constexpr int kBoxWidth = 230;
constexpr int kBoxHeight = 58;
constexpr int kColumnGap = 70;
constexpr int kRowGap = 22;
constexpr int kMargin = 16;

}  // namespace

std::string status_class(const std::vector<NodeStatusCount>& counts) {
  std::set<std::string> statuses;
  for (const auto& c : counts) {
    if (c.count > 0) statuses.insert(c.status);
  }
  if (statuses.empty()) return "idle";
  if (statuses.count("failed") || statuses.count("halted")) return "failed";
  for (const char* s : {"pending", "in_progress", "advancing", "waiting"}) {
    if (statuses.count(s)) return "running";
  }
  if (statuses.count("dampened")) return "dampened";
  if (statuses.count("cancelled")) return "cancelled";
  return "completed";
}

std::string definition_svg(const Definition& definition, const std::vector<NodeStatusCount>& counts,
                           const std::vector<BranchStatusCount>& branches) {
  std::map<std::string, std::vector<NodeStatusCount>> by_node;
  for (const auto& c : counts) by_node[c.node].push_back(c);
  std::map<std::string, int64_t> parked;  // node -> branches dampened there
  for (const auto& b : branches) {
    if (b.status == "dampened" && b.node) parked[*b.node] += b.count;
  }
  // Depth: the longest path from the start, so every edge points right
  // (a node reached twice sits after both of its sources).
  std::map<std::string, int> depth;
  std::function<void(const std::string&, int, std::set<std::string>&)> visit =
      [&](const std::string& node, int d, std::set<std::string>& path) {
        if (path.count(node) || (depth.count(node) && depth[node] >= d)) return;
        depth[node] = d;
        path.insert(node);
        auto edge = definition.edges.find(node);
        if (edge != definition.edges.end()) {
          for (const auto& to : edge->second.to) visit(to, d + 1, path);
        }
        path.erase(node);
      };
  std::set<std::string> path;
  if (!definition.nodes.empty()) visit(definition.start_node(), 0, path);
  int columns = 0;
  for (const auto& node : definition.nodes) {
    if (!depth.count(node)) depth[node] = 0;  // unreachable: drawn at the left
    columns = std::max(columns, depth[node] + 1);
  }
  std::map<int, int> rows_in;
  std::map<std::string, std::pair<int, int>> at;  // node -> (x, y)
  int max_rows = 0;
  for (const auto& node : definition.nodes) {
    int column = depth[node];
    int row = rows_in[column]++;
    max_rows = std::max(max_rows, row + 1);
    at[node] = {kMargin + column * (kBoxWidth + kColumnGap), kMargin + row * (kBoxHeight + kRowGap)};
  }
  const int width = kMargin * 2 + columns * kBoxWidth + std::max(columns - 1, 0) * kColumnGap;
  const int height = kMargin * 2 + max_rows * kBoxHeight + std::max(max_rows - 1, 0) * kRowGap;
  std::string svg = "<svg class=\"graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
                    "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " +
                    std::to_string(height) + "\" role=\"img\" aria-label=\"" + escape_html(definition.pipeline) +
                    " graph\">"
                    "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
                    "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" "
                    "fill=\"#667\"/></marker></defs>";
  for (const auto& [node, edge] : definition.edges) {
    const auto [x1, y1] = at[node];
    for (const auto& to : edge.to) {
      const auto [x2, y2] = at[to];
      const int sx = x1 + kBoxWidth, sy = y1 + kBoxHeight / 2, tx = x2, ty = y2 + kBoxHeight / 2;
      const int mid = tx > sx ? (sx + tx) / 2 : sx + kColumnGap / 2;
      svg += "<path class=\"edge\" d=\"M " + std::to_string(sx) + " " + std::to_string(sy) + " C " + std::to_string(mid) +
             " " + std::to_string(sy) + ", " + std::to_string(mid) + " " + std::to_string(ty) + ", " +
             std::to_string(tx) + " " + std::to_string(ty) + "\" marker-end=\"url(#arrow)\"/>";
      svg += "<text class=\"edge-label\" x=\"" + std::to_string(mid) + "\" y=\"" +
             std::to_string((sy + ty) / 2 - 4) + "\" text-anchor=\"middle\">" + escape_html(edge.type) + "</text>";
    }
  }
  for (const auto& node : definition.nodes) {
    const auto [x, y] = at[node];
    const auto& node_counts = by_node[node];
    int64_t total = 0;
    std::string detail;
    for (const auto& c : node_counts) total += c.count;
    for (const auto& c : node_counts) detail += (detail.empty() ? "" : ", ") + grouped(c.count) + " " + c.status;
    std::string colour = status_class(node_counts);
    if (auto it = parked.find(node); it != parked.end()) {
      // Its steps completed; the branch waits for a resume after them.
      detail = grouped(it->second) + " parked" + (detail.empty() ? "" : ", " + detail);
      if (colour == "completed") colour = "dampened";
      colour += " parked";
    }
    const Edge* edge = definition.edges.count(node) ? &definition.edges.at(node) : nullptr;
    const std::string klass = edge ? edge->klass : node.substr(0, node.rfind('.'));
    const std::string title = klass + (total > 1 ? " \u00d7 " + grouped(total) : "");
    svg += "<g class=\"node " + colour + "\" data-node=\"" + escape_html(node) + "\"><title>" +
           escape_html(node + (detail.empty() ? ": not run" : ": " + detail)) + "</title><rect x=\"" +
           std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" + std::to_string(kBoxWidth) +
           "\" height=\"" + std::to_string(kBoxHeight) + "\" rx=\"7\"/><text class=\"node-title\" x=\"" +
           std::to_string(x + 10) + "\" y=\"" + std::to_string(y + 22) + "\">" + escape_html(truncated(title, 30)) +
           "</text><text class=\"node-detail\" x=\"" + std::to_string(x + 10) + "\" y=\"" + std::to_string(y + 43) +
           "\">" + escape_html(truncated(detail.empty() ? "not run" : detail, 40)) + "</text></g>";
  }
  svg += "</svg>";
  return svg;
}

}  // namespace ductwork::http
