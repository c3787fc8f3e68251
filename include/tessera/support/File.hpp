/// \file
/// Whole-file reads and crash-safe writes: a reader sees either the old file
/// or the complete new one, never a torn one (executable caches, profiles,
/// device holder records shared between processes). Every reader of a path
/// a user names (data files, checkpoints, executables, cache entries) goes
/// through openRegularFile or checkRegularFile, so that a folder, a FIFO or
/// a device is a one-line error instead of a hang or an endless read.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace tessera {

/// Writes \p bytes to \p path atomically: into a temporary file
/// `PATH.tmp.PID.N` in the same folder, flushed to disk with fsync, then
/// renamed over \p path. Creates missing parent folders. Temporaries of
/// \p path itself left by processes that no longer run (killed mid-write)
/// are removed first (removeStaleTemporaries). Throws Error naming the path
/// and the system's reason.
void writeFileAtomically(const std::string &path, std::string_view bytes);

/// The name writeFileAtomically (and Executable::save) gives the temporary
/// file of \p path: `PATH.tmp.PID.N`, unique in this process.
std::string temporaryFileName(const std::string &path);

/// How long a temporary file must have gone unwritten before
/// removeStaleTemporaries takes it for abandoned: 5 minutes. Its PID alone
/// is not proof: a writer in another PID namespace (a container sharing the
/// folder) looks dead from here, but writes its file in one go, so its time
/// stays fresh.
inline constexpr std::chrono::seconds kStaleTemporaryAge{300};

/// Removes the temporaries `NAME.tmp.PID.N` in \p folder whose name starts
/// with \p prefix, whose writer process PID no longer exists and that were
/// last written more than kStaleTemporaryAge ago (a kill between create and
/// rename leaves them behind). An empty prefix takes every temporary: only
/// for folders Tessera owns (the executable cache), since other programs
/// may name files the same way. Best effort: errors are ignored. Returns
/// how many it removed.
std::size_t removeStaleTemporaries(const std::string &folder,
                                   const std::string &prefix = "");

/// The whole content of \p path. Throws SerializationError naming the path
/// and the system's reason (a missing file, no permission) or what the path
/// is when it is not a regular file (a folder, a FIFO, a device).
std::string readFile(const std::string &path);

/// Opens \p path read-only and returns its descriptor (close-on-exec,
/// blocking). The open does not block on a FIFO (O_NONBLOCK, cleared once
/// fstat shows a regular file). Throws SerializationError
/// `WHAT "PATH" is a FIFO (named pipe), not a regular file; ...` (or a
/// folder, a character device, ..., does not exist, cannot be opened).
int openRegularFile(const std::string &path, const std::string &what);

/// Throws SerializationError as openRegularFile does unless \p path names
/// a regular file (following symbolic links); for readers that must open
/// the path themselves (std::ifstream).
void checkRegularFile(const std::string &path, const std::string &what);

/// Throws OptionError when the folder \p folder exists and users other than
/// this one could put files in it: it is writable by group or others (and
/// not both sticky and this user's, as /tmp-style folders are: there others
/// can only add files, which untrustedFileReason then refuses), or it
/// belongs to another user (root aside). For caches whose entries this
/// process runs as code (compiled codelets, executables whose codelets are
/// compiled). \p what names the folder in the message ("the executable
/// cache folder") and \p setting says how to choose another one. A missing
/// folder passes: createPrivateFolders makes it.
void checkFolderIsPrivate(const std::string &folder, const std::string &what,
                          const std::string &setting);

/// Creates \p folder and its missing parents; each folder it creates has
/// mode 0700 (only this user can use it). Existing folders are left as they
/// are. Throws Error naming the folder and the system's reason.
void createPrivateFolders(const std::string &folder);

/// Why the file at \p path must not be trusted as this user's own: empty
/// when it (and, for a symbolic link, the link itself) belongs to this user
/// or root and no other user can write it; else a reason such as
/// `belongs to user 1001 with mode 0644`. A missing file is "does not
/// exist".
std::string untrustedFileReason(const std::string &path);

} // namespace tessera
