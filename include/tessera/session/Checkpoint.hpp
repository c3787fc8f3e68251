/// \file
/// Checkpoints: a model's variables by name, saved to a file and restored.
/// The file is versioned and checksummed and written atomically, so a crash
/// leaves the previous checkpoint intact; restoring a checkpoint of another
/// model is an error naming the first variable that differs.
#pragma once

#include "tessera/data/HostTensor.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera::session {

struct Checkpoint {
  /// The model it belongs to (a name the user or the nn layer gives).
  std::string model;
  /// Training steps taken when it was saved.
  std::uint64_t step = 0;
  /// Variables in the model's order.
  std::vector<std::pair<std::string, data::HostTensor>> variables;
};

/// The format version this build writes and reads.
inline constexpr std::uint32_t kCheckpointVersion = 1;

/// The largest rank a checkpoint's variable may have: 64. Models use a
/// handful of dimensions; a larger rank is a corrupt file, rejected before
/// the shape is allocated. (Sizes need no other ceiling: every variable's
/// byte count is checked, overflow-free, against the bytes its file holds
/// before its tensor is allocated.)
inline constexpr std::uint64_t kMaxCheckpointRank = 64;

/// Writes \p ckpt to \p path atomically. Throws Error naming the path when
/// the file cannot be written.
void saveCheckpoint(const std::string &path, const Checkpoint &ckpt);

/// Reads the checkpoint at \p path. Throws SerializationError for a missing
/// file or one that is not a regular file (a folder, a FIFO, a device),
/// another format version, a truncated or corrupt file (a checksum
/// mismatch, or sizes that overflow or exceed the file).
Checkpoint loadCheckpoint(const std::string &path);

/// A variable a model expects: its name, element type and shape.
struct VariableSpec {
  std::string name;
  Type type;
  data::Shape shape;
};

/// Checks that \p ckpt (read from \p path) holds exactly \p expected, in any
/// order. Throws SerializationError naming the first missing, extra or
/// differently shaped variable and both models' names.
void checkCheckpointMatches(const Checkpoint &ckpt, const std::string &path,
                            const std::string &model,
                            const std::vector<VariableSpec> &expected);

} // namespace tessera::session
