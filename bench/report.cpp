#include "bench/report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string_view>

namespace pe::bench {

namespace {

/// Three significant digits or more, never scientific: 0.123, 12.3, 1234.
std::string number(double v) {
  const int decimals = v >= 100 ? 0 : v >= 10 ? 1 : v >= 1 ? 2 : 3;
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

} // namespace

collecting_reporter::collecting_reporter() : ConsoleReporter(OO_Tabular) {
  SetOutputStream(&std::cerr);
}

void collecting_reporter::ReportRuns(const std::vector<Run>& runs) {
  ConsoleReporter::ReportRuns(runs);
  for (const Run& run : runs) {
    if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
    auto& counters = samples_[run.run_name.function_name];
    for (const auto& [name, counter] : run.counters) counters[name].push_back(counter.value);
  }
}

std::optional<double> collecting_reporter::find(const std::string& name,
                                                const std::string& counter) const {
  auto runs = samples_.find(name);
  if (runs == samples_.end()) return std::nullopt;
  auto values = runs->second.find(counter);
  if (values == runs->second.end()) return std::nullopt;
  std::vector<double> sorted = values->second;
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2];
}

void print_table(const collecting_reporter& results, const std::vector<comparison>& rows) {
  std::cout << "| benchmark | configuration | value | baseline | ratio |\n"
               "|---|---|---|---|---|\n";
  for (const comparison& row : rows) {
    auto value = results.find(row.measured, row.what.counter);
    auto baseline = results.find(row.baseline, row.baseline_counter.empty() ? row.what.counter : row.baseline_counter);
    if (!value || !baseline) continue;
    const double v = *value * row.what.factor, b = *baseline * row.what.factor;
    std::cout << "| " << row.benchmark << " | " << row.configuration << " | " << number(v) << ' '
              << row.what.unit << " | " << number(b) << ' ' << row.what.unit << " ("
              << row.baseline_label << ") | " << number(v / b) << "x |\n";
  }
}

void run_and_report(const std::vector<comparison>& rows) {
  collecting_reporter results;
  benchmark::RunSpecifiedBenchmarks(&results);
  print_table(results, rows);
  benchmark::Shutdown();
}

bool initialize(int& argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  return !benchmark::ReportUnrecognizedArguments(argc, argv);
}

std::optional<int> initialize_with_places(int& argc, char** argv, std::string_view program) {
  benchmark::Initialize(&argc, argv);
  const int places = take_places(argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return std::nullopt;
  if (places < 2) {
    std::cerr << program << ": --places must be at least 2\n";
    return std::nullopt;
  }
  return places;
}

int take_places(int& argc, char** argv) {
  constexpr std::string_view flag = "--places=";
  int places = 2;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.starts_with(flag)) places = std::atoi(arg.substr(flag.size()).data());
    else argv[kept++] = argv[i];
  }
  argc = kept;
  return places;
}

std::string size_name(std::size_t bytes) {
  return bytes < (1u << 20) ? std::to_string(bytes >> 10) + " KiB" : std::to_string(bytes >> 20) + " MiB";
}

} // namespace pe::bench
