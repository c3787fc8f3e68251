#pragma once
/// \file
/// The process's heap.

namespace tessera {

/// Gives the pages of freed heap blocks back to the operating system where
/// the C library keeps them (glibc: malloc_trim); elsewhere does nothing.
/// A compile frees millions of small blocks that would otherwise still
/// count as the process's resident memory.
void returnFreedMemory();

} // namespace tessera
