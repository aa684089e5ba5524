#include "apps/trace/trace_timeline.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "actors/trace_format.hpp"

namespace pe {

namespace {

/// A colour class of spans, in legend order.
struct op_kind {
  const char* name;
  const char* fill;
  bool dark_text; ///< the fill is light enough for dark text
};

constexpr std::array<op_kind, 8> kinds = {{
  {"matmul", "#4e79a7", false},
  {"elementwise", "#59a14f", false},
  {"activation", "#f28e2b", true},
  {"loss, metrics", "#e15759", false},
  {"optimizer", "#b07aa1", false},
  {"other op", "#9c755f", false},
  {"collective", "#edc948", true},
  {"engine (loss scale, fetch)", "#bab0ac", true},
}};

bool is_backward(const trace_span& s) {
  return s.cat == trace_format::category::computation && s.name.ends_with("_grad");
}

/// The kind of a span: by category, and for computations by op type family.
std::size_t kind_of(const trace_span& s) {
  if (s.cat == trace_format::category::collective)
    return 6;
  if (s.cat != trace_format::category::computation)
    return 7;
  std::string type = is_backward(s) ? s.name.substr(0, s.name.size() - 5) : s.name;
  static const std::set<std::string> matmul = {"mul", "matmul", "matmul_v2", "fc", "conv2d"};
  static const std::set<std::string> activation = {"relu", "sigmoid", "tanh", "gelu",
                                                   "leaky_relu", "softmax", "dropout"};
  static const std::set<std::string> loss = {
    "cross_entropy", "cross_entropy2", "softmax_with_cross_entropy", "mean",
    "square_error_cost", "accuracy", "top_k", "top_k_v2", "reduce_mean"};
  static const std::set<std::string> optimizer = {"sgd", "momentum", "adam", "adamw",
                                                  "rmsprop", "lamb"};
  if (matmul.contains(type))
    return 0;
  if (type.starts_with("elementwise_") || type == "sum" || type == "scale")
    return 1;
  if (activation.contains(type))
    return 2;
  if (loss.contains(type))
    return 3;
  if (optimizer.contains(type))
    return 4;
  return 5;
}

/// `hex` ("#rrggbb") mixed halfway with white: the fill of backward ops.
std::string lighter(const std::string& hex) {
  std::ostringstream out;
  out << '#' << std::hex << std::setfill('0');
  for (int i = 1; i < 7; i += 2)
    out << std::setw(2) << (std::stoi(hex.substr(static_cast<std::size_t>(i), 2), nullptr, 16) + 255) / 2;
  return out.str();
}

std::string escaped(const std::string& text) {
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

std::string fixed(double value, int decimals) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(decimals) << value;
  return out.str();
}

/// 1, 2 or 5 times a power of ten: about ten ticks over `span_us`.
double tick_step(double span_us) {
  double raw = std::max(span_us, 1.0) / 10;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw)
      return m * power;
  return 10 * power;
}

/// Pixel geometry of the picture.
struct layout {
  static constexpr double width = 1200, label_width = 110, right = 30;
  static constexpr double lanes_top = 58, lane_height = 26, span_height = 20;
  double start_us, scale; // px per us
  double x(double us) const { return label_width + (us - start_us) * scale; }
  static double lane_y(std::size_t lane) { return lanes_top + static_cast<double>(lane) * lane_height; }
};

class svg_writer {
 public:
  svg_writer(const trace_file& trace, const timeline_options& o, std::ostream& out)
      : trace_(trace), o_(o), out_(out), step_(trace.step(o.step)), spans_(trace.spans_of(o.step)),
        tracks_(trace.display_tracks(o.step)),
        at_({step_.start_us, (layout::width - layout::label_width - layout::right) /
                                 std::max(step_.duration_us(), 1e-3)}) {
    for (std::size_t lane = 0; lane < tracks_.size(); ++lane)
      lane_of_track_[tracks_[lane]] = lane;
  }

  void write() {
    double lanes_bottom = layout::lane_y(tracks_.size());
    double height = lanes_bottom + 62;
    out_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << layout::width
         << "\" height=\"" << height << "\" viewBox=\"0 0 " << layout::width << ' ' << height
         << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"11\">\n"
         << "<defs><marker id=\"head\" viewBox=\"0 0 6 6\" refX=\"6\" refY=\"3\" "
            "markerWidth=\"5\" markerHeight=\"5\" orient=\"auto\"><path d=\"M0,0 L6,3 L0,6 z\" "
            "fill=\"#333\"/></marker></defs>\n"
         << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    title();
    lanes();
    axis(lanes_bottom);
    if (o_.messages)
      messages(); // under the spans: visible where the lanes are idle
    spans();
    legend(lanes_bottom + 30);
    out_ << "</svg>\n";
  }

 private:
  void title() {
    out_ << "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">"
         << escaped(o_.title) << ": step " << step_.step << ", "
         << (step_.duration_us() < 1000 ? fixed(step_.duration_us(), 1) + " us"
                                        : fixed(step_.duration_us() / 1000, 2) + " ms")
         << ", " << spans_.size() << " firings on " << trace_.places.size()
         << (trace_.places.size() == 1 ? " place" : " places") << "</text>\n";
  }

  void lanes() {
    for (std::size_t lane = 0; lane < tracks_.size(); ++lane) {
      double y = layout::lane_y(lane);
      out_ << "<rect x=\"" << layout::label_width << "\" y=\"" << y + 1 << "\" width=\""
           << layout::width - layout::label_width - layout::right << "\" height=\""
           << layout::lane_height - 2 << "\" fill=\"" << (lane % 2 ? "#f4f4f4" : "#ebebeb")
           << "\"/>\n<text x=\"" << layout::label_width - 8 << "\" y=\""
           << y + layout::lane_height / 2 + 4 << "\" text-anchor=\"end\">"
           << escaped(trace_.tracks[tracks_[lane]]) << "</text>\n";
    }
  }

  void axis(double lanes_bottom) {
    double step_us = tick_step(step_.duration_us());
    bool ms = step_.duration_us() >= 2000;
    double unit = ms ? 1000 : 1;
    int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step_us / unit) + 1e-9)));
    for (double t = 0; t <= step_.duration_us() + 1e-9; t += step_us) {
      double x = at_.x(step_.start_us + t);
      out_ << "<line x1=\"" << x << "\" y1=\"" << layout::lanes_top - 4 << "\" x2=\"" << x
           << "\" y2=\"" << lanes_bottom << "\" stroke=\"#cfcfcf\" stroke-width=\"0.5\"/>\n"
           << "<text x=\"" << x << "\" y=\"" << layout::lanes_top - 8
           << "\" text-anchor=\"middle\" fill=\"#555\">" << fixed(t / unit, decimals)
           << (t == 0 ? (ms ? " ms" : " us") : "") << "</text>\n";
    }
  }

  double lane_middle(const trace_span& s) const {
    return layout::lane_y(lane_of_track_.at(s.track)) + layout::lane_height / 2;
  }

  void spans() {
    for (std::size_t i : spans_) {
      const trace_span& s = trace_.spans[i];
      const op_kind& kind = kinds[kind_of(s)];
      bool backward = is_backward(s);
      double x = at_.x(s.start_us), w = std::max(1.0, s.duration_us() * at_.scale);
      double y = lane_middle(s) - layout::span_height / 2;
      out_ << "<g><title>" << escaped(s.label) << ": " << fixed(s.duration_us(), 1)
           << " us, at " << fixed(s.start_us - step_.start_us, 1)
           << " us into the step</title><rect class=\"span\" x=\"" << x << "\" y=\"" << y << "\" width=\""
           << w << "\" height=\"" << layout::span_height << "\" fill=\""
           << (backward ? lighter(kind.fill) : kind.fill)
           << "\" stroke=\"white\" stroke-width=\"0.5\"/>";
      if (w >= 6.2 * static_cast<double>(s.name.size()) + 6)
        out_ << "<text x=\"" << x + w / 2 << "\" y=\"" << y + layout::span_height / 2 + 3.5
             << "\" text-anchor=\"middle\" font-size=\"10\" fill=\""
             << (kind.dark_text || backward ? "#1a1a1a" : "white") << "\">" << escaped(s.name)
             << "</text>";
      out_ << "</g>\n";
    }
  }

  void messages() {
    std::set<std::size_t> shown(spans_.begin(), spans_.end());
    out_ << "<g stroke=\"#333\" stroke-width=\"0.6\" stroke-opacity=\"0.5\" "
            "marker-end=\"url(#head)\">\n";
    for (const auto& m : trace_.messages) {
      if (!shown.contains(m.to))
        continue;
      const trace_span& from = trace_.spans[m.from];
      const trace_span& to = trace_.spans[m.to];
      out_ << "<line x1=\"" << at_.x(from.end_us) << "\" y1=\"" << lane_middle(from)
           << "\" x2=\"" << at_.x(to.start_us) << "\" y2=\"" << lane_middle(to) << "\"/>\n";
    }
    out_ << "</g>\n";
  }

  void legend(double y) {
    std::set<std::size_t> present;
    bool backward = false;
    for (std::size_t i : spans_) {
      present.insert(kind_of(trace_.spans[i]));
      backward = backward || is_backward(trace_.spans[i]);
    }
    double x = layout::label_width;
    for (std::size_t k : present) {
      out_ << "<rect x=\"" << x << "\" y=\"" << y - 10 << "\" width=\"12\" height=\"12\" fill=\""
           << kinds[k].fill << "\"/><text x=\"" << x + 16 << "\" y=\"" << y << "\">"
           << escaped(kinds[k].name) << "</text>\n";
      x += 30 + 6.2 * static_cast<double>(std::string(kinds[k].name).size());
    }
    std::string notes = backward ? "lighter: backward (_grad) ops" : "";
    if (o_.messages)
      notes += std::string(notes.empty() ? "" : "; ") + "lines: messages, sender's end to receiver's start";
    out_ << "<text x=\"" << layout::label_width << "\" y=\"" << y + 20 << "\" fill=\"#555\">"
         << escaped(notes + (notes.empty() ? "" : "; ") +
                    "background: idle; hover a span for its label and duration")
         << "</text>\n";
  }

  const trace_file& trace_;
  const timeline_options& o_;
  std::ostream& out_;
  const trace_step& step_;
  std::vector<std::size_t> spans_;
  std::vector<std::size_t> tracks_;
  layout at_;
  std::map<std::size_t, std::size_t> lane_of_track_;
};

} // namespace

void write_timeline_svg(const trace_file& trace, const timeline_options& o, std::ostream& out) {
  svg_writer(trace, o, out).write();
}

} // namespace pe
