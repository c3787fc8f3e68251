#pragma once
/// \file
/// The process's heap and memory pages.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

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

/// While any HeapPrefaulter lives, glibc's malloc takes every block from
/// the heap that grows at the program break, claiming 256 MiB more than it
/// needs each time, and a thread faults in what is claimed but not yet
/// handed out. The first touch of fresh memory, which on a machine that
/// hands memory out lazily costs more than the work done in it, then runs
/// on another core beside that work (a compile's lowering and compiler).
/// Heap use peaks up to the 256 MiB higher. When the last one ends, malloc
/// takes blocks from 32 MiB up as mappings of their own again, and smaller
/// ones from the heap. Does nothing where
/// TESSERA_HEAP_PREFAULT is "0", off Linux and glibc, or under
/// AddressSanitizer (whose allocator is its own).
class HeapPrefaulter {
public:
  HeapPrefaulter();
  ~HeapPrefaulter();
  HeapPrefaulter(const HeapPrefaulter &) = delete;
  HeapPrefaulter &operator=(const HeapPrefaulter &) = delete;

private:
  bool active_ = false;
};

/// The GLIBC_TUNABLES value that asks glibc's malloc to back the heap with
/// transparent huge pages (`glibc.malloc.hugetlb=1`), given the variable's
/// value now (null when unset) and the kernel's mode line
/// (/sys/kernel/mm/transparent_hugepage/enabled, such as
/// "always [madvise] never"). nullopt when nothing should change: the
/// kernel gives huge pages only on request ("[madvise]") or not at all,
/// or the value already says what malloc should do about them.
std::optional<std::string> hugePageTunables(const char *current,
                                            std::string_view thpModes);

/// Starts this program again (execv of /proc/self/exe, the same \p argv and
/// environment) with hugePageTunables' value in GLIBC_TUNABLES, when it
/// gives one. On a machine that hands out memory lazily, first touch of a
/// page costs more than anything done with it: ResNet-50's compile touches
/// about 5 GB, a 4 KiB fault at a time without huge pages. Does nothing
/// (returns) where TESSERA_HUGE_PAGES is "0", under Valgrind (whose tools
/// would not follow the restart), off Linux and glibc, or when execv fails.
/// Call it first thing in main, before any thread starts.
void restartWithHugePageHeap(char **argv);

} // namespace tessera
