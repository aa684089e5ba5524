#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

namespace pe {

/// What the owner of the stream that progress goes to found out about it (pe-actor-run's
/// main asks isatty and TIOCGWINSZ of stdout), so that the reporter itself needs neither a
/// real terminal nor a file descriptor.
struct progress_display {
  bool terminal = false; ///< a terminal: one line is rewritten in place
  int columns = 0;       ///< the terminal's width; in-place lines are cut to fit. 0: unknown
};

/// The training loop's progress, as a reader expects it on a long run. Each shown step reads
///
///   step s/S  loss L  (smoothed M)  epoch k/E  R samples/s  elapsed T  ETA T
///
/// starting with "step s/S  loss L" (the step's own loss, which tests and scripts grep), the
/// smoothed loss an exponential moving average (alpha 0.1, seeded with the first loss),
/// "epoch k/E" only for a run counted in epochs, samples/s and the ETA over the steps after
/// the run's first (the warm-up, left out as the metrics leave it out) and so absent on the
/// first. On a terminal the line is rewritten in place ('\r', the line, then ESC[K to erase
/// what a longer earlier line left) at most every `refresh_s`, a step the throttle skips
/// waiting for the next draw; finish() ends it with a newline, and the caller must call it
/// before printing anything else so that nothing is overwritten (the next step then starts
/// a new line at once). Anywhere else (a pipe, a file, pe-actor-launch's rank prefixes) lines are
/// plain and newline-terminated, with no escape codes: every `log_every` steps when it is
/// set, else whenever `interval_s` has passed since the last one. Either way the run's first
/// and last steps, and a step whose loss is not finite, are always shown. Time comes from an
/// injected clock, so that tests need neither a terminal nor real time.
class progress_reporter {
 public:
  /// Seconds on a monotonic clock (any origin).
  using clock = std::function<double()>;

  struct settings {
    std::int64_t first_step = 1; ///< the run's first step (a resumed run's comes later)
    std::int64_t last_step = 1;  ///< the run's last step: S of "step s/S"
    std::int64_t steps_per_epoch = 0; ///< > 0: show "epoch k/E"; 0: a run of --steps
    std::int64_t log_every = 0; ///< > 0: a line every this many steps (on a terminal: kept)
    progress_display display;
    double interval_s = 10;  ///< plain lines by time: at least this far apart
    double refresh_s = 0.1;  ///< in-place updates: at least this far apart
  };

  /// The weight of the newest loss in the smoothed loss.
  static constexpr double smoothing = 0.1;

  /// Starts the clock of "elapsed": the run's first step begins now.
  progress_reporter(std::ostream& out, const settings& settings, clock now);
  /// Ends an in-place line still open (as finish does), e.g. when an exception unwinds the
  /// training loop before the error is printed.
  ~progress_reporter();
  progress_reporter(const progress_reporter&) = delete;
  progress_reporter& operator=(const progress_reporter&) = delete;

  /// Step `step` ended with `loss` over `samples` samples; shows it when it is due.
  void step(std::int64_t step, double loss, std::int64_t samples);

  /// On a terminal, shows the latest step if a refresh skipped it and ends the in-place line
  /// with a newline; call it before any other output and at the end. Nothing otherwise, and
  /// nothing when no line is open.
  void finish();

  /// `seconds` rounded to the nearest second: "12s", "1m05s", "1h02m"; "?" when not finite.
  static std::string format_duration(double seconds);

 private:
  /// What one shown line says, taken when its step ended.
  struct snapshot {
    std::int64_t step;
    double loss;
    double smoothed;
    double elapsed_s;
    std::optional<double> samples_per_sec; ///< from the run's second step
    std::optional<double> eta_s;           ///< from the run's second step
  };

  std::string line(const snapshot& s) const;
  /// Rewrites the in-place line with the latest step.
  void draw(double now);

  std::ostream& out_;
  settings settings_;
  clock now_;
  double start_;                     ///< when the run's first step began
  std::optional<double> warmed_up_;  ///< when the run's first step ended
  std::int64_t timed_samples_ = 0;   ///< samples of the steps after the first
  std::optional<double> smoothed_;
  std::optional<snapshot> latest_;
  double last_shown_ = 0; ///< when the last line was printed or drawn
  bool latest_shown_ = false;
  bool line_open_ = false; ///< an in-place line is on the terminal without its newline
};

} // namespace pe
