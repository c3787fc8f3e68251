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
    if (n != 0) // an empty tensor's data() may be null
      std::memcpy(p, bytes_.data() + pos_, n);
    pos_ += n;
  }
  bool atEnd() const { return pos_ == end_; }
  std::size_t left() const { return end_ - pos_; }

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

// The shape of variable `name`. The rank is checked against
// kMaxCheckpointRank and the bytes left before the shape is allocated, so a
// corrupt rank is an error instead of std::length_error.
data::Shape readShape(Reader &r, const std::string &what,
                      const std::string &name) {
  const auto rank = r.pod<std::uint64_t>();
  if (rank > kMaxCheckpointRank || rank > r.left() / 8)
    throw SerializationError(what + ": variable \"" + name + "\" has rank " +
                             std::to_string(rank) + " (at most " +
                             std::to_string(kMaxCheckpointRank) +
                             " is allowed and " + std::to_string(r.left()) +
                             " bytes are left); the file is corrupt, save "
                             "it again");
  data::Shape shape(rank);
  for (auto &d : shape)
    d = r.pod<std::uint64_t>();
  return shape;
}

// Checks a variable's stored byte count against its type and shape (every
// product checked for overflow: [2^62, 4] must not wrap to 0 bytes) and
// against the bytes left in the file, before its tensor is allocated.
void checkVariableBytes(const Reader &r, const std::string &what,
                        const std::string &name, Type type,
                        const data::Shape &shape, std::uint64_t bytes) {
  std::uint64_t expected = typeSize(type);
  bool overflow = false;
  for (std::size_t d : shape)
    overflow = overflow || __builtin_mul_overflow(expected, d, &expected);
  const std::string head = what + ": variable \"" + name + "\" (" +
                           data::typeAndShapeString(type, shape) + ") ";
  if (overflow)
    throw SerializationError(head + "would take more than 2^64 bytes; the "
                                    "file is corrupt, save it again");
  if (bytes != expected)
    throw SerializationError(head + "needs " + std::to_string(expected) +
                             " bytes but the file says " +
                             std::to_string(bytes) +
                             "; the file is corrupt, save it again");
  if (bytes > r.left())
    throw SerializationError(head + "needs " + std::to_string(bytes) +
                             " bytes but only " + std::to_string(r.left()) +
                             " are left in the file; it is truncated or "
                             "corrupt, save it again");
}

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
      std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
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
    const data::Shape shape = readShape(r, what, name);
    const auto bytes = r.pod<std::uint64_t>();
    checkVariableBytes(r, what, name, static_cast<Type>(type), shape, bytes);
    data::HostTensor t(static_cast<Type>(type), shape);
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
