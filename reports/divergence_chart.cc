#include "reports/divergence_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "reports/markup_escape.h"

namespace dv::reports {
namespace {

// Geometry in SVG user units (the chart scales to its container).
constexpr double kWidth = 1000;
constexpr double kLabelWidth = 260;
constexpr double kNoteWidth = 170;
constexpr double kPlotWidth = kWidth - kLabelWidth - kNoteWidth;
constexpr double kLegendHeight = 34;
constexpr double kBandHeight = 42;
constexpr double kAxisHeight = 44;
constexpr size_t kMaxLabelChars = 32;

constexpr const char* kSame = "#2e9d5b";
constexpr const char* kLogitsDiffer = "#e3a008";
constexpr const char* kTokensDiffer = "#d64541";
constexpr const char* kNoSteps = "#c9ced6";
constexpr const char* kInk = "#1f2933";
constexpr const char* kFaint = "#8a94a3";

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string Rect(double x, double y, double w, double h, const char* fill,
                 const std::string& title) {
  return "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(std::max(w, 0.0)) +
         "\" height=\"" + Num(h) + "\" rx=\"2\" fill=\"" + fill + "\"><title>" + EscapeXml(title) +
         "</title></rect>";
}

std::string Text(double x, double y, const std::string& text, const std::string& attrs = "") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\"" + (attrs.empty() ? "" : " " + attrs) +
         ">" + EscapeXml(text) + "</text>";
}

// A tick spacing of 1, 2 or 5 times a power of ten giving at most 8 intervals.
int64_t TickSpacing(int64_t total) {
  int64_t mag = 1;
  while (true) {
    for (const int64_t f : {1, 2, 5}) {
      if (total / (f * mag) <= 8) return f * mag;
    }
    mag *= 10;
  }
}

std::string Truncate(const std::string& s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  size_t cut = max_chars - 1;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80)
    --cut;  // whole UTF-8 characters
  return s.substr(0, cut) + "\u2026";
}

// Bar of one chain: [0, leave) same, [leave, steps) differing.
std::string Bar(double y, double h, int64_t steps, const std::optional<int64_t>& leave,
                const char* differ, const std::string& what, const DivergenceRow& row,
                double scale) {
  std::string out;
  const int64_t same_end = leave ? std::min(*leave, steps) : steps;
  if (same_end > 0) {
    out += Rect(kLabelWidth, y, static_cast<double>(same_end) * scale, h, kSame,
                row.name + ": " + what + " equal the baseline's at steps 0.." +
                    std::to_string(same_end - 1));
  }
  if (leave && *leave < steps) {
    out += Rect(kLabelWidth + static_cast<double>(*leave) * scale, y,
                static_cast<double>(steps - *leave) * scale, h, differ,
                row.name + ": " + what + " differ from step " + std::to_string(*leave) + " to " +
                    std::to_string(steps - 1));
  }
  return out;
}

}  // namespace

std::string RenderDivergenceChart(const std::vector<DivergenceRow>& rows, int64_t total_steps,
                                  const std::string& baseline_name, bool show_machines) {
  if (rows.empty()) return "";
  const int64_t total = std::max<int64_t>(total_steps, 1);
  const double scale = kPlotWidth / static_cast<double>(total);
  const double height =
      kLegendHeight + kBandHeight * static_cast<double>(rows.size()) + kAxisHeight;
  std::string svg = "<svg class=\"chart\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(height) +
                    "\" role=\"img\" aria-label=\"" +
                    EscapeXml("where each row leaves the chains of " + baseline_name) +
                    "\" font-family=\"system-ui, sans-serif\" font-size=\"13\" fill=\"" + kInk +
                    "\">";

  // Legend.
  double lx = kLabelWidth;
  const std::pair<const char*, const char*> legend[] = {{kSame, "same chain as the baseline"},
                                                        {kLogitsDiffer, "logits differ"},
                                                        {kTokensDiffer, "tokens differ"},
                                                        {kNoSteps, "no steps"}};
  for (const auto& [color, label] : legend) {
    svg += "<rect x=\"" + Num(lx) + "\" y=\"10\" width=\"12\" height=\"12\" rx=\"2\" fill=\"" +
           color + "\"/>";
    svg += Text(lx + 17, 21, label);
    lx += 30 + 7.2 * static_cast<double>(std::string(label).size());
  }

  // Grid lines and the axis.
  const double plot_top = kLegendHeight;
  const double plot_bottom = kLegendHeight + kBandHeight * static_cast<double>(rows.size());
  const int64_t spacing = TickSpacing(total);
  for (int64_t s = 0; s <= total; s += spacing) {
    const double x = kLabelWidth + static_cast<double>(s) * scale;
    svg += "<line x1=\"" + Num(x) + "\" y1=\"" + Num(plot_top) + "\" x2=\"" + Num(x) + "\" y2=\"" +
           Num(plot_bottom + 4) + "\" stroke=\"#e3e7ec\"/>";
    svg += Text(x, plot_bottom + 19, std::to_string(s),
                "text-anchor=\"middle\" fill=\"" + std::string(kFaint) + "\"");
  }
  svg += Text(kLabelWidth + kPlotWidth / 2, plot_bottom + 38, "step",
              "text-anchor=\"middle\" fill=\"" + std::string(kFaint) + "\"");

  for (size_t i = 0; i < rows.size(); ++i) {
    const DivergenceRow& r = rows[i];
    const double y = kLegendHeight + kBandHeight * static_cast<double>(i);
    svg += "<g>";
    svg += "<text x=\"" + Num(kLabelWidth - 10) + "\" y=\"" + Num(y + 17) +
           "\" text-anchor=\"end\"><title>" + EscapeXml(r.name + " (" + r.device + ")") +
           "</title>" + EscapeXml(Truncate(r.configuration, kMaxLabelChars)) + "</text>";
    const std::string status(KindName(r.status));
    std::string sublabel = std::string(KindName(r.engine)) + " \u00b7 " + status;
    if (show_machines) sublabel += " \u00b7 " + ShortHash(r.machine_id, 8);
    svg += Text(kLabelWidth - 10, y + 31, sublabel,
                "text-anchor=\"end\" font-size=\"11\" fill=\"" + std::string(kFaint) + "\"");
    std::string logits_note, tokens_note;
    const char* logits_color = kFaint;
    const char* tokens_color = kFaint;
    if (!r.compared) {
      svg += Rect(kLabelWidth, y + 8, kPlotWidth, 24, kNoSteps,
                  r.name + ": no steps (" + status +
                      (r.status_detail.empty() ? "" : ": " + r.status_detail) + ")");
      svg += Text(kLabelWidth + 8, y + 24, r.status == RunStatus::kOk ? "no steps" : status,
                  "font-size=\"12\"");
      logits_note = "not compared";
    } else {
      svg += Bar(y + 8, 14, r.steps, r.divergence.logits_step, kLogitsDiffer, "logits", r, scale);
      svg += Bar(y + 25, 7, r.steps, r.divergence.token_step, kTokensDiffer, "tokens", r, scale);
      if (r.divergence.logits_step) {
        const double x = kLabelWidth + static_cast<double>(*r.divergence.logits_step) * scale;
        svg += "<line x1=\"" + Num(x) + "\" y1=\"" + Num(y + 4) + "\" x2=\"" + Num(x) + "\" y2=\"" +
               Num(y + 36) + "\" stroke=\"" + kInk + "\" stroke-dasharray=\"3 2\"/>";
        logits_note = "logits: step " + std::to_string(*r.divergence.logits_step);
        logits_color = kLogitsDiffer;
      } else {
        logits_note = "logits: same";
        logits_color = kSame;
      }
      if (r.divergence.token_step) {
        tokens_note = "tokens: step " + std::to_string(*r.divergence.token_step);
        tokens_color = kTokensDiffer;
      } else {
        tokens_note = "tokens agree";
        tokens_color = kSame;
      }
    }
    const double nx = kLabelWidth + kPlotWidth + 12;
    svg += Text(nx, y + 19, logits_note,
                "font-size=\"12\" font-weight=\"600\" fill=\"" + std::string(logits_color) + "\"");
    if (!tokens_note.empty()) {
      svg += Text(nx, y + 33, tokens_note,
                  "font-size=\"12\" fill=\"" + std::string(tokens_color) + "\"");
    }
    svg += "</g>";
  }
  svg += "</svg>";
  return svg;
}

}  // namespace dv::reports
