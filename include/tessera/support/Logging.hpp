/// \file
/// Diagnostic logging, off by default. The level comes from environment
/// variable TESSERA_LOG_LEVEL (OFF, ERR, WARN, INFO, DEBUG, TRACE, as
/// Poplar's POPLAR_LOG_LEVEL; case-insensitive, ERROR and WARNING also
/// accepted) and the destination from TESSERA_LOG_DEST ("stderr", the
/// default, "stdout", or a file name). Both are read once, on first use,
/// thread-safely.
///
/// \code
///   logging::info("compiled {} compute sets in {:.1f} ms", n, ms);
///   if (logging::enabled(logging::Level::TRACE)) { ...costly dump... }
/// \endcode
///
/// Messages are formatted only when their level is enabled.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace tessera::logging {

/// Levels in increasing verbosity; a level enables itself and all before it.
enum class Level { OFF, ERR, WARN, INFO, DEBUG, TRACE };

/// The level named \p name (case-insensitive OFF, ERR/ERROR, WARN/WARNING,
/// INFO, DEBUG, TRACE), or nothing when \p name is none of them.
std::optional<Level> parseLevel(std::string_view name);
/// The canonical name of \p level ("OFF", "ERR", ...).
std::string_view levelName(Level level);

/// The configuration the environment asks for. An invalid level leaves
/// logging OFF and sets \p warning to the one line to print about it.
struct Config {
  Level level = Level::OFF;
  std::string destination = "stderr";
  std::string warning;
};
/// Interprets the values of TESSERA_LOG_LEVEL and TESSERA_LOG_DEST (null
/// when unset).
Config parseConfig(const char *levelValue, const char *destValue);

namespace detail {
/// Reads the environment once and returns the current level.
int currentLevel();
void write(Level level, std::string_view message);
} // namespace detail

/// Whether messages at \p level are written.
inline bool enabled(Level level) {
  return level != Level::OFF &&
         static_cast<int>(level) <= detail::currentLevel();
}

/// Replaces the level read from the environment (for tools and tests).
void setLevel(Level level);

template <typename... Args>
void log(Level level, fmt::format_string<Args...> format, Args &&...args) {
  if (enabled(level))
    detail::write(level, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void error(fmt::format_string<Args...> format, Args &&...args) {
  log(Level::ERR, format, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(fmt::format_string<Args...> format, Args &&...args) {
  log(Level::WARN, format, std::forward<Args>(args)...);
}
template <typename... Args>
void info(fmt::format_string<Args...> format, Args &&...args) {
  log(Level::INFO, format, std::forward<Args>(args)...);
}
template <typename... Args>
void debug(fmt::format_string<Args...> format, Args &&...args) {
  log(Level::DEBUG, format, std::forward<Args>(args)...);
}
template <typename... Args>
void trace(fmt::format_string<Args...> format, Args &&...args) {
  log(Level::TRACE, format, std::forward<Args>(args)...);
}

} // namespace tessera::logging
