#include "report/html_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>

#include "ir/error.h"
#include "report/table.h"

namespace tandem {
namespace {

// Beyond this many spans a timeline draws the first ones and says so: a browser stays
// responsive, and the Chrome trace (--trace) holds them all.
constexpr size_t kMaxSpansDrawn = 20000;
constexpr double kPlotWidth = 1000, kLaneHeight = 22, kAxisHeight = 44;
// Micro-batch k's colours (k modulo the count): hues far enough apart to tell waves apart.
constexpr int kComputeHues[] = {212, 268, 172, 312, 236, 140};
constexpr int kTransferHues[] = {28, 50, 4, 340, 40, 16};
constexpr int kShades = 6;

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

int shade_of(int microbatch) { return microbatch >= 0 ? microbatch % kShades : 0; }

std::string compute_colour(int microbatch, int lightness = 48) {
  return format("hsl(%d,55%%,%d%%)", kComputeHues[shade_of(microbatch)], lightness);
}

std::string transfer_colour(int microbatch) {
  return format("hsl(%d,80%%,50%%)", kTransferHues[shade_of(microbatch)]);
}

// Each absolute path in `text` as display_path gives it: from a '/' that begins a word (or
// follows an opening bracket or quote) to the next space, closing bracket, quote or comma.
std::string display_text(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const bool path = text[i] == '/' && (i == 0 || std::string_view(" (\"'").find(text[i - 1]) !=
                                                       std::string_view::npos);
    if (!path) {
      out += text[i++];
      continue;
    }
    const size_t end = std::min(text.find_first_of(" )]\"',", i), text.size());
    out += display_path(text.substr(i, end - i));
    i = end;
  }
  return out;
}

// Round steps (1, 2 or 5 times a power of ten) giving at most about `ticks` intervals.
double nice_step(double range, int ticks) {
  const double raw = std::max(range, 1e-300) / ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / magnitude;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * magnitude;
}

// A tick's value with as many decimals as its step needs.
std::string tick_text(double value, double step) {
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return format("%.*f", decimals, value);
}

struct Unit {
  const char* name;
  double size;  // in seconds or bytes
};

Unit time_unit(double end) {
  if (end >= 1) return {"s", 1};
  if (end >= 1e-3) return {"ms", 1e-3};
  if (end >= 1e-6) return {"\u00b5s", 1e-6};
  return {"ns", 1e-9};
}

Unit byte_unit(double top) {
  if (top >= 1024.0 * 1024 * 1024) return {"GiB", 1024.0 * 1024 * 1024};
  if (top >= 1024.0 * 1024) return {"MiB", 1024.0 * 1024};
  if (top >= 1024.0) return {"KiB", 1024.0};
  return {"B", 1};
}

// A time axis along [x0, x0 + width] for times [0, end]: grid lines from y_top down to the
// axis at y_axis, tick labels under it and the axis title with its unit.
std::string time_axis_svg(double x0, double width, double y_top, double y_axis, double end,
                          int ticks, const std::string& title) {
  const Unit unit = time_unit(end);
  const double span = end / unit.size;
  const double step = nice_step(span, ticks);
  std::string svg = format(
      "<g class=\"axis\" data-axis=\"time\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
      "y2=\"%.1f\" stroke=\"#888\"/>",
      x0, x0 + width, y_axis, y_axis);
  for (int i = 0; i * step <= span * (1 + 1e-9); ++i) {
    const double x = x0 + i * step / span * width;
    svg += format(
        "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
        "stroke-opacity=\"0.12\"/><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"#888\"/><text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
        "text-anchor=\"middle\">%s</text>",
        x, x, y_top, y_axis, x, x, y_axis, y_axis + 4, x, y_axis + 16,
        tick_text(i * step, step).c_str());
  }
  svg += format(
      "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s (%s)</text></g>",
      x0 + width / 2, y_axis + 34, escape(title).c_str(), unit.name);
  return svg;
}

// The spans a timeline draws, their time shifted by `shift`: one iteration of a measured run.
struct View {
  const Timeline* timeline = nullptr;
  std::vector<const TimelineSpan*> spans;
  double shift = 0, duration = 0;
  std::string caption;  // which iteration, when there are several
};

View whole(const Timeline& timeline) {
  View view{&timeline, {}, 0, timeline.end_seconds(), ""};
  for (const TimelineSpan& span : timeline.spans) view.spans.push_back(&span);
  return view;
}

// The measured run's median iteration, from its "iteration" spans (the whole timeline if none).
View median_iteration(const Timeline& timeline) {
  std::vector<const TimelineSpan*> iterations;
  for (const TimelineSpan& span : timeline.spans) {
    if (span.category == "iteration") iterations.push_back(&span);
  }
  if (iterations.empty()) return whole(timeline);
  std::vector<const TimelineSpan*> by_time = iterations;
  std::sort(by_time.begin(), by_time.end(), [](const TimelineSpan* a, const TimelineSpan* b) {
    return a->duration_seconds < b->duration_seconds;
  });
  const TimelineSpan& chosen = *by_time[by_time.size() / 2];
  View view{&timeline, {}, chosen.start_seconds, chosen.duration_seconds, ""};
  for (const TimelineSpan& span : timeline.spans) {
    if (span.iteration == chosen.iteration && span.category != "iteration")
      view.spans.push_back(&span);
  }
  view.caption =
      iterations.size() > 1
          ? format(
                "Iteration %d of %zu (the median by wall time: %s), from its start; the "
                "Chrome trace (--trace) holds every iteration.",
                chosen.iteration, iterations.size(), seconds_text(chosen.duration_seconds).c_str())
          : format("One run of %s, from its start.", seconds_text(chosen.duration_seconds).c_str());
  return view;
}

struct Lane {
  std::string label, attribute;
  bool has_ops = false;
};

// One lane per track: each device's first track always (its compute, busy or not), its other
// tracks and the links' when they have spans; `lane_of_track` maps tracks to lanes (-1: none).
std::vector<Lane> lanes_of(const View& view, std::vector<int>& lane_of_track) {
  const Timeline& timeline = *view.timeline;
  std::vector<int> spans_on(timeline.tracks.size(), 0);
  std::vector<bool> ops_on(timeline.tracks.size(), false);
  for (const TimelineSpan* span : view.spans) {
    ++spans_on.at(static_cast<size_t>(span->track));
    if (span->category == "op") ops_on[span->track] = true;
  }
  lane_of_track.assign(timeline.tracks.size(), -1);
  std::vector<Lane> lanes;
  auto add = [&](size_t track, std::string attribute) {
    lane_of_track[track] = static_cast<int>(lanes.size());
    lanes.push_back({timeline.tracks[track].name, std::move(attribute), ops_on[track]});
  };
  for (const std::string& device : timeline.devices) {
    bool first = true;
    for (size_t t = 0; t < timeline.tracks.size(); ++t) {
      if (timeline.tracks[t].group != device || (!first && spans_on[t] == 0)) continue;
      add(t, (first ? "data-device=\"" : "data-track=\"") + escape(device) + "\"");
      first = false;
    }
  }
  for (size_t t = 0; t < timeline.tracks.size(); ++t) {
    if (lane_of_track[t] < 0 && spans_on[t] > 0 &&
        std::find(timeline.devices.begin(), timeline.devices.end(), timeline.tracks[t].group) ==
            timeline.devices.end())
      add(t, "data-link=\"" + escape(timeline.tracks[t].group) + "\"");
  }
  return lanes;
}

// Lanes labelled at the left, spans on the shared time scale [0, end], a time axis under them.
std::string timeline_svg(const View& view, const std::vector<Lane>& lanes,
                         const std::vector<int>& lane_of_track, double end, double label_width,
                         const std::string& kind, const std::string& axis_title,
                         std::string& note) {
  const double plot_height = kLaneHeight * static_cast<double>(lanes.size());
  const double width = label_width + kPlotWidth + 24, height = plot_height + kAxisHeight;
  std::string svg = format(
      "<svg class=\"timeline %s\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
      kind.c_str(), width, height, width, height);
  std::vector<std::string> content(lanes.size());
  std::vector<int> ops_drawn(lanes.size(), 0);  // alternate the shades of neighbouring ops
  const size_t drawn = std::min(view.spans.size(), kMaxSpansDrawn);
  for (size_t s = 0; s < drawn; ++s) {
    const TimelineSpan& span = *view.spans[s];
    const int lane = lane_of_track[span.track];
    if (lane < 0) continue;
    const double start = span.start_seconds - view.shift;
    const double x = label_width + start / end * kPlotWidth;
    const double w = std::max(span.duration_seconds / end * kPlotWidth, 0.5);
    std::string detail =
        span.name + ": " + seconds_text(span.duration_seconds) + " from " + seconds_text(start);
    if (span.microbatch >= 0) detail += ", micro-batch " + std::to_string(span.microbatch);
    if (span.bytes > 0) detail += ", " + human_bytes(span.bytes);
    // A lane with ops shows its segments in the top strip and their ops in the bottom one.
    const bool op = span.category == "op";
    const bool split = lanes[lane].has_ops;
    const double y = op ? 11 : 2, h = op ? 9 : split ? 8 : kLaneHeight - 4;
    const std::string colour =
        span.category == "transfer" ? transfer_colour(span.microbatch)
        : op ? compute_colour(span.microbatch, ops_drawn[lane]++ % 2 ? 70 : 36)
             : compute_colour(span.microbatch);
    content[lane] += format(
        "<rect class=\"span\" data-category=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
        "height=\"%.1f\" fill=\"%s\"><title>%s</title></rect>",
        escape(span.category).c_str(), x, y, w, h, colour.c_str(), escape(detail).c_str());
  }
  if (drawn < view.spans.size())
    note += format(
        "The %s timeline draws the first %zu of %zu spans; the Chrome trace (--trace) holds "
        "them all. ",
        kind.c_str(), drawn, view.spans.size());
  for (size_t l = 0; l < lanes.size(); ++l) {
    svg += format("<g class=\"row\" %s transform=\"translate(0,%.1f)\">",
                  lanes[l].attribute.c_str(), kLaneHeight * static_cast<double>(l));
    svg += format("<rect x=\"%.0f\" y=\"1\" width=\"%.0f\" height=\"%.0f\" fill=\"%s\"/>",
                  label_width, kPlotWidth, kLaneHeight - 2, l % 2 ? "#f6f6f6" : "#ececec");
    svg += format("<text class=\"lane\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>",
                  label_width - 8, kLaneHeight - 7, escape(lanes[l].label).c_str());
    svg += content[l] + "</g>\n";
  }
  svg += time_axis_svg(label_width, kPlotWidth, 0, plot_height + 2, end, 10, axis_title);
  return svg + "</svg>\n";
}

// What the colours mean, for the kinds of span the timelines hold.
std::string legend_html(const std::vector<const View*>& views) {
  bool compute = false, transfer = false, ops = false;
  int microbatches = 0;
  for (const View* view : views) {
    for (const TimelineSpan* span : view->spans) {
      compute |= span->category == "compute";
      transfer |= span->category == "transfer";
      ops |= span->category == "op";
      microbatches = std::max(microbatches, span->microbatch + 1);
    }
  }
  // A swatch of one or two colours, then what they mean.
  auto key = [](const std::vector<std::string>& colours, const std::string& text,
                const std::string& attribute = "") {
    std::string html = format("<span class=\"key\"%s><svg width=\"%zu\" height=\"10\">",
                              attribute.c_str(), 14 * colours.size());
    for (size_t c = 0; c < colours.size(); ++c)
      html += format("<rect x=\"%zu\" width=\"14\" height=\"10\" fill=\"%s\"/>", 14 * c,
                     colours[c].c_str());
    return html + "</svg> " + escape(text) + "</span>";
  };
  std::string html = "<div class=\"legend\">";
  const bool measured = views.size() > 1;
  if (compute)
    html += key({compute_colour(-1)}, measured ? "compute: an op (predicted), a segment (measured)"
                                               : "compute (one span per op)");
  if (ops)
    html += key({compute_colour(-1, 36), compute_colour(-1, 70)},
                "ops inside a segment (measured; its lane's lower strip, alternating shades)");
  if (transfer) html += key({transfer_colour(-1)}, "transfer (over a link, or into a device)");
  if (microbatches > 1) {
    html += "<span class=\"key\">by micro-batch (compute, transfer):</span>";
    for (int k = 0; k < std::min(microbatches, kShades); ++k)
      html += key({compute_colour(k), transfer_colour(k)}, std::to_string(k),
                  format(" data-microbatch=\"%d\"", k));
    if (microbatches > kShades)
      html += format("<span class=\"key\">(colours repeat every %d)</span>", kShades);
  }
  return html + "</div>\n";
}

std::string bar(double fraction, const std::string& colour) {
  const double width = 200 * std::clamp(fraction, 0.0, 1.0);
  return format(
      "<svg width=\"200\" height=\"12\"><rect width=\"200\" height=\"12\" "
      "fill=\"#eee\"/><rect width=\"%.1f\" height=\"12\" fill=\"%s\"/></svg>",
      width, colour.c_str());
}

std::string utilisation_cell(double busy, double end, const std::string& colour) {
  const double used = end > 0 ? busy / end : 0;
  return format("<td>%s %.0f%%</td>", bar(used, colour).c_str(), 100 * used);
}

// Per segment that ran: measured beside predicted, the rows off by more than
// kSegmentOffFraction marked (class "off", data-off).
std::string segment_checks_html(const std::vector<SegmentCheck>& checks) {
  if (checks.empty()) return "";
  size_t off = 0;
  std::string rows;
  for (const SegmentCheck& check : checks) {
    const double error =
        check.predicted_seconds > 0
            ? (check.measured_seconds - check.predicted_seconds) / check.predicted_seconds
            : 0.0;
    off += check.off() ? 1 : 0;
    rows += format(
        "<tr%s><td>%d</td><td>%s</td><td>%zu</td><td>%s</td><td>%s</td><td>%s</td><td>%+.0f%%%s</"
        "td></tr>\n",
        check.off() ? " class=\"off\" data-off" : "", check.segment, escape(check.device).c_str(),
        check.nodes, escape(check.first + (check.nodes > 1 ? " .. " + check.last : "")).c_str(),
        seconds_text(check.measured_seconds).c_str(), seconds_text(check.predicted_seconds).c_str(),
        100 * error, check.off() ? " (off)" : "");
  }
  return format(
             "<h2>Segments: measured beside predicted</h2>\n<p>%zu of %zu segment(s) off their "
             "prediction by more than %.0f%% (error: measured less predicted, over predicted; "
             "measured: the median over the timed runs, micro-batches summed).</p>\n",
             off, checks.size(), 100 * kSegmentOffFraction) +
         "<table class=\"segments\"><tr><th>segment</th><th>device</th><th>nodes</th>"
         "<th>first .. last</th><th>measured</th><th>predicted</th><th>error</th></tr>\n" +
         rows + "</table>\n";
}

// The plans tried before the timed runs (class "trial"; data-kept on the one that ran).
std::string trial_html(const std::vector<TriedPlan>& trial) {
  if (trial.empty()) return "";
  std::string rows;
  for (const TriedPlan& tried : trial) {
    rows += format("<tr%s><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
                   tried.kept ? " data-kept" : "", escape(tried.plan).c_str(),
                   tried.whole_machine ? "the machine as one device" : "the devices as given",
                   seconds_text(tried.measured_seconds).c_str(),
                   seconds_text(tried.predicted_seconds).c_str());
  }
  return "<h2>Tried before the timed runs</h2>\n<p>auto's split of the machine's cores against "
         "the machine as one device, the two taking turns; the faster, in bold, is the plan "
         "that ran.</p>\n<table class=\"trial\"><tr><th>plan</th><th>on</th><th>median "
         "run</th><th>predicted</th></tr>\n" +
         rows + "</table>\n";
}

// Where the machine's speed moved since its devices were calibrated (class "speed", data-moved
// on each such device's line), or that it held.
std::string speed_checks_html(const std::vector<SpeedCheck>& checks) {
  std::string held, moved;
  for (const SpeedCheck& check : checks) {
    if (check.moved())
      moved += "<p class=\"speed\" data-moved>" + escape(check.describe()) + ".</p>\n";
    else
      held += (held.empty() ? "" : ", ") + check.device;
  }
  if (!held.empty()) {
    held = "<p class=\"speed\">" + escape(held) + ": the calibration's speed reference within " +
           format("%.0f%%", 100 * kSpeedMovedFraction) + " of its calibrated time.</p>\n";
  }
  return held + moved;
}

// Per device: predicted busy, idle, utilisation (and the measured iteration's beside them),
// memory; per used link: bytes and busy. Tables without rows are left out.
std::string utilisation_html(const HtmlReport& report, const View* measured) {
  std::string html;
  const double end = report.timeline.end_seconds();
  std::map<std::string, double> measured_busy;
  if (measured) {
    for (const TimelineSpan* span : measured->spans) {
      if (span->category == "compute")
        measured_busy[measured->timeline->tracks[span->track].group] += span->duration_seconds;
    }
  }
  if (!report.devices.empty()) {
    html +=
        "<table class=\"devices\"><tr><th>device</th><th>predicted busy</th><th>idle</th>"
        "<th>predicted utilisation</th>";
    if (measured) html += "<th>measured busy</th><th>measured utilisation</th>";
    html += "<th>memory peak</th><th>capacity</th></tr>\n";
    for (const HtmlReport::DeviceRow& row : report.devices) {
      html +=
          format("<tr data-utilisation=\"%s\"><td>%s</td><td>%s</td><td>%s</td>",
                 escape(row.id).c_str(), escape(row.id).c_str(),
                 seconds_text(row.busy_seconds).c_str(), seconds_text(row.idle_seconds).c_str());
      html += utilisation_cell(row.busy_seconds, end, "#3a7bd5");
      if (measured) {
        const auto busy = measured_busy.find(row.id);
        html += busy == measured_busy.end()
                    ? std::string("<td>-</td><td>-</td>")
                    : "<td data-measured-busy>" + seconds_text(busy->second) + "</td>" +
                          utilisation_cell(busy->second, measured->duration, "#2a9d8f");
      }
      html += format("<td>%s</td><td>%s</td></tr>\n", human_bytes(row.peak_memory_bytes).c_str(),
                     std::isinf(row.capacity_bytes) || row.capacity_bytes <= 0
                         ? "unknown"
                         : human_bytes(row.capacity_bytes).c_str());
    }
    html += "</table>\n";
  }
  std::string links;
  for (const HtmlReport::LinkRow& row : report.links) {
    if (row.bytes <= 0) continue;  // links the plan does not use
    links += format("<tr><td>%s</td><td>%s</td><td>%s</td>", escape(row.name).c_str(),
                    human_bytes(row.bytes).c_str(), seconds_text(row.busy_seconds).c_str()) +
             utilisation_cell(row.busy_seconds, end, "#e8893a") + "</tr>\n";
  }
  if (!links.empty())
    html +=
        "<table class=\"links\"><tr><th>link</th><th>predicted bytes</th><th>busy</th>"
        "<th>utilisation</th></tr>\n" +
        links + "</table>\n";
  else if (!report.links.empty())
    html += "<p>No link carries data in this plan.</p>\n";
  return html;
}

// One step plot per device: bytes in use over time, the capacity as a dashed line when it is
// near enough to show; both axes labelled, time on the timelines' scale.
std::string memory_html(const HtmlReport& report, double end) {
  const Timeline& timeline = report.timeline;
  constexpr double kLeft = 78, kTop = 8, kWidth = 470, kHeight = 120, kBottom = 44;
  std::string html;
  for (size_t d = 0; d < timeline.devices.size(); ++d) {
    double peak = 0;
    std::vector<const MemorySample*> samples;
    for (const MemorySample& sample : timeline.memory) {
      if (sample.device != static_cast<int>(d)) continue;
      samples.push_back(&sample);
      peak = std::max(peak, sample.bytes);
    }
    if (samples.empty()) continue;
    const double capacity = d < report.devices.size() ? report.devices[d].capacity_bytes : 0;
    const bool show_capacity = std::isfinite(capacity) && capacity > 0 && capacity < 4 * peak;
    // The y axis reaches the next round figure above the peak (and the capacity, when shown).
    const double reach = std::max({peak, show_capacity ? capacity : 0.0, 1.0});
    const Unit unit = byte_unit(reach);
    const double step = nice_step(reach / unit.size, 4);
    const double top = std::ceil(reach / unit.size / step - 1e-9) * step * unit.size;
    auto y_of = [&](double bytes) { return kTop + kHeight - bytes / top * kHeight; };
    std::string points;
    double last = 0;
    for (const MemorySample* sample : samples) {
      const double x = kLeft + sample->time_seconds / end * kWidth;
      points += format("%.1f,%.1f %.1f,%.1f ", x, y_of(last), x, y_of(sample->bytes));
      last = sample->bytes;
    }
    points += format("%.1f,%.1f", kLeft + timeline.end_seconds() / end * kWidth, y_of(last));
    const double width = kLeft + kWidth + 16, height = kTop + kHeight + kBottom;
    html += format(
        "<div class=\"memory\" data-memory-device=\"%s\"><div>%s: peak %s, capacity %s</div>"
        "<svg width=\"%.0f\" height=\"%.0f\"><rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
        "height=\"%.0f\" fill=\"#f4f4f4\"/>",
        escape(timeline.devices[d]).c_str(), escape(timeline.devices[d]).c_str(),
        human_bytes(peak).c_str(),
        std::isfinite(capacity) && capacity > 0 ? human_bytes(capacity).c_str() : "unknown", width,
        height, kLeft, kTop, kWidth, kHeight);
    html += "<g class=\"axis\" data-axis=\"bytes\">";
    for (int i = 0; i * step * unit.size <= top * (1 + 1e-9); ++i) {
      const double y = y_of(i * step * unit.size);
      html += format(
          "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
          "stroke-opacity=\"0.12\"/><text class=\"tick\" x=\"%.0f\" y=\"%.1f\" "
          "text-anchor=\"end\">%s</text>",
          kLeft - 4, kLeft + kWidth, y, y, kLeft - 7, y + 4,
          i == 0 ? "0" : (tick_text(i * step, step) + " " + unit.name).c_str());
    }
    html += format(
        "<text class=\"axis-title\" transform=\"translate(12,%.0f) rotate(-90)\" "
        "text-anchor=\"middle\">in use</text></g>",
        kTop + kHeight / 2);
    html += time_axis_svg(kLeft, kWidth, kTop, kTop + kHeight, end, 6, "time");
    html +=
        format("<polyline fill=\"none\" stroke=\"#3a7bd5\" stroke-width=\"1.5\" points=\"%s\"/>",
               points.c_str());
    if (show_capacity) {
      html += format(
          "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" "
          "stroke-dasharray=\"4 3\"><title>capacity %s</title></line>",
          kLeft, kLeft + kWidth, y_of(capacity), y_of(capacity), human_bytes(capacity).c_str());
    }
    html += "</svg></div>\n";
  }
  if (html.empty()) return "<p>No memory samples (the timeline was not recorded).</p>\n";
  return "<div class=\"legend\"><span class=\"key\"><svg width=\"20\" height=\"10\"><line "
         "x1=\"0\" x2=\"20\" y1=\"5\" y2=\"5\" stroke=\"#3a7bd5\" stroke-width=\"2\"/></svg> "
         "memory in use (predicted)</span><span class=\"key\"><svg width=\"20\" "
         "height=\"10\"><line x1=\"0\" x2=\"20\" y1=\"5\" y2=\"5\" stroke=\"#c0392b\" "
         "stroke-width=\"2\" stroke-dasharray=\"4 3\"/></svg> the device's capacity (when within "
         "4\u00d7 the peak)</span></div>\n" +
         html;
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
    html += format("<text x=\"0\" y=\"%.0f\"%s>%s%s</text>", y + 15,
                   row.chosen ? " font-weight=\"bold\"" : "", escape(row.strategy).c_str(),
                   row.chosen ? " (chosen)" : "");
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

// Strategy and batch first, then the producer's facts (but for one those two replace).
std::string facts_html(const HtmlReport& report) {
  std::vector<std::pair<std::string, std::string>> rows;
  if (!report.strategy.empty()) rows.push_back({"strategy", report.strategy});
  if (report.batch > 0) rows.push_back({"batch", std::to_string(report.batch) + " samples"});
  for (const auto& fact : report.facts) {
    if ((fact.first == "strategy" && !report.strategy.empty()) ||
        (fact.first == "batch" && report.batch > 0))
      continue;
    rows.push_back(fact);
  }
  if (rows.empty()) return "";
  std::string html = "<table class=\"facts\">";
  for (const auto& [label, value] : rows)
    html += "<tr><th>" + escape(label) + "</th><td>" + escape(display_text(value)) + "</td></tr>";
  return html + "</table>\n";
}

constexpr const char* kStyle = R"(
body { font: 13px/1.4 system-ui, sans-serif; margin: 20px; color: #222; }
h1 { font-size: 18px; } h2 { font-size: 15px; margin-top: 26px; }
h3 { font-size: 13px; margin: 14px 0 2px; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { padding: 2px 8px; text-align: left; border-bottom: 1px solid #ddd; }
svg text { font-size: 11px; } .tick { fill: #555; } .axis-title { fill: #333; }
.lane { fill: #222; } .caption { color: #555; margin: 0 0 4px; }
.span:hover { stroke: #000; stroke-width: 1; }
.legend { margin: 6px 0 10px; } .key { margin-right: 16px; white-space: nowrap; }
.key svg { vertical-align: middle; }
tr.off td { background: #fde2e1; }
tr[data-kept] td { font-weight: bold; }
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
      String(document.querySelectorAll('.timeline.predicted [data-device]').length));
  document.body.setAttribute('data-rendered', 'true');
})();
)";

}  // namespace

std::string display_path(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path given(path);
  if (given.is_relative()) return path;
  const fs::path normal = given.lexically_normal();
  std::error_code error;
  const fs::path here = fs::current_path(error);
  if (!error) {
    const fs::path relative = normal.lexically_relative(here);
    if (!relative.empty() && *relative.begin() != "..") return relative.string();
  }
  const fs::path parent = normal.parent_path().filename();
  return parent.empty() ? normal.filename().string() : (parent / normal.filename()).string();
}

std::string html_report(const HtmlReport& report) {
  const View predicted = whole(report.timeline);
  const bool has_measured = !report.measured.tracks.empty();
  const View measured = has_measured ? median_iteration(report.measured) : View{};
  // One time scale for both, so that the eye compares lengths.
  const double end = std::max({predicted.duration, has_measured ? measured.duration : 0.0, 1e-12});
  std::vector<int> predicted_tracks, measured_tracks;
  const std::vector<Lane> predicted_lanes = lanes_of(predicted, predicted_tracks);
  std::vector<Lane> measured_lanes;
  if (has_measured) measured_lanes = lanes_of(measured, measured_tracks);
  size_t longest = 0;
  for (const Lane& lane : predicted_lanes) longest = std::max(longest, lane.label.size());
  for (const Lane& lane : measured_lanes) longest = std::max(longest, lane.label.size());
  const double label_width = std::clamp(12 + 6.2 * static_cast<double>(longest), 90.0, 320.0);

  const std::string title = display_text(report.title);
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
                     escape(title) + "</title>\n<style>" + kStyle + "</style></head>\n";
  html += "<body data-rendered=\"false\">\n<div id=\"detail\"></div>\n";
  html += "<h1 title=\"" + escape(report.title) + "\">" + escape(title) + "</h1>\n";
  if (!report.source.empty() && report.source != report.timeline.source)
    html += "<p>" + escape(display_text(report.source)) + "</p>\n";
  html += facts_html(report);

  std::string note;
  html += "<h2>Timeline per device and link</h2>\n";
  std::vector<const View*> views = {&predicted};
  if (has_measured) views.push_back(&measured);
  html += legend_html(views);
  html += "<h3 class=\"predicted\">predicted</h3>\n";
  if (!report.timeline.source.empty())
    html += "<p class=\"caption\">" + escape(display_text(report.timeline.source)) + "</p>\n";
  html += timeline_svg(predicted, predicted_lanes, predicted_tracks, end, label_width, "predicted",
                       "time since the batch started", note);
  if (has_measured) {
    const std::string source =
        report.measured_source.empty() ? report.measured.source : report.measured_source;
    html += "<h3 class=\"measured\">measured on this machine</h3>\n";
    std::string caption = display_text(source);
    if (!measured.caption.empty()) caption += (caption.empty() ? "" : ". ") + measured.caption;
    if (!caption.empty()) html += "<p class=\"caption\">" + escape(caption) + "</p>\n";
    html += timeline_svg(measured, measured_lanes, measured_tracks, end, label_width, "measured",
                         "time since the iteration started", note);
  }
  if (!note.empty()) html += "<p>" + escape(note) + "</p>\n";

  const std::string utilisation = utilisation_html(report, has_measured ? &measured : nullptr);
  if (!utilisation.empty()) html += "<h2>Utilisation</h2>\n" + utilisation;
  html += segment_checks_html(report.segment_checks);
  html += speed_checks_html(report.speed_checks);
  html += trial_html(report.trial);
  html += "<h2>Memory over time</h2>\n" + memory_html(report, end);
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
