#include "apps/run/job_stall_reports.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <ostream>
#include <string>
#include <vector>

#include "collectives/net/process_group.hpp"

namespace pe {

namespace {

/// What a rank sends rank 0: a first line "step S: ROOT CAUSE", then the whole report.
std::string note_of(const stall_report& r) {
  return "step " + std::to_string(r.step) + ": " + r.root_cause + "\n" + r.text;
}

/// Rank 0's heading and one line per rank, then the other ranks' whole reports.
void print_gathered(const stall_report& mine, const std::vector<std::vector<std::string>>& notes, double wait_s,
                    std::ostream& err) {
  char waited[32];
  std::snprintf(waited, sizeof waited, "%.1f s", wait_s);
  std::string out = "pe-actor-run: the job's stall reports, gathered by rank 0:\n  rank 0 (step " +
                    std::to_string(mine.step) + "): " + mine.root_cause + "\n";
  std::string bodies;
  for (std::size_t p = 1; p < notes.size(); ++p) {
    const std::string rank = "rank " + std::to_string(p);
    if (notes[p].empty()) {
      out += "  " + rank + ": no report within " + waited +
             " (it did not stall, or it is stopped, stuck outside a step or lost)\n";
      continue;
    }
    const std::string& note = notes[p].back(); // the latest, if it stalled more than once
    const auto line_end = std::min(note.find('\n'), note.size());
    const std::string first = note.substr(0, line_end); // "step S: ROOT CAUSE"
    const auto colon = std::min(first.find(": "), first.size());
    out += "  " + rank + " (" + first.substr(0, colon) + ")" + first.substr(colon) + "\n";
    bodies += "pe-actor-run: " + rank + "'s report: " + (line_end < note.size() ? note.substr(line_end + 1) : "\n");
  }
  err << out << bodies << std::flush;
}

} // namespace

std::function<void(const stall_report&)> gather_stall_reports(std::function<void(const stall_report&)> sink,
                                                              process_group* group, std::chrono::milliseconds wait,
                                                              std::ostream& err) {
  if (group == nullptr || group->size() < 2) return sink;
  return [sink = std::move(sink), group, wait, &err](const stall_report& r) {
    if (sink) sink(r);
    if (r.on_demand) return;
    try {
      if (group->rank() != 0) {
        group->send_note_to_rank0(note_of(r));
        return;
      }
      print_gathered(r, group->take_notes(wait), std::chrono::duration<double>(wait).count(), err);
    } catch (const std::exception& e) {
      // The job broke (a process was lost or lied): this rank's own report stands.
      err << "pe-actor-run: the other ranks' stall reports could not be gathered: " << e.what() << std::endl;
    }
  };
}

} // namespace pe
