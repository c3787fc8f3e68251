// The outfeed callback: statistics of dequeued tensors, printed as the
// tutorial's table and appended to CSV / JSON-lines files for plotting.
#include "tessera/nn/OutfeedCallback.hpp"

#include "NnInternal.hpp"

#include "tessera/support/Half.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessera::nn {
namespace {

template <typename T, typename AsDouble>
TensorStats statsOf(std::span<const T> xs, AsDouble asDouble) {
  TensorStats s;
  s.count = xs.size();
  double sum = 0, squares = 0;
  std::size_t finite = 0, zeros = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  for (const T &raw : xs) {
    const double x = asDouble(raw);
    if (std::isnan(x)) {
      ++s.nans;
      continue;
    }
    if (std::isinf(x)) {
      ++s.infs;
      continue;
    }
    ++finite;
    zeros += x == 0;
    sum += x;
    squares += x * x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (finite == 0) {
    s.mean = s.std = s.min = s.max = nan;
    return s;
  }
  s.mean = sum / double(finite);
  // A second pass: the deviations from the mean, not E[x^2] - E[x]^2,
  // which cancels badly when the mean is large against the spread.
  double deviations = 0;
  for (const T &raw : xs) {
    const double x = asDouble(raw);
    if (std::isfinite(x))
      deviations += (x - s.mean) * (x - s.mean);
  }
  s.std = std::sqrt(deviations / double(finite));
  // -0 (a ReLU's output, say) reads as 0 in a table.
  s.min += 0.0;
  s.max += 0.0;
  s.l2Norm = std::sqrt(squares);
  s.zeroFraction = double(zeros) / double(s.count);
  return s;
}

std::string shapeText(const Shape &shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// Appends \p text to \p path in one write under an exclusive lock, with
// \p header first when the file is empty.
void appendLocked(const std::string &path, const std::string &header,
                  const std::string &text) {
  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty())
    std::filesystem::create_directories(parent, ec);
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(fmt::format("OutfeedCallback: cannot open \"{}\" to append "
                            "statistics: {}; give a writable path",
                            path, std::strerror(errno)));
  std::string all = text;
  struct stat st {};
  const bool locked = ::flock(fd, LOCK_EX) == 0;
  if (::fstat(fd, &st) == 0 && st.st_size == 0)
    all = header + text;
  std::size_t done = 0;
  int err = 0;
  while (done < all.size()) {
    const ssize_t n = ::write(fd, all.data() + done, all.size() - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      err = errno;
      break;
    }
    done += std::size_t(n);
  }
  if (locked)
    ::flock(fd, LOCK_UN);
  ::close(fd);
  if (err)
    throw Error(fmt::format("OutfeedCallback: writing statistics to \"{}\" "
                            "failed: {}",
                            path, std::strerror(err)));
}

// Round-trippable doubles for the files; NaN and infinities as text.
std::string number(double v) { return fmt::format("{:.17g}", v); }

} // namespace

TensorStats tensorStats(const std::string &name, const data::HostTensor &t) {
  TensorStats s;
  if (t.type() == FLOAT)
    s = statsOf(t.values<float>(), [](float x) { return double(x); });
  else if (t.type() == HALF)
    s = statsOf(t.values<Half>(), [](Half x) { return double(float(x)); });
  else
    throw TypeError(fmt::format("OutfeedCallback: tensor \"{}\" is {}; "
                                "statistics are computed for float and half "
                                "tensors only",
                                name, typeName(t.type())));
  s.name = name;
  s.shape = t.shape();
  return s;
}

OutfeedCallback::OutfeedCallback(std::shared_ptr<OutfeedQueue> queue,
                                 OutfeedCallbackOptions options)
    : queue_(std::move(queue)), options_(std::move(options)) {
  if (!queue_)
    throw OptionError("OutfeedCallback needs the queue to dequeue; give it "
                      "the std::shared_ptr of an nn::OutfeedQueue");
}

void OutfeedCallback::onEpochBegin(unsigned epoch) {
  epoch_ = epoch;
  epochStart_ = steps_;
}

void OutfeedCallback::onRunEnd(std::size_t step, const Logs &) {
  const std::size_t before = steps_;
  steps_ = epochStart_ + step;
  const std::size_t k = options_.everySteps;
  if (k && steps_ / k > before / k)
    report(epoch_, steps_);
}

void OutfeedCallback::onEpochEnd(unsigned epoch, const Logs &) {
  if (!options_.everySteps)
    report(epoch, steps_);
}

namespace {

void printTable(std::ostream &out, const OutfeedCallbackOptions &o,
                const std::vector<TensorStats> &stats, unsigned epoch,
                std::size_t step) {
  out << o.name << '\n';
  if (stats.empty())
    out << "No data enqueued\n";
  for (const TensorStats &s : stats)
    out << "key: " << s.name << " shape: " << shapeText(s.shape) << '\n';
  if (!stats.empty()) {
    out << (o.everySteps ? fmt::format("Step {} - Summary Stats\n", step)
                         : fmt::format("Epoch {} - Summary Stats\n", epoch + 1))
        << fmt::format("{:<6}{:<32}{:<13}{:<13}{:<13}{:<13}{:<13}{:<8}"
                       "{:<6}{:<6}\n",
                       "Index", "Name", "Mean", "Std", "Minimum", "Maximum",
                       "L2 norm", "Zeros", "NaNs", "infs");
    for (std::size_t i = 0; i < stats.size(); ++i) {
      const TensorStats &s = stats[i];
      out << fmt::format("{:<6}{:<32}{:<13.6f}{:<13.6f}{:<13.6f}{:<13.6f}"
                         "{:<13.6f}{:<8.4f}{:<6}{:<6}\n",
                         i, s.name, s.mean, s.std, s.min, s.max, s.l2Norm,
                         s.zeroFraction, s.nans, s.infs);
    }
  }
  out << std::flush;
}

std::string csvQuoted(const std::string &s) {
  std::string q = "\"";
  for (char c : s)
    q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string csvRows(const std::string &callback,
                    const std::vector<TensorStats> &stats, unsigned epoch,
                    std::size_t step) {
  std::string rows;
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const TensorStats &s = stats[i];
    std::string shape;
    for (std::size_t d = 0; d < s.shape.size(); ++d)
      shape += (d ? "x" : "") + std::to_string(s.shape[d]);
    rows += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csvQuoted(callback),
        epoch + 1, step, i, csvQuoted(s.name), shape, s.count, number(s.mean),
        number(s.std), number(s.min), number(s.max), number(s.l2Norm),
        number(s.zeroFraction), s.nans, s.infs);
  }
  return rows;
}

std::string jsonLines(const std::string &callback,
                      const std::vector<TensorStats> &stats, unsigned epoch,
                      std::size_t step) {
  std::string lines;
  for (const TensorStats &s : stats) {
    const nlohmann::json j = {
        {"callback", callback}, {"epoch", epoch + 1},
        {"step", step},         {"name", s.name},
        {"shape", s.shape},     {"count", s.count},
        {"mean", s.mean},       {"std", s.std},
        {"min", s.min},         {"max", s.max},
        {"l2_norm", s.l2Norm},  {"zero_fraction", s.zeroFraction},
        {"nans", s.nans},       {"infs", s.infs}};
    lines += j.dump() + '\n';
  }
  return lines;
}

} // namespace

std::vector<TensorStats> OutfeedCallback::report(unsigned epoch,
                                                 std::size_t step) {
  last_ = queue_->dequeue();
  stats_.clear();
  for (const auto &[key, t] : last_)
    stats_.push_back(tensorStats(key, t));
  if (options_.out)
    printTable(*options_.out, options_, stats_, epoch, step);
  if (!stats_.empty() && !options_.csvPath.empty())
    appendLocked(options_.csvPath,
                 "callback,epoch,step,index,name,shape,count,mean,std,min,"
                 "max,l2_norm,zero_fraction,nans,infs\n",
                 csvRows(options_.name, stats_, epoch, step));
  if (!stats_.empty() && !options_.jsonLinesPath.empty())
    appendLocked(options_.jsonLinesPath, "",
                 jsonLines(options_.name, stats_, epoch, step));
  return stats_;
}

} // namespace tessera::nn
