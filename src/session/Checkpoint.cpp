// Layout: "TSCKPT01" magic, u32 version, then the payload (model name, step,
// variables: name, type, rank, dims, bytes), then the XXH64 of everything
// before it. Integers are little-endian, as on every host Tessera builds for.
#include "tessera/session/Checkpoint.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"
#include "tessera/support/Hash.hpp"

#include <cstring>
#include <filesystem>
#include <map>

namespace tessera::session {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'C', 'K', 'P', 'T', '0', '1'};

class Writer {
public:
  template <typename T> void pod(T v) {
    bytes_.append(reinterpret_cast<const char *>(&v), sizeof v);
  }
  void str(const std::string &s) {
    pod<std::uint64_t>(s.size());
    bytes_ += s;
  }
  void raw(const void *p, std::size_t n) {
    bytes_.append(static_cast<const char *>(p), n);
  }
  std::string &bytes() { return bytes_; }

private:
  std::string bytes_;
};

class Reader {
public:
  Reader(const std::string &bytes, std::size_t end, std::string what)
      : bytes_(bytes), end_(end), what_(std::move(what)) {}
  template <typename T> T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string str() {
    const auto n = pod<std::uint64_t>();
    need(n);
    std::string s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  void raw(void *p, std::size_t n) {
    need(n);
    std::memcpy(p, bytes_.data() + pos_, n);
    pos_ += n;
  }
  bool atEnd() const { return pos_ == end_; }

private:
  void need(std::size_t n) const {
    if (n > end_ - pos_)
      throw SerializationError(what_ + " is truncated or corrupt (needs " +
                               std::to_string(n) + " more bytes at offset " +
                               std::to_string(pos_) + "); save it again");
  }
  const std::string &bytes_;
  std::size_t end_, pos_ = 0;
  std::string what_;
};

std::string describe(Type t, const data::Shape &s) {
  return data::typeAndShapeString(t, s);
}

} // namespace

void saveCheckpoint(const std::string &path, const Checkpoint &ckpt) {
  Writer w;
  w.raw(kMagic, sizeof kMagic);
  w.pod<std::uint32_t>(kCheckpointVersion);
  w.str(ckpt.model);
  w.pod<std::uint64_t>(ckpt.step);
  w.pod<std::uint64_t>(ckpt.variables.size());
  for (const auto &[name, t] : ckpt.variables) {
    w.str(name);
    w.pod<std::uint8_t>(static_cast<std::uint8_t>(t.type()));
    w.pod<std::uint64_t>(t.rank());
    for (std::size_t d : t.shape())
      w.pod<std::uint64_t>(d);
    w.pod<std::uint64_t>(t.numBytes());
    w.raw(t.data(), t.numBytes());
  }
  w.pod<std::uint64_t>(hash64(w.bytes()));
  writeFileAtomically(path, w.bytes());
}

Checkpoint loadCheckpoint(const std::string &path) {
  const std::string what = "checkpoint \"" + path + "\"";
  if (!std::filesystem::exists(path))
    throw SerializationError(what + " does not exist; check the path, or "
                                    "train and save a checkpoint there");
  const std::string bytes = readFile(path);
  if (bytes.size() < sizeof kMagic + 4 + 8 ||
      std::memcmp(bytes.data(), kMagic, 6) != 0)
    throw SerializationError(what + " is not a Tessera checkpoint");
  std::uint64_t sum;
  std::memcpy(&sum, bytes.data() + bytes.size() - 8, 8);
  Reader r(bytes, bytes.size() - 8, what);
  char magic[8];
  r.raw(magic, sizeof magic);
  const auto version = r.pod<std::uint32_t>();
  if (version != kCheckpointVersion)
    throw SerializationError(what + " has format version " +
                             std::to_string(version) + "; this build reads " +
                             std::to_string(kCheckpointVersion) +
                             ". Save it again with this build");
  if (hash64(bytes.data(), bytes.size() - 8) != sum)
    throw SerializationError(what + " is corrupt (its checksum does not "
                                    "match); restore it from a backup or "
                                    "save it again");
  Checkpoint c;
  c.model = r.str();
  c.step = r.pod<std::uint64_t>();
  const auto n = r.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string name = r.str();
    const auto type = r.pod<std::uint8_t>();
    if (type >= numTypes)
      throw SerializationError(what + ": variable \"" + name +
                               "\" has an unknown element type");
    data::Shape shape(r.pod<std::uint64_t>());
    for (auto &d : shape)
      d = r.pod<std::uint64_t>();
    data::HostTensor t(static_cast<Type>(type), shape);
    if (r.pod<std::uint64_t>() != t.numBytes())
      throw SerializationError(what + ": variable \"" + name +
                               "\" has the wrong number of bytes");
    r.raw(t.data(), t.numBytes());
    c.variables.emplace_back(std::move(name), std::move(t));
  }
  if (!r.atEnd())
    throw SerializationError(what + " has trailing bytes; save it again");
  return c;
}

void checkCheckpointMatches(const Checkpoint &ckpt, const std::string &path,
                            const std::string &model,
                            const std::vector<VariableSpec> &expected) {
  const std::string head = "checkpoint \"" + path + "\" (model \"" +
                           ckpt.model + "\") does not fit model \"" + model +
                           "\": ";
  std::map<std::string, const data::HostTensor *> saved;
  for (const auto &[name, t] : ckpt.variables)
    saved[name] = &t;
  for (const VariableSpec &v : expected) {
    auto it = saved.find(v.name);
    if (it == saved.end())
      throw SerializationError(head + "it has no variable \"" + v.name +
                               "\" (" + describe(v.type, v.shape) +
                               "); restore a checkpoint of this model");
    const data::HostTensor &t = *it->second;
    if (t.type() != v.type || t.shape() != v.shape)
      throw SerializationError(head + "variable \"" + v.name + "\" is " +
                               describe(t.type(), t.shape()) +
                               " in the checkpoint but " +
                               describe(v.type, v.shape) + " in the model");
    saved.erase(it);
  }
  if (!saved.empty())
    throw SerializationError(head + "it has variable \"" +
                             saved.begin()->first +
                             "\", which the model does not; restore a "
                             "checkpoint of this model");
}

} // namespace tessera::session
