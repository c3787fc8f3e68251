// Loading a runtime: the vertex classes resolved, device memory and its
// initial values, and the vertex objects built into arenas, each vertex's
// fields checked against its class as it is built.
#include "Runtime.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/Logging.hpp"
#include "tessera/support/Memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tessera::engine {

void FreeDeleter::operator()(void *p) const {
  if (mapped)
    ::munmap(p, mapped);
  else
    std::free(p);
}

namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

// Zeroed memory, in pages of its own when large (so that freeing it
// returns it to the system).
//   Scattered: the tiles' memory. Steps read it in pieces scattered over
//     hundreds of megabytes, so 4 KiB pages would spend much of a step on
//     TLB misses: it is asked for transparent huge pages (where the system
//     allows them; a refusal only costs speed). Load touches it only where
//     initial values go.
//   Sequential: the vertex objects, lists and state, written whole at load
//     and read in vertex order. The first touch of huge pages is slow and
//     erratic on virtual machines (this one's: 0.1 to 2.3 s a GiB, small
//     pages a steady 0.4 s), so beyond kSmallArena (ResNet-50's 0.35 GB of
//     them) they take small pages, faulted in at once, which costs less
//     than a fault per page; smaller ones (the MLP's, the CNN's) keep huge
//     pages, whose first touch costs little there.
enum class Access { Scattered, Sequential };

Bytes allocate(std::size_t bytes, Access access) {
  constexpr std::size_t kHugePage = std::size_t(2) << 20;
  constexpr std::size_t kSmallArena = std::size_t(64) << 20;
  if (bytes >= kHugePage) {
    void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      if (access == Access::Scattered || bytes <= kSmallArena)
        ::madvise(p, bytes, MADV_HUGEPAGE);
      else
        populateMemory(p, bytes);
      return Bytes(static_cast<std::byte *>(p), FreeDeleter{bytes});
    }
  }
  void *p = std::calloc(std::max<std::size_t>(bytes, 1), 1);
  if (!p)
    throw MemoryError("the host cannot allocate " + str(bytes) +
                      " bytes for the simulated device");
  return Bytes(static_cast<std::byte *>(p));
}

std::size_t alignUp(std::size_t v, std::size_t a) {
  return (v + a - 1) / a * a;
}

// [offset, offset + size) lies inside [0, limit), without overflow.
bool fits(std::uint64_t offset, std::uint64_t size, std::uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

} // namespace

void Runtime::resolveClasses() {
  registry_ = exe_.registry;
  if (!registry_) {
    // A deserialised executable: rebuild its codelets (a cache hit when this
    // machine compiled them before).
    registry_ = std::make_shared<VertexRegistry>();
    registry_->addBuiltinLibraries();
    for (const CodeletSourceRef &c : exe_.codelets)
      registry_->addCodeletSource(c.source, c.name, c.flags);
  }
  for (const VertexClassRef &ref : exe_.vertexClasses) {
    const RegisteredVertex *cls = registry_->find(ref.name);
    if (!cls)
      throw GraphError(
          "the executable uses vertex class \"" + ref.name + "\", which " +
          (ref.codelet < 0 ? std::string("is built into a library this process "
                                         "has not registered; call that "
                                         "library's addCodelets (for the ops: "
                                         "tessera::ops::addCodelets) before "
                                         "loading")
                           : std::string("its codelet did not define")));
    classes_.push_back(cls);
  }
}

void Runtime::checkStateSize() const {
  // Each replica's copy of the state starts where the last one ends: every
  // copy must start as aligned as the first.
  if (exe_.stateBytes.size() % 8 != 0)
    throw SerializationError("the executable is corrupt: its " +
                             str(exe_.stateBytes.size()) +
                             " bytes of vertex state are not a multiple of "
                             "8; recompile and save it again");
}

// The executable's validator checks its tables, but a field's meaning (an
// address, a span index or a state offset, and its element size) comes from
// its vertex class, known only here. A file with recomputed checksums must
// not turn these into wild reads and writes in buildVertices or compute.
void Runtime::checkVertexFields(std::size_t v) const {
  const std::uint64_t memBytes = exe_.replicaBytes();
  const std::uint64_t state = exe_.stateBytes.size();
  const VertexInstance &inst = exe_.vertices[v];
  const auto &info = classes_[inst.vertexClass]->info;
  const auto fail = [&](const std::string &problem) {
    throw SerializationError("the executable is corrupt: vertex " + str(v) +
                             " (" + info.name + ") " + problem +
                             "; recompile and save it again");
  };
  if (!fits(inst.firstField, info.fields.size(), exe_.fields.size()))
    fail("has fields " + str(inst.firstField) + " to " +
         str(inst.firstField + info.fields.size()) +
         " (exclusive) but there are only " + str(exe_.fields.size()));
  for (std::size_t f = 0; f < info.fields.size(); ++f) {
    const codelet::FieldInfo &fi = info.fields[f];
    const FieldValue &fv = exe_.fields[inst.firstField + f];
    const std::uint64_t elem = typeSize(fi.elementType);
    // Codelets read fields as typed values through the pointers built from
    // these addresses: a misaligned one is undefined behaviour. The compiler
    // places every element at a multiple of its size (tile blocks and state
    // entries start 8-aligned).
    const auto within = [&](const char *what, std::uint64_t at,
                            std::uint64_t bytes, std::uint64_t limit) {
      if (at % elem != 0)
        fail("field \"" + fi.name + "\" " + what + " bytes from " + str(at) +
             ", not a multiple of its " + str(elem) + "-byte element type " +
             std::string(typeName(fi.elementType)));
      if (!fits(at, bytes, limit))
        fail("field \"" + fi.name + "\" " + what + " bytes " + str(at) + " + " +
             str(bytes) + " but there are only " + str(limit));
    };
    const std::uint64_t bytes =
        fi.shape == codelet::Shape::Scalar ? elem : elem * fv.size;
    if (fi.direction == codelet::Direction::State) {
      within("uses state", fv.addr, bytes, state);
    } else if (fi.shape == codelet::Shape::Scalar ||
               fi.shape == codelet::Shape::Vector) {
      within("uses memory", fv.addr, bytes, memBytes);
    } else {
      if (!fits(fv.addr, fv.size, exe_.spans.size()))
        fail("field \"" + fi.name + "\" uses spans " + str(fv.addr) + " to " +
             str(fv.addr + fv.size) + " (exclusive) but there are only " +
             str(exe_.spans.size()));
      for (std::uint32_t k = 0; k < fv.size; ++k) {
        const FieldValue &e = exe_.spans[fv.addr + k];
        const std::uint64_t n =
            fi.shape == codelet::Shape::VectorList ? elem * e.size : elem;
        within("element uses memory", e.addr, n, memBytes);
      }
    }
  }
}

void Runtime::load() {
  const auto t0 = std::chrono::steady_clock::now();
  resolveClasses();
  const unsigned R = replicas();
  memory_ = allocate(std::size_t(R) * exe_.replicaBytes(), Access::Scattered);
  pool_ = std::make_unique<ThreadPool>(options_.hostThreads);
  // Three independent parts on the pool: the chunk plan (from the steps,
  // vertex cycles and copy ops alone), the initial memory and the vertex
  // arenas. Then the vertices are built into the arenas in blocks on the
  // pool, each checked against its class as the first replica's is built.
  checkStateSize();
  std::vector<std::size_t> objOffset;
  double ms[3] = {};
  pool_->parallelFor(3, [&](std::size_t task, unsigned) {
    const auto start = std::chrono::steady_clock::now();
    if (task == 0)
      planChunks();
    else if (task == 1)
      initMemory();
    else
      layoutVertices(objOffset);
    ms[task] = std::chrono::duration<double, std::milli>(
                   std::chrono::steady_clock::now() - start)
                   .count();
  });
  const auto t1 = std::chrono::steady_clock::now();
  buildVertices(objOffset);
  auto checker = std::make_unique<FloatChecker>(exe_, classes_, options_);
  if (checker->enabled())
    floatChecker_ = std::move(checker);
  const auto since = [](auto t) {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - t)
        .count();
  };
  logging::debug("engine load in {:.0f} ms: chunks {:.0f} ms, memory {:.0f} "
                 "ms, arenas {:.0f} ms (objects, lists and state {}, {} and "
                 "{} bytes), vertices checked and built {:.0f} ms",
                 since(t0), ms[0], ms[1], ms[2], objectBytes_ * R,
                 listBytes_ * R, stateBytes_ * R, since(t1));
  loaded_ = true;
}

void Runtime::initMemory() {
  const unsigned R = replicas();
  for (unsigned r = 0; r < R; ++r)
    for (const InitRegion &ir : exe_.initRegions)
      std::memcpy(replicaMemory(r) + ir.addr,
                  exe_.initData.data() + ir.dataOffset, ir.size);
  for (std::size_t b = 0; b < exe_.remoteBuffers.size(); ++b) {
    const RemoteBufferInfo &rb = exe_.remoteBuffers[b];
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(std::uint64_t{rb.numElements}, rb.repeats,
                               &bytes) ||
        __builtin_mul_overflow(bytes, typeSize(rb.type), &bytes) ||
        bytes > std::uint64_t(PTRDIFF_MAX))
      throw SerializationError("the executable is corrupt: remote buffer " +
                               str(b) + " (" + rb.handle + ") of " +
                               str(rb.numElements) + " elements x " +
                               str(rb.repeats) +
                               " repeats takes more bytes than a host can "
                               "address; recompile and save it again");
    try {
      remote_[b].assign(R, std::vector<std::byte>(bytes));
    } catch (const std::bad_alloc &) {
      throw MemoryError("the host cannot allocate " + str(bytes) +
                        " bytes for each of the " + str(R) +
                        " replicas of remote buffer \"" + rb.handle + "\"");
    }
  }
}

void Runtime::layoutVertices(std::vector<std::size_t> &objOffset) {
  const unsigned R = replicas();
  const std::size_t n = exe_.vertices.size();
  objOffset.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto &info = classes_[exe_.vertices[i].vertexClass]->info;
    objectBytes_ = alignUp(objectBytes_, std::max<std::size_t>(info.align, 8));
    objOffset[i] = objectBytes_;
    objectBytes_ += info.size;
  }
  objectBytes_ = alignUp(objectBytes_, 64);
  listBytes_ = exe_.spans.size() * sizeof(codelet::Span);
  stateBytes_ = exe_.stateBytes.size();
  objects_ = allocate(objectBytes_ * R, Access::Sequential);
  lists_ = allocate(listBytes_ * R, Access::Sequential);
  state_ = allocate(stateBytes_ * R, Access::Sequential);
  vertices_.resize(n * R);
  for (unsigned r = 0; r < R && stateBytes_ > 0; ++r)
    std::memcpy(state_.get() + stateBytes_ * r, exe_.stateBytes.data(),
                stateBytes_);
}

void Runtime::buildVertices(const std::vector<std::size_t> &objOffset) {
  // Blocks of vertices, so that the pool's threads share them out.
  constexpr std::size_t kBlock = std::size_t{1} << 14;
  const std::size_t n = exe_.vertices.size();
  for (unsigned r = 0; r < replicas(); ++r)
    pool_->parallelFor((n + kBlock - 1) / kBlock, [&](std::size_t b, unsigned) {
      for (std::size_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i)
        buildVertex(r, i, objects_.get() + objectBytes_ * r + objOffset[i]);
    });
}

void Runtime::buildVertex(unsigned r, std::size_t i, std::byte *obj) {
  // Checked before its object is constructed: a vertex that fails is not
  // built, and ~Runtime destroys only those that were.
  if (r == 0)
    checkVertexFields(i);
  std::byte *mem = replicaMemory(r);
  std::byte *lists = lists_.get() + listBytes_ * r;
  std::byte *state = state_.get() + stateBytes_ * r;
  const VertexInstance &inst = exe_.vertices[i];
  const auto &info = classes_[inst.vertexClass]->info;
  info.construct(obj);
  for (std::size_t f = 0; f < info.fields.size(); ++f) {
    const codelet::FieldInfo &fi = info.fields[f];
    const FieldValue &fv = exe_.fields[inst.firstField + f];
    std::byte *at = obj + fi.offset;
    if (fi.direction == codelet::Direction::State) {
      if (fi.shape == codelet::Shape::Scalar) {
        std::memcpy(at, state + fv.addr, typeSize(fi.elementType));
      } else {
        codelet::Span sp{state + fv.addr, fv.size};
        std::memcpy(at, &sp, sizeof sp);
      }
      continue;
    }
    if (fi.shape == codelet::Shape::Scalar) {
      void *p = mem + fv.addr;
      std::memcpy(at, &p, sizeof p);
    } else if (fi.shape == codelet::Shape::Vector) {
      codelet::Span sp{mem + fv.addr, fv.size};
      std::memcpy(at, &sp, sizeof sp);
    } else {
      // Lists: an array of spans (VectorList) or of pointers
      // (Vector<Input<T>>), filled in the replica's list arena.
      std::byte *arr = lists + fv.addr * sizeof(codelet::Span);
      for (std::uint32_t k = 0; k < fv.size; ++k) {
        const FieldValue &e = exe_.spans[fv.addr + k];
        if (fi.shape == codelet::Shape::VectorList) {
          codelet::Span sp{mem + e.addr, e.size};
          std::memcpy(arr + k * sizeof sp, &sp, sizeof sp);
        } else {
          void *p = mem + e.addr;
          std::memcpy(arr + k * sizeof p, &p, sizeof p);
        }
      }
      codelet::Span list{arr, fv.size};
      std::memcpy(at, &list, sizeof list);
    }
  }
  vertices_[r * exe_.vertices.size() + i] = {info.compute, obj,
                                             info.multiVertex};
}

} // namespace tessera::engine
