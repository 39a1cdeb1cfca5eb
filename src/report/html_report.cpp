#include "report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <limits>

#include "ir/error.h"
#include "report/table.h"

namespace tandem {
namespace {

// Beyond this many spans the timeline draws the first ones and says so: a browser stays
// responsive, and the Chrome trace (--trace) holds them all.
constexpr size_t kMaxSpansDrawn = 20000;
constexpr double kChartWidth = 1100, kLabelWidth = 170, kRowHeight = 22;

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A colour per category, and shades by micro-batch so that the pipeline's waves show.
std::string span_colour(const TimelineSpan& span) {
  const int shade = span.microbatch >= 0 ? (span.microbatch * 37) % 60 : 0;
  if (span.category == "transfer") return format("hsl(28,85%%,%d%%)", 45 + shade / 3);
  return format("hsl(%d,60%%,48%%)", (210 + shade) % 360);
}

std::string timeline_svg(const HtmlReport& report, std::string& note) {
  const Timeline& timeline = report.timeline;
  const double end = std::max(timeline.end_seconds(), 1e-12);
  // Rows: each device's tracks first (one row per device), then each link's lanes.
  std::vector<int> row_of_track(timeline.tracks.size(), -1);
  struct Row {
    std::string label, attribute;
  };
  std::vector<Row> rows;
  for (const std::string& device : timeline.devices) {
    const int row = static_cast<int>(rows.size());
    rows.push_back({device, "data-device=\"" + escape(device) + "\""});
    for (size_t t = 0; t < timeline.tracks.size(); ++t) {
      if (timeline.tracks[t].group == device) row_of_track[t] = row;
    }
  }
  for (size_t t = 0; t < timeline.tracks.size(); ++t) {
    if (row_of_track[t] >= 0) continue;
    row_of_track[t] = static_cast<int>(rows.size());
    rows.push_back(
        {timeline.tracks[t].name, "data-link=\"" + escape(timeline.tracks[t].group) + "\""});
  }
  const double height = kRowHeight * static_cast<double>(rows.size()) + 24;
  std::string svg =
      format("<svg class=\"timeline\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
             kLabelWidth + kChartWidth + 40, height, kLabelWidth + kChartWidth + 40, height);
  std::vector<std::string> row_content(rows.size());
  const size_t drawn = std::min(timeline.spans.size(), kMaxSpansDrawn);
  for (size_t s = 0; s < drawn; ++s) {
    const TimelineSpan& span = timeline.spans[s];
    const double x = kLabelWidth + span.start_seconds / end * kChartWidth;
    const double width = std::max(span.duration_seconds / end * kChartWidth, 0.5);
    std::string detail = span.name + ": " + seconds_text(span.duration_seconds) + " from " +
                         seconds_text(span.start_seconds);
    if (span.microbatch >= 0) detail += ", micro-batch " + std::to_string(span.microbatch);
    if (span.bytes > 0) detail += ", " + human_bytes(span.bytes);
    row_content[row_of_track[span.track]] += format(
        "<rect class=\"span\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
        "fill=\"%s\"><title>%s</title></rect>",
        x, 2.0, width, kRowHeight - 4, span_colour(span).c_str(), escape(detail).c_str());
  }
  if (drawn < timeline.spans.size())
    note = format(
        "The timeline draws the first %zu of %zu spans; the Chrome trace (--trace) "
        "holds them all.",
        drawn, timeline.spans.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    svg += format("<g class=\"row\" %s transform=\"translate(0,%.1f)\">", rows[r].attribute.c_str(),
                  kRowHeight * static_cast<double>(r));
    svg += format("<rect x=\"%.0f\" y=\"1\" width=\"%.0f\" height=\"%.0f\" fill=\"%s\"/>",
                  kLabelWidth, kChartWidth, kRowHeight - 2, r % 2 ? "#f6f6f6" : "#eeeeee");
    svg +=
        format("<text x=\"4\" y=\"%.0f\">%s</text>", kRowHeight - 7, escape(rows[r].label).c_str());
    svg += row_content[r] + "</g>\n";
  }
  const double axis = kRowHeight * static_cast<double>(rows.size()) + 16;
  for (int tick = 0; tick <= 4; ++tick) {
    const double x = kLabelWidth + kChartWidth * tick / 4;
    svg += format("<text class=\"tick\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>", x,
                  axis, seconds_text(end * tick / 4).c_str());
  }
  return svg + "</svg>\n";
}

std::string bar(double fraction, const std::string& colour) {
  const double width = 300 * std::clamp(fraction, 0.0, 1.0);
  return format(
      "<svg width=\"300\" height=\"14\"><rect width=\"300\" height=\"14\" "
      "fill=\"#eee\"/><rect width=\"%.1f\" height=\"14\" fill=\"%s\"/></svg>",
      width, colour.c_str());
}

std::string utilisation_table(const HtmlReport& report, double end) {
  std::string html =
      "<table><tr><th>device</th><th>predicted busy</th><th>idle</th>"
      "<th>utilisation</th><th>memory peak</th><th>capacity</th></tr>\n";
  for (const HtmlReport::DeviceRow& row : report.devices) {
    const double used = end > 0 ? row.busy_seconds / end : 0;
    html += format(
        "<tr data-utilisation=\"%s\"><td>%s</td><td>%s</td><td>%s</td><td>%s %.0f%%"
        "</td><td>%s</td><td>%s</td></tr>\n",
        escape(row.id).c_str(), escape(row.id).c_str(), seconds_text(row.busy_seconds).c_str(),
        seconds_text(row.idle_seconds).c_str(), bar(used, "#3a7bd5").c_str(), 100 * used,
        human_bytes(row.peak_memory_bytes).c_str(),
        std::isinf(row.capacity_bytes) ? "unknown" : human_bytes(row.capacity_bytes).c_str());
  }
  html +=
      "</table>\n<table><tr><th>link</th><th>predicted bytes</th><th>busy</th>"
      "<th>utilisation</th></tr>\n";
  for (const HtmlReport::LinkRow& row : report.links) {
    if (row.bytes <= 0) continue;  // links the plan does not use
    const double used = end > 0 ? row.busy_seconds / end : 0;
    html +=
        format("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s %.0f%%</td></tr>\n",
               escape(row.name).c_str(), human_bytes(row.bytes).c_str(),
               seconds_text(row.busy_seconds).c_str(), bar(used, "#e8893a").c_str(), 100 * used);
  }
  return html + "</table>\n";
}

// One step plot per device: bytes in use over time, the capacity as a dashed line when known.
std::string memory_svg(const HtmlReport& report) {
  const Timeline& timeline = report.timeline;
  const double end = std::max(timeline.end_seconds(), 1e-12);
  std::string html;
  for (size_t d = 0; d < timeline.devices.size(); ++d) {
    double top = 0;
    std::vector<const MemorySample*> samples;
    for (const MemorySample& sample : timeline.memory) {
      if (sample.device != static_cast<int>(d)) continue;
      samples.push_back(&sample);
      top = std::max(top, sample.bytes);
    }
    if (samples.empty()) continue;
    const double peak = top;
    const double capacity = d < report.devices.size() ? report.devices[d].capacity_bytes : 0;
    const bool show_capacity = std::isfinite(capacity) && capacity > 0 && capacity < 4 * top;
    if (show_capacity) top = std::max(top, capacity);
    top = std::max(top, 1.0);
    const double width = 700, height = 90;
    std::string points;
    double last = 0;
    for (const MemorySample* sample : samples) {
      const double x = sample->time_seconds / end * width;
      points += format("%.1f,%.1f %.1f,%.1f ", x, height - last / top * height, x,
                       height - sample->bytes / top * height);
      last = sample->bytes;
    }
    points += format("%.1f,%.1f", width, height - last / top * height);
    html += format(
        "<div class=\"memory\" data-memory-device=\"%s\"><div>%s: peak %s</div>"
        "<svg width=\"%.0f\" height=\"%.0f\"><rect width=\"%.0f\" height=\"%.0f\" "
        "fill=\"#f4f4f4\"/><polyline fill=\"none\" stroke=\"#3a7bd5\" "
        "stroke-width=\"1.5\" points=\"%s\"/>",
        escape(timeline.devices[d]).c_str(), escape(timeline.devices[d]).c_str(),
        human_bytes(peak).c_str(), width, height, width, height, points.c_str());
    if (show_capacity) {
      const double y = height - capacity / top * height;
      html += format(
          "<line x1=\"0\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" "
          "stroke-dasharray=\"4 3\"><title>capacity %s</title></line>",
          width, y, y, human_bytes(capacity).c_str());
    }
    html += "</svg></div>\n";
  }
  return html.empty() ? "<p>No memory samples (the timeline was not recorded).</p>\n" : html;
}

std::string bytes_matrix(const HtmlReport& report) {
  double top = 0;
  for (const auto& row : report.device_bytes) {
    for (double bytes : row) top = std::max(top, bytes);
  }
  if (top <= 0) return "<p>No bytes move between devices.</p>\n";
  std::string html = "<table class=\"matrix\"><tr><th>from \\ to</th>";
  for (const std::string& id : report.device_ids) html += "<th>" + escape(id) + "</th>";
  html += "</tr>\n";
  for (size_t a = 0; a < report.device_bytes.size(); ++a) {
    html += "<tr><th>" + escape(report.device_ids[a]) + "</th>";
    for (size_t b = 0; b < report.device_bytes[a].size(); ++b) {
      const double bytes = report.device_bytes[a][b];
      html += format("<td style=\"background:rgba(232,137,58,%.2f)\">%s</td>", bytes / top * 0.8,
                     bytes > 0 ? human_bytes(bytes).c_str() : "");
    }
    html += "</tr>\n";
  }
  return html + "</table>\n";
}

std::string strategies_svg(const HtmlReport& report) {
  if (report.strategies.empty()) return "";
  double top = report.lower_bound;
  for (const HtmlReport::StrategyRow& row : report.strategies) {
    if (row.feasible) top = std::max(top, row.figure);
  }
  top = std::max(top, 1e-30);
  const double width = 600, row_height = 22;
  const double height = row_height * static_cast<double>(report.strategies.size()) + 20;
  std::string html = "<h2>Strategies side by side (" + escape(report.objective) + ")</h2>\n";
  html += format("<svg class=\"strategies\" width=\"%.0f\" height=\"%.0f\">", width + 420, height);
  for (size_t s = 0; s < report.strategies.size(); ++s) {
    const HtmlReport::StrategyRow& row = report.strategies[s];
    const double y = row_height * static_cast<double>(s);
    html += format("<text x=\"0\" y=\"%.0f\"%s>%s</text>", y + 15,
                   row.chosen ? " font-weight=\"bold\"" : "", escape(row.strategy).c_str());
    if (row.feasible) {
      html += format("<rect x=\"160\" y=\"%.0f\" width=\"%.1f\" height=\"16\" fill=\"%s\"/>", y + 3,
                     row.figure / top * width, row.chosen ? "#3a7bd5" : "#9bb8e0");
    }
    html += format("<text x=\"%.0f\" y=\"%.0f\">%s</text>",
                   row.feasible ? 165 + row.figure / top * width : 165.0, y + 15,
                   escape(row.text).c_str());
  }
  if (report.lower_bound > 0) {
    const double x = 160 + report.lower_bound / top * width;
    html += format(
        "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" y2=\"%.0f\" stroke=\"#c0392b\" "
        "stroke-dasharray=\"5 3\"/><text x=\"%.1f\" y=\"%.0f\" fill=\"#c0392b\">"
        "bound %s</text>",
        x, x, height - 18, x + 3, height - 4, escape(report.lower_bound_text).c_str());
  }
  return html + "</svg>\n";
}

constexpr const char* kStyle = R"(
body { font: 13px/1.4 system-ui, sans-serif; margin: 20px; color: #222; }
h1 { font-size: 18px; } h2 { font-size: 15px; margin-top: 26px; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { padding: 2px 8px; text-align: left; border-bottom: 1px solid #ddd; }
.timeline text { font-size: 11px; } .tick { fill: #666; }
.span:hover { stroke: #000; stroke-width: 1; }
.memory { display: inline-block; margin: 4px 16px 8px 0; }
#detail { position: fixed; top: 8px; right: 8px; background: #fffbe6; padding: 4px 8px;
          border: 1px solid #e0d080; display: none; }
)";

// Shows a span's details on hover; marks the page as rendered for tests.
constexpr const char* kScript = R"(
(function () {
  var detail = document.getElementById('detail');
  document.querySelectorAll('.span').forEach(function (span) {
    span.addEventListener('mouseenter', function () {
      detail.textContent = span.querySelector('title').textContent;
      detail.style.display = 'block';
    });
    span.addEventListener('mouseleave', function () { detail.style.display = 'none'; });
  });
  document.body.setAttribute('data-rows',
      String(document.querySelectorAll('.timeline [data-device]').length));
  document.body.setAttribute('data-rendered', 'true');
})();
)";

}  // namespace

std::string html_report(const HtmlReport& report) {
  std::string note;
  const std::string timeline = timeline_svg(report, note);
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
                     escape(report.title) + "</title>\n<style>" + kStyle + "</style></head>\n";
  html += "<body data-rendered=\"false\">\n<div id=\"detail\"></div>\n";
  html += "<h1>" + escape(report.title) + "</h1>\n<p>" + escape(report.source) + "</p>\n<table>";
  for (const auto& [label, value] : report.facts)
    html += "<tr><th>" + escape(label) + "</th><td>" + escape(value) + "</td></tr>";
  html += "</table>\n<h2>Timeline per device and link</h2>\n" + timeline;
  if (!note.empty()) html += "<p>" + escape(note) + "</p>\n";
  html += "<h2>Utilisation</h2>\n" + utilisation_table(report, report.timeline.end_seconds());
  html += "<h2>Memory over time</h2>\n" + memory_svg(report);
  html += "<h2>Bytes moved between devices</h2>\n" + bytes_matrix(report);
  html += strategies_svg(report);
  html += std::string("<script>") + kScript + "</script>\n</body></html>\n";
  return html;
}

void write_html_report(const std::string& path, const HtmlReport& report) {
  std::ofstream file(path);
  if (!file) throw InputError(path, "cannot write the report");
  file << html_report(report);
  if (!file) throw InputError(path, "cannot write the report");
}

}  // namespace tandem
