#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

namespace pe::bench {

/// A quantity read from Google Benchmark's counters and printed in `unit` after
/// multiplying by `factor` (the counter seconds/op printed as ns/op: factor 1e9).
struct metric {
  std::string counter;
  std::string unit;
  double factor = 1;
};

/// One row of the results table: benchmark `measured` against benchmark `baseline`, both
/// run by this process, so the ratio compares numbers taken on the same machine at the
/// same time. Names are those given to benchmark::RegisterBenchmark.
struct comparison {
  std::string benchmark;
  std::string configuration;
  std::string measured;
  std::string baseline;
  std::string baseline_label; ///< what the baseline is, printed next to its value
  metric what;
  /// The baseline's counter when it is not what.counter: a benchmark that measures both
  /// sides itself, alternating them (then `baseline` names the same benchmark).
  std::string baseline_counter = "";
};

/// Google Benchmark's console report, written to stderr so that stdout carries only the
/// results table, remembering every run's counters for the table.
class collecting_reporter : public benchmark::ConsoleReporter {
 public:
  collecting_reporter();

  void ReportRuns(const std::vector<Run>& runs) override;

  /// The median over repetitions of `counter` for benchmark `name`; nullopt when it did not
  /// run (filtered out, or failed).
  std::optional<double> find(const std::string& name, const std::string& counter) const;

 private:
  // benchmark name -> counter -> one value per repetition
  std::map<std::string, std::map<std::string, std::vector<double>>> samples_;
};

/// A buffer size as the tables name it: "64 KiB", "16 MiB" (whole KiB below 1 MiB).
std::string size_name(std::size_t bytes);

/// Prints the markdown table `| benchmark | configuration | value | baseline | ratio |` to
/// stdout, ratio = value / baseline; rows whose benchmarks did not both run are left out.
void print_table(const collecting_reporter& results, const std::vector<comparison>& rows);

/// The value of a --places=N argument, removed from argv (before Google Benchmark sees the
/// rest); 2 when absent.
int take_places(int& argc, char** argv);

/// benchmark::Initialize on the command line; false when an argument is left that neither
/// it nor the caller took (Google Benchmark names it on stderr): main then returns 1.
bool initialize(int& argc, char** argv);

/// initialize, after taking --places=N out of argv (take_places); nullopt when an argument
/// is unrecognized or N < 2 (then `program: --places must be at least 2` on stderr): main
/// then returns 1. The benchmarks comparing N places against 1 start with it.
std::optional<int> initialize_with_places(int& argc, char** argv, std::string_view program);

/// Runs every registered benchmark (after benchmark::Initialize), prints the table of
/// `rows` and shuts Google Benchmark down.
void run_and_report(const std::vector<comparison>& rows);

} // namespace pe::bench
