#include "apps/run/progress_reporter.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <utility>

namespace pe {

namespace {

/// Erases from the cursor to the end of the line: what a longer earlier line left behind.
constexpr const char* erase_to_end_of_line = "\x1b[K";

/// `value` as two digits: the minutes or seconds after a larger unit.
std::string two_digits(long long value) {
  return (value < 10 ? "0" : "") + std::to_string(value);
}

} // namespace

progress_reporter::progress_reporter(std::ostream& out, const settings& settings, clock now)
    : out_(out), settings_(settings), now_(std::move(now)), start_(now_()) {}

progress_reporter::~progress_reporter() {
  try {
    finish();
  } catch (...) { // a stream set to throw; the line is lost, not the error being unwound
  }
}

void progress_reporter::step(std::int64_t step, double loss, std::int64_t samples) {
  const double now = now_();
  if (step == settings_.first_step || !warmed_up_)
    warmed_up_ = now;
  else
    timed_samples_ += samples;
  smoothed_ = smoothed_ ? *smoothed_ + smoothing * (loss - *smoothed_) : loss;

  snapshot s{step, loss, *smoothed_, now - start_, std::nullopt, std::nullopt};
  const auto timed_steps = step - settings_.first_step;
  const double timed_seconds = now - *warmed_up_;
  if (timed_steps > 0 && timed_seconds > 0) {
    s.samples_per_sec = static_cast<double>(timed_samples_) / timed_seconds;
    s.eta_s = timed_seconds / static_cast<double>(timed_steps) *
              static_cast<double>(std::max<std::int64_t>(0, settings_.last_step - step));
  }
  latest_ = s;
  latest_shown_ = false;

  const bool always = step == settings_.first_step || step >= settings_.last_step ||
                      !std::isfinite(loss);
  const bool every = settings_.log_every > 0 && step % settings_.log_every == 0;
  if (settings_.display.terminal) {
    // A fresh line (the first, or one after finish()) is drawn at once.
    if (always || every || !line_open_ || now - last_shown_ >= settings_.refresh_s)
      draw(now);
    if (every) { // --log-every on a terminal: this step's line stays on the screen
      out_ << '\n' << std::flush;
      line_open_ = false;
    }
    return;
  }
  const bool due = settings_.log_every > 0 ? every : now - last_shown_ >= settings_.interval_s;
  if (always || due) {
    out_ << line(s) << std::endl; // flushed, so that progress shows through a pipe
    last_shown_ = now;
    latest_shown_ = true;
  }
}

void progress_reporter::finish() {
  if (!settings_.display.terminal || !latest_)
    return;
  if (!latest_shown_)
    draw(now_());
  if (line_open_) {
    out_ << '\n' << std::flush;
    line_open_ = false;
  }
}

std::string progress_reporter::format_duration(double seconds) {
  if (!std::isfinite(seconds))
    return "?";
  const long long whole = std::llround(std::max(0.0, seconds));
  if (whole < 60)
    return std::to_string(whole) + "s";
  if (whole < 3600)
    return std::to_string(whole / 60) + "m" + two_digits(whole % 60) + "s";
  return std::to_string(whole / 3600) + "h" + two_digits(whole % 3600 / 60) + "m";
}

std::string progress_reporter::line(const snapshot& s) const {
  std::ostringstream text;
  text << "step " << s.step << '/' << settings_.last_step << "  loss " << std::setprecision(6)
       << s.loss << "  (smoothed " << std::setprecision(4) << s.smoothed << ')';
  if (settings_.steps_per_epoch > 0) {
    const auto per_epoch = settings_.steps_per_epoch;
    text << "  epoch " << (s.step - 1) / per_epoch + 1 << '/'
         << (settings_.last_step + per_epoch - 1) / per_epoch;
  }
  if (s.samples_per_sec)
    text << "  " << std::fixed << std::setprecision(1) << *s.samples_per_sec << " samples/s";
  text << "  elapsed " << format_duration(s.elapsed_s);
  if (s.eta_s)
    text << "  ETA " << format_duration(*s.eta_s);
  return text.str();
}

void progress_reporter::draw(double now) {
  auto text = line(*latest_);
  // A line wider than the terminal wraps, and '\r' then returns only to its last row.
  const auto columns = static_cast<std::size_t>(std::max(0, settings_.display.columns));
  if (columns > 1 && text.size() > columns - 1)
    text.resize(columns - 1);
  out_ << '\r' << text << erase_to_end_of_line << std::flush;
  last_shown_ = now;
  latest_shown_ = true;
  line_open_ = true;
}

} // namespace pe
