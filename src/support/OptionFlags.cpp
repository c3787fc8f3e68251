#include "tessera/support/OptionFlags.hpp"

#include "tessera/support/Error.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <istream>
#include <iterator>
#include <ostream>

namespace tessera {

OptionFlags::OptionFlags(
    std::initializer_list<std::pair<std::string, std::string>> init) {
  set(init);
}

void OptionFlags::set(std::string_view key, std::string_view value) {
  auto it = map_.find(key);
  if (it == map_.end())
    map_.emplace(std::string(key), std::string(value));
  else
    it->second = std::string(value);
}

void OptionFlags::set(
    std::initializer_list<std::pair<std::string, std::string>> values) {
  for (const auto &[key, value] : values)
    set(key, value);
}

const std::string &OptionFlags::at(std::string_view key) const {
  auto it = map_.find(key);
  if (it == map_.end())
    throw OptionError("option \"" + std::string(key) +
                      "\" is not set; set it with OptionFlags::set or use "
                      "get(key, default) for an optional option");
  return it->second;
}

std::string OptionFlags::get(std::string_view key,
                             std::string_view defaultValue) const {
  auto it = map_.find(key);
  return it == map_.end() ? std::string(defaultValue) : it->second;
}

bool OptionFlags::contains(std::string_view key) const {
  return map_.find(key) != map_.end();
}

bool OptionFlags::erase(std::string_view key) {
  auto it = map_.find(key);
  if (it == map_.end())
    return false;
  map_.erase(it);
  return true;
}

std::string OptionFlags::toJson() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto &[key, value] : map_)
    j[key] = value;
  return j.dump();
}

namespace {

// nlohmann's messages start with "[json.exception.parse_error.101] ", which
// means nothing to a user who mistyped an environment variable.
std::string withoutJsonPrefix(const char *what) {
  std::string_view s(what);
  if (!s.empty() && s.front() == '[') {
    auto close = s.find("] ");
    if (close != std::string_view::npos)
      s.remove_prefix(close + 2);
  }
  return std::string(s);
}

const char *jsonKindName(const nlohmann::json &v) {
  if (v.is_null())
    return "null";
  if (v.is_array())
    return "an array";
  if (v.is_object())
    return "an object";
  return "an unsupported value";
}

} // namespace

OptionFlags OptionFlags::fromJson(std::string_view text,
                                  std::string_view where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception &e) {
    throw OptionError(std::string(where) + ": options are not valid JSON (" +
                      withoutJsonPrefix(e.what()) +
                      "); expected an object such as "
                      "{\"autoReport.all\": \"true\"}");
  }
  if (!j.is_object())
    throw OptionError(std::string(where) +
                      ": options must be a JSON object such as "
                      "{\"autoReport.all\": \"true\"}, not " +
                      std::string(j.type_name()));
  OptionFlags flags;
  for (const auto &[key, value] : j.items()) {
    if (value.is_string())
      flags.set(key, value.get<std::string>());
    else if (value.is_boolean())
      flags.set(key, value.get<bool>() ? "true" : "false");
    else if (value.is_number())
      flags.set(key, value.dump());
    else
      throw OptionError(std::string(where) + ": option \"" + key + "\" has " +
                        jsonKindName(value) +
                        " as its value; option values must be strings, "
                        "numbers or booleans");
  }
  return flags;
}

void readJSON(OptionFlags &flags, std::istream &in) {
  std::string text{std::istreambuf_iterator<char>(in),
                   std::istreambuf_iterator<char>()};
  flags = merged(flags, OptionFlags::fromJson(text, "JSON options"));
}

void readJSON(std::istream &in, OptionFlags &flags) { readJSON(flags, in); }

OptionFlags optionsFromEnvironment(const char *varName) {
  const char *value = std::getenv(varName);
  if (value == nullptr || *value == '\0')
    return {};
  return OptionFlags::fromJson(value, varName);
}

OptionFlags merged(const OptionFlags &base, const OptionFlags &overrides) {
  OptionFlags result = base;
  for (const auto &[key, value] : overrides)
    result.set(key, value);
  return result;
}

std::ostream &operator<<(std::ostream &os, const OptionFlags &flags) {
  return os << flags.toJson();
}

} // namespace tessera
