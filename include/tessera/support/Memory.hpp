#pragma once
/// \file
/// The process's heap and memory pages.

#include <cstddef>

namespace tessera {

/// Gives the pages of freed heap blocks back to the operating system where
/// the C library keeps them (glibc: malloc_trim); elsewhere does nothing.
/// A compile frees millions of small blocks that would otherwise still
/// count as the process's resident memory.
void returnFreedMemory();

/// Faults in, for writing, the whole pages inside [p, p + bytes) in one call
/// (Linux's MADV_POPULATE_WRITE), leaving their contents as they are: for
/// memory about to be written in full, cheaper than a fault per page.
/// Returns false where the system cannot (then the pages fault in as they
/// are first touched).
bool populateMemory(void *p, std::size_t bytes);

} // namespace tessera
