#include "tessera/support/Logging.hpp"

#include <spdlog/logger.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <mutex>

namespace tessera::logging {

namespace {

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'a' && x <= 'z')
      x = static_cast<char>(x - 'a' + 'A');
    if (y >= 'a' && y <= 'z')
      y = static_cast<char>(y - 'a' + 'A');
    if (x != y)
      return false;
  }
  return true;
}

spdlog::level::level_enum toSpdlog(Level level) {
  switch (level) {
  case Level::ERR:
    return spdlog::level::err;
  case Level::WARN:
    return spdlog::level::warn;
  case Level::INFO:
    return spdlog::level::info;
  case Level::DEBUG:
    return spdlog::level::debug;
  case Level::TRACE:
    return spdlog::level::trace;
  case Level::OFF:
    break;
  }
  return spdlog::level::off;
}

// Everything is initialised on first use rather than by a static
// constructor, so logging works from other static initialisers and costs
// nothing for programs that never log.
/// The value of the first of \p names set to a non-empty value, or nullptr.
const char *firstSet(std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (const char *v = std::getenv(name); v && *v)
      return v;
  return nullptr;
}

struct State {
  std::atomic<int> level{0};
  std::string destination;
  std::once_flag loggerOnce;
  std::shared_ptr<spdlog::logger> logger;

  State() {
    // Tessera's names first, then Poplar's and PopLibs' (one logger
    // serves both libraries here).
    Config config =
        parseConfig(firstSet({"TESSERA_LOG_LEVEL", "POPLAR_LOG_LEVEL",
                              "POPLIBS_LOG_LEVEL"}),
                    firstSet({"TESSERA_LOG_DEST", "POPLAR_LOG_DEST"}));
    if (!config.warning.empty())
      std::fprintf(stderr, "%s\n", config.warning.c_str());
    destination = config.destination;
    level.store(static_cast<int>(config.level), std::memory_order_relaxed);
  }

  spdlog::logger &getLogger() {
    std::call_once(loggerOnce, [this] { logger = makeLogger(); });
    return *logger;
  }

  std::shared_ptr<spdlog::logger> makeLogger() const {
    spdlog::sink_ptr sink;
    if (destination == "stdout") {
      sink = std::make_shared<spdlog::sinks::stdout_sink_mt>();
    } else if (destination == "stderr") {
      sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    } else {
      try {
        sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(destination);
      } catch (const std::exception &e) {
        std::fprintf(stderr,
                     "tessera: cannot open log file \"%s\" named by "
                     "TESSERA_LOG_DEST (%s); logging to stderr instead\n",
                     destination.c_str(), e.what());
        sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
      }
    }
    auto result = std::make_shared<spdlog::logger>("tessera", sink);
    result->set_pattern("%Y-%m-%dT%H:%M:%S.%f tessera %P:%t %l: %v");
    result->set_level(spdlog::level::trace);
    // Logs are for debugging: a line must survive a crash right after it.
    result->flush_on(spdlog::level::trace);
    return result;
  }
};

State &state() {
  static State s;
  return s;
}

} // namespace

std::optional<Level> parseLevel(std::string_view name) {
  struct Alias {
    std::string_view name;
    Level level;
  };
  static constexpr Alias aliases[] = {
      {"OFF", Level::OFF},     {"ERR", Level::ERR},      {"ERROR", Level::ERR},
      {"WARN", Level::WARN},   {"WARNING", Level::WARN}, {"INFO", Level::INFO},
      {"DEBUG", Level::DEBUG}, {"TRACE", Level::TRACE},
  };
  for (const auto &alias : aliases)
    if (equalsIgnoringCase(alias.name, name))
      return alias.level;
  return std::nullopt;
}

std::string_view levelName(Level level) {
  switch (level) {
  case Level::OFF:
    return "OFF";
  case Level::ERR:
    return "ERR";
  case Level::WARN:
    return "WARN";
  case Level::INFO:
    return "INFO";
  case Level::DEBUG:
    return "DEBUG";
  case Level::TRACE:
    return "TRACE";
  }
  return "?";
}

Config parseConfig(const char *levelValue, const char *destValue) {
  Config config;
  if (destValue != nullptr && *destValue != '\0')
    config.destination = destValue;
  if (levelValue == nullptr || *levelValue == '\0')
    return config;
  if (auto level = parseLevel(levelValue)) {
    config.level = *level;
  } else {
    config.warning = std::string("tessera: TESSERA_LOG_LEVEL=\"") + levelValue +
                     "\" is not a log level; use one of OFF, ERR, WARN, INFO, "
                     "DEBUG, TRACE. Logging stays off.";
  }
  return config;
}

namespace detail {

int currentLevel() { return state().level.load(std::memory_order_relaxed); }

void write(Level level, std::string_view message) {
  state().getLogger().log(toSpdlog(level), "{}", message);
}

} // namespace detail

void setLevel(Level level) {
  state().level.store(static_cast<int>(level), std::memory_order_relaxed);
}

} // namespace tessera::logging
