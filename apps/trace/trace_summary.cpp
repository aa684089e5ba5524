#include "apps/trace/trace_summary.hpp"

#include <algorithm>
#include <iomanip>
#include <ostream>

#include "apps/trace/trace_analysis.hpp"
#include "core/error.hpp"

namespace pe {

namespace {

/// The steps to detail: the one asked for, all of up to 3, or the first and the slowest.
std::vector<std::uint64_t> detailed_steps(const trace_file& trace, const summary_options& o) {
  if (o.step)
    return {trace.step(*o.step).step};
  std::vector<std::uint64_t> out;
  if (trace.steps.size() <= 3) {
    for (const auto& s : trace.steps)
      out.push_back(s.step);
    return out;
  }
  auto slowest = std::max_element(trace.steps.begin(), trace.steps.end(),
                                  [](const trace_step& a, const trace_step& b) {
                                    return a.duration_us() < b.duration_us();
                                  });
  out.push_back(trace.steps.front().step);
  if (slowest->step != out.front())
    out.push_back(slowest->step);
  return out;
}

void print_overview(const trace_file& trace, std::ostream& out) {
  out << trace.steps.size() << (trace.steps.size() == 1 ? " step" : " steps");
  if (!trace.steps.empty())
    out << " (" << trace.steps.front().step << ".." << trace.steps.back().step << ")";
  out << " on";
  for (const auto& p : trace.places)
    out << ' ' << p;
  out << ": " << trace.spans.size() << " firings, " << trace.messages.size() << " messages, "
      << traced_wall_us(trace) << " us\n";
}

void print_op_types(const trace_file& trace, std::ostream& out) {
  out << "\ntime per op type, longest total first:\n"
      << "  " << std::left << std::setw(32) << "op type" << std::right << std::setw(12)
      << "total us" << std::setw(8) << "count" << std::setw(12) << "mean us" << '\n';
  for (const auto& t : op_type_times(trace))
    out << "  " << std::left << std::setw(32) << t.name << std::right << std::setw(12)
        << t.total_us << std::setw(8) << t.count << std::setw(12) << t.mean_us() << '\n';
}

void print_utilisation(const trace_file& trace, std::ostream& out) {
  double wall = traced_wall_us(trace);
  out << "\ntrack utilisation (busy time / " << wall << " us of traced steps):\n";
  for (const auto& t : track_busy_times(trace))
    out << "  " << std::left << std::setw(32) << trace.tracks[t.track] << std::right
        << std::setw(12) << t.busy_us << " us" << std::setw(8)
        << (wall > 0 ? 100 * t.busy_us / wall : 0.0) << " %\n";
}

void print_critical_path(const trace_file& trace, const trace_step& step, std::ostream& out) {
  auto path = critical_path(trace, step.step);
  double in_spans = 0;
  for (std::size_t i : path)
    in_spans += trace.spans[i].duration_us();
  double total = path.empty() ? 0 : trace.spans[path.back()].end_us - step.start_us;
  out << "  critical path: " << path.size() << " spans, " << total << " us = " << in_spans
      << " us in spans + " << total - in_spans
      << " us waiting (message delivery, scheduling)\n"
      << "  " << std::setw(10) << "start us" << std::setw(10) << "dur us" << std::setw(10)
      << "wait us" << "  span\n";
  double ready = step.start_us; // when the previous span on the path ended
  for (std::size_t i : path) {
    const trace_span& s = trace.spans[i];
    out << "  " << std::setw(10) << s.start_us - step.start_us << std::setw(10)
        << s.duration_us() << std::setw(10) << s.start_us - ready << "  " << s.label << '\n';
    ready = s.end_us;
  }
}

void print_gaps(const trace_file& trace, const trace_step& step,
                const summary_options& o, std::ostream& out) {
  double min_us = o.gap_us.value_or(0.05 * step.duration_us());
  auto gaps = idle_gaps(trace, step.step, min_us);
  out << "  idle gaps over " << min_us << " us"
      << (o.gap_us ? "" : " (5% of the step)") << (gaps.empty() ? ": none\n" : ":\n");
  for (const auto& g : gaps) {
    out << "  " << std::left << std::setw(14) << g.group << std::right << std::setw(10)
        << g.start_us - step.start_us << " .. " << std::setw(10) << g.end_us - step.start_us
        << " us (" << g.duration_us() << " us)";
    out << (g.after ? ", after " + trace.spans[*g.after].label : ", from the step's start");
    out << (g.before ? ", before " + trace.spans[*g.before].label : ", to the step's end");
    out << '\n';
  }
}

} // namespace

void print_summary(const trace_file& trace, const summary_options& o, std::ostream& out) {
  if (trace.steps.empty())
    throw error("the trace records no steps");
  auto flags = out.flags();
  auto precision = out.precision();
  out << std::fixed << std::setprecision(1);
  print_overview(trace, out);
  print_op_types(trace, out);
  print_utilisation(trace, out);
  for (std::uint64_t number : detailed_steps(trace, o)) {
    const trace_step& step = trace.step(number);
    out << "\nstep " << step.step << ": " << step.duration_us() << " us, "
        << trace.spans_of(step.step).size() << " firings\n";
    print_critical_path(trace, step, out);
    print_gaps(trace, step, o, out);
  }
  out.flags(flags);
  out.precision(precision);
}

} // namespace pe
