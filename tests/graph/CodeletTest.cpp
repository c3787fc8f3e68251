// User codelets end to end: a Poplar-style codelet file compiled with the
// host compiler, its classes registered with their fields, and run by
// pointing the fields at host buffers, as the engine does with tile memory.
// Compiles are slow on the test machine, so most tests share one file
// (codelets/TutorialVertices.cpp), which the on-disk cache keeps compiled.
#include "../support/SpecialFiles.hpp"

#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

using namespace tessera;
using codelet::Direction;
using codelet::FieldInfo;
using codelet::Shape;
using codelet::VertexClassInfo;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

const std::string codeletDir = TESSERA_TEST_CODELET_DIR;
const std::string tutorialFile = codeletDir + "/TutorialVertices.cpp";

/// A vertex object in aligned storage, built and destroyed by its class.
class VertexObject {
public:
  explicit VertexObject(const VertexClassInfo &info)
      : info_(info), storage_(new unsigned char[info.size + info.align]) {
    std::size_t addr = reinterpret_cast<std::size_t>(storage_.get());
    object_ = storage_.get() + (info.align - addr % info.align) % info.align;
    info_.construct(object_);
  }
  ~VertexObject() { info_.destroy(object_); }

  const FieldInfo &field(const std::string &name) const {
    for (const FieldInfo &f : info_.fields)
      if (f.name == name)
        return f;
    throw std::runtime_error("no field " + name);
  }
  /// Input<T> / Output<T> / InOut<T>: a pointer.
  template <typename T> void connect(const std::string &name, T *data) {
    std::memcpy(object_ + field(name).offset, &data, sizeof data);
  }
  /// Vectors and lists: a pointer and an element count.
  void connect(const std::string &name, void *data, std::size_t size) {
    codelet::Span span{data, static_cast<std::uint32_t>(size)};
    std::memcpy(object_ + field(name).offset, &span, sizeof span);
  }
  /// Plain scalar state: the value itself.
  template <typename T> void setState(const std::string &name, T value) {
    std::memcpy(object_ + field(name).offset, &value, sizeof value);
  }
  bool compute(unsigned worker = 0) { return info_.compute(object_, worker); }

private:
  const VertexClassInfo &info_;
  std::unique_ptr<unsigned char[]> storage_;
  unsigned char *object_ = nullptr;
};

void expectField(const FieldInfo &f, const std::string &name, Direction d,
                 Shape s, Type t) {
  EXPECT_EQ(f.name, name);
  EXPECT_EQ(f.direction, d) << name;
  EXPECT_EQ(f.shape, s) << name;
  EXPECT_EQ(f.elementType, t) << name;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const CodeletError &e) {
    return e.what();
  }
  return "no CodeletError";
}

/// Points TESSERA_CACHE_DIR at a fresh directory for one test.
class ScopedCacheDir {
public:
  ScopedCacheDir() {
    const char *old = std::getenv("TESSERA_CACHE_DIR");
    hadOld_ = old != nullptr;
    old_ = old ? old : "";
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera-codelet-test-" + std::to_string(::getpid()) + "-" +
            std::to_string(
                std::chrono::steady_clock::now().time_since_epoch().count()));
    ::setenv("TESSERA_CACHE_DIR", dir_.c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (hadOld_)
      ::setenv("TESSERA_CACHE_DIR", old_.c_str(), 1);
    else
      ::unsetenv("TESSERA_CACHE_DIR");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::filesystem::path &path() const { return dir_; }

private:
  std::filesystem::path dir_;
  std::string old_;
  bool hadOld_ = false;
};

} // namespace

TEST(Codelet, TutorialSumVertexRegistersItsFieldsAndSums) {
  VertexRegistry registry;
  std::vector<std::string> names = registry.addCodelets(tutorialFile);
  EXPECT_THAT(names, ElementsAre("SumVertex", "ScaleMulti", "RowSums",
                                 "demo::inner::Axpy", "Fill<float>",
                                 "Fill<int>", "ScaledSum"));
  const RegisteredVertex *sum = registry.find("SumVertex");
  ASSERT_NE(sum, nullptr);
  EXPECT_FALSE(sum->builtin);
  EXPECT_EQ(sum->codeletName, tutorialFile);
  EXPECT_NE(sum->library, nullptr);
  EXPECT_THAT(sum->codeletSource, HasSubstr("class SumVertex"));
  EXPECT_FALSE(sum->info.multiVertex);
  ASSERT_EQ(sum->info.fields.size(), 2u);
  expectField(sum->info.fields[0], "in", Direction::Input, Shape::Vector,
              FLOAT);
  expectField(sum->info.fields[1], "out", Direction::Output, Shape::Scalar,
              FLOAT);
  EXPECT_NE(sum->info.fields[0].offset, sum->info.fields[1].offset);

  float in[5] = {1, 2, 3, 4, 5.5f}, out = -1;
  VertexObject v(sum->info);
  v.connect("in", in, 5);
  v.connect("out", &out);
  EXPECT_TRUE(v.compute());
  EXPECT_FLOAT_EQ(out, 15.5f);
}

TEST(Codelet, MultiVertexComputeRunsOnEachWorker) {
  VertexRegistry registry;
  registry.addCodelets(tutorialFile);
  const RegisteredVertex *scale = registry.find("ScaleMulti");
  ASSERT_NE(scale, nullptr);
  EXPECT_TRUE(scale->info.multiVertex);
  expectField(scale->info.fields[0], "data", Direction::InOut, Shape::Vector,
              FLOAT);
  expectField(scale->info.fields[1], "scale", Direction::State, Shape::Scalar,
              FLOAT);

  std::vector<float> data(14, 1.0f);
  VertexObject v(scale->info);
  v.connect("data", data.data(), data.size());
  v.setState("scale", 3.0f);
  for (unsigned worker = 0; worker < MultiVertex::numWorkers(); ++worker)
    EXPECT_TRUE(v.compute(worker));
  EXPECT_THAT(data, ::testing::Each(3.0f));
}

TEST(Codelet, VectorOfInputVectorsAndPlainStateRun) {
  VertexRegistry registry;
  registry.addCodelets(tutorialFile);
  const RegisteredVertex *rows = registry.find("RowSums");
  ASSERT_NE(rows, nullptr);
  ASSERT_EQ(rows->info.fields.size(), 4u);
  expectField(rows->info.fields[0], "rows", Direction::Input, Shape::VectorList,
              FLOAT);
  expectField(rows->info.fields[1], "sums", Direction::Output, Shape::Vector,
              FLOAT);
  expectField(rows->info.fields[2], "order", Direction::State, Shape::Vector,
              UNSIGNED_INT);
  expectField(rows->info.fields[3], "bias", Direction::State, Shape::Scalar,
              FLOAT);

  float r0[2] = {1, 2}, r1[3] = {10, 20, 30}, sums[2] = {};
  codelet::Span list[2] = {{r0, 2}, {r1, 3}};
  unsigned order[2] = {1, 0};
  VertexObject v(rows->info);
  v.connect("rows", list, 2);
  v.connect("sums", sums, 2);
  v.connect("order", order, 2);
  v.setState("bias", 0.5f);
  EXPECT_TRUE(v.compute());
  EXPECT_FLOAT_EQ(sums[0], 60.5f);
  EXPECT_FLOAT_EQ(sums[1], 3.5f);
}

TEST(Codelet, NamespacedStructWithHalfInputRuns) {
  VertexRegistry registry;
  registry.addCodelets(tutorialFile);
  const RegisteredVertex *axpy = registry.find("demo::inner::Axpy");
  ASSERT_NE(axpy, nullptr);
  expectField(axpy->info.fields[0], "x", Direction::Input, Shape::Vector, HALF);
  expectField(axpy->info.fields[1], "y", Direction::InOut, Shape::Vector,
              FLOAT);
  expectField(axpy->info.fields[2], "a", Direction::Input, Shape::Scalar,
              FLOAT);

  Half x[3] = {Half(1.0f), Half(0.5f), Half(-2.0f)};
  float y[3] = {1, 1, 1}, a = 2;
  VertexObject v(axpy->info);
  v.connect("x", x, 3);
  v.connect("y", y, 3);
  v.connect("a", &a);
  EXPECT_TRUE(v.compute());
  EXPECT_FLOAT_EQ(y[0], 3);
  EXPECT_FLOAT_EQ(y[1], 2);
  EXPECT_FLOAT_EQ(y[2], -3);
}

TEST(Codelet, TemplateInstantiationsAndDerivedVerticesRun) {
  VertexRegistry registry;
  registry.addCodelets(tutorialFile);
  const RegisteredVertex *fill = registry.find("Fill< int >");
  ASSERT_NE(fill, nullptr);
  EXPECT_EQ(fill->info.name, "Fill<int>");
  expectField(fill->info.fields[0], "out", Direction::Output, Shape::Vector,
              INT);
  expectField(fill->info.fields[1], "value", Direction::State, Shape::Scalar,
              INT);
  int out[4] = {};
  {
    VertexObject v(fill->info);
    v.connect("out", out, 4);
    v.setState("value", 7);
    EXPECT_TRUE(v.compute());
  }
  EXPECT_THAT(out, ElementsAre(7, 7, 7, 7));

  const RegisteredVertex *scaled = registry.find("ScaledSum");
  ASSERT_NE(scaled, nullptr);
  ASSERT_EQ(scaled->info.fields.size(), 3u);
  EXPECT_EQ(scaled->info.fields[2].name, "factor");
  float in[2] = {1, 2}, result = 0, factor = 10;
  VertexObject v(scaled->info);
  v.connect("in", in, 2);
  v.connect("out", &result);
  v.connect("factor", &factor);
  EXPECT_TRUE(v.compute());
  EXPECT_FLOAT_EQ(result, 30);
}

TEST(Codelet, AddingTheSameFileAgainIsANoOp) {
  VertexRegistry registry;
  auto first = registry.addCodelets(tutorialFile);
  const RegisteredVertex *sum = registry.find("SumVertex");
  std::uint64_t runs = VertexRegistry::codeletCompilerRuns();
  auto second = registry.addCodelets(tutorialFile);
  EXPECT_EQ(first, second);
  EXPECT_EQ(registry.find("SumVertex"), sum);
  EXPECT_EQ(registry.size(), first.size());
  EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs);
}

TEST(Codelet, ThreadsSharingARegistryAddTheSameFileOnce) {
  VertexRegistry{}.addCodelets(tutorialFile); // warm the disk cache
  VertexRegistry registry;
  std::vector<std::vector<std::string>> names(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < names.size(); ++i)
    threads.emplace_back(
        [&, i] { names[i] = registry.addCodelets(tutorialFile); });
  for (std::thread &t : threads)
    t.join();
  for (const auto &n : names)
    EXPECT_EQ(n, names[0]);
  EXPECT_EQ(registry.size(), names[0].size());
}

TEST(Codelet, SourceOfAFileUnderItsPathHitsTheFilesCacheEntry) {
  VertexRegistry registry;
  registry.addCodelets(tutorialFile);
  std::uint64_t runs = VertexRegistry::codeletCompilerRuns();
  std::ifstream in(tutorialFile);
  std::string source((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
  // As an executable loaded in a fresh process rebuilds its codelets.
  VertexRegistry rebuilt;
  rebuilt.addCodeletSource(source, tutorialFile);
  EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs);
  const RegisteredVertex *sum = rebuilt.find("SumVertex");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->codeletName, tutorialFile);
  EXPECT_EQ(sum->codeletSource, registry.find("SumVertex")->codeletSource);
}

/// Runs the vertex "Constant" and returns what it writes.
float runConstant(const VertexRegistry &registry) {
  float out = 0;
  VertexObject v(registry.find("Constant")->info);
  v.connect("out", &out);
  EXPECT_TRUE(v.compute());
  return out;
}

TEST(Codelet, CompiledCodeletsAreCachedUntilAnIncludedHeaderChanges) {
  ScopedCacheDir cache;
  std::filesystem::path dir = cache.path() / "src";
  std::filesystem::create_directories(dir);
  std::string file = (dir / "constant.cpp").string();
  std::ofstream(file) << R"src(
#include <poplar/Vertex.hpp>
#include "value.h"
struct Constant : poplar::Vertex {
  poplar::Output<float> out;
  void compute() { *out = VALUE * SCALE; }
};
)src";
  std::ofstream(dir / "value.h") << "#define VALUE 3\n";
  std::uint64_t runs = VertexRegistry::codeletCompilerRuns();
  {
    VertexRegistry registry;
    registry.addCodelets(file, "-DSCALE=2");
    EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs + 1);
    EXPECT_EQ(runConstant(registry), 6);
    // The same class compiled with other flags is another definition.
    EXPECT_THAT(errorOf([&] { registry.addCodelets(file, "-DSCALE=4"); }),
                HasSubstr("vertex class 'Constant' is defined twice: in "
                          "codelet '" +
                          file +
                          "' (compile flags '-DSCALE=2') and in "
                          "codelet '" +
                          file + "' (compile flags '-DSCALE=4')"));
  }
  {
    VertexRegistry registry;
    registry.addCodelets(file, "-DSCALE=2");
    EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs + 1);
    EXPECT_EQ(runConstant(registry), 6);
  }
  std::ofstream(dir / "value.h") << "#define VALUE 5\n";
  VertexRegistry registry;
  registry.addCodelets(file, "-DSCALE=2");
  EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs + 2);
  EXPECT_EQ(runConstant(registry), 10);

  std::vector<std::string> extensions;
  for (const auto &entry :
       std::filesystem::directory_iterator(cache.path() / "codelets"))
    extensions.push_back(entry.path().extension().string());
  std::sort(extensions.begin(), extensions.end());
  EXPECT_THAT(extensions, ElementsAre(".deps", ".so", ".so"));
}

// Compiled codelets are shared objects this process loads: the executable
// cache's rule applies. Folders the cache makes are private; a folder
// others can write is refused unless sticky and this user's; an entry
// another user owns is compiled afresh instead of loaded.
TEST(Codelet, CodeletCacheTrustsOnlyThisUsersFolderAndEntries) {
  ScopedCacheDir cache;
  const std::filesystem::path src = cache.path() / "src";
  std::filesystem::create_directories(src);
  const std::string file = (src / "constant.cpp").string();
  std::ofstream(file) << R"src(
#include <poplar/Vertex.hpp>
struct Constant : poplar::Vertex {
  poplar::Output<float> out;
  void compute() { *out = 7; }
};
)src";
  const std::filesystem::path folder = cache.path() / "codelets";
  std::uint64_t runs = VertexRegistry::codeletCompilerRuns();
  {
    VertexRegistry registry;
    registry.addCodelets(file);
    EXPECT_EQ(runConstant(registry), 7);
  }
  EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs + 1);
  struct stat st {};
  ASSERT_EQ(::stat(folder.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);

  ::chmod(folder.c_str(), 0777);
  EXPECT_THAT([&] { VertexRegistry{}.addCodelets(file); },
              ::testing::ThrowsMessage<OptionError>(::testing::AllOf(
                  HasSubstr("the codelet cache folder \"" + folder.string() +
                            "\" (mode 0777) is writable by other users"),
                  HasSubstr("set TESSERA_CACHE_DIR"))));
  EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs + 1);

  ::chmod(folder.c_str(), 01777);
  {
    VertexRegistry registry;
    registry.addCodelets(file);
    EXPECT_EQ(runConstant(registry), 7);
  }
  EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs + 1);

  if (::geteuid() != 0)
    GTEST_SKIP() << "planting another user's entry needs root";
  for (const auto &entry : std::filesystem::directory_iterator(folder))
    ASSERT_EQ(::chown(entry.path().c_str(), 4242, 4242), 0);
  {
    VertexRegistry registry;
    registry.addCodelets(file);
    EXPECT_EQ(runConstant(registry), 7);
  }
  EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs + 2);
}

TEST(Codelet, FifoFolderOrDeviceAsACodeletFileSaysWhatItIs) {
  VertexRegistry registry;
  test::Fifo fifo("codelet.cpp");
  EXPECT_THAT(test::errorOrBlocked(fifo.path(),
                                   [&] { registry.addCodelets(fifo.path()); }),
              HasSubstr("codelet file \"" + fifo.path() +
                        "\" is a FIFO (named pipe), not a regular file"));
  EXPECT_THAT(errorOf([&] { registry.addCodelets(codeletDir); }),
              HasSubstr("is a folder"));
  EXPECT_THAT(errorOf([&] { registry.addCodelets("/dev/zero"); }),
              HasSubstr("is a character device"));
}

TEST(Codelet, CompileErrorsReachTheUserVerbatim) {
  VertexRegistry registry;
  std::string message =
      errorOf([&] { registry.addCodelets(codeletDir + "/SyntaxError.cpp"); });
  EXPECT_THAT(message, HasSubstr("cannot compile codelet file"));
  // GCC points at the next statement, Clang at the end of the line.
  EXPECT_THAT(message, ::testing::ContainsRegex("SyntaxError\\.cpp:1[01]:"));
  EXPECT_THAT(message, HasSubstr("expected"));
  EXPECT_THAT(message, HasSubstr("Command: "));
  EXPECT_THAT(message, HasSubstr("-std=c++20"));
  EXPECT_EQ(registry.find("Broken"), nullptr);
}

TEST(Codelet, UnsupportedFieldTypeNamesTheField) {
  VertexRegistry registry;
  std::string message = errorOf([&] {
    registry.addCodeletSource(R"src(
#include <poplar/Vertex.hpp>
class Pointer : public poplar::Vertex {
public:
  float *p;
  bool compute() { return true; }
};
)src",
                              "pointer.cpp");
  });
  EXPECT_THAT(message, HasSubstr("vertex 'Pointer': field 'p' has a type "
                                 "Tessera cannot connect"));
}

TEST(Codelet, MissingCompilerIsNamed) {
  const char *old = std::getenv("CXX");
  std::string saved = old ? old : "";
  ::setenv("CXX", "tessera-no-such-compiler", 1);
  VertexRegistry registry;
  std::string message = errorOf([&] { registry.addCodelets(tutorialFile); });
  if (old)
    ::setenv("CXX", saved.c_str(), 1);
  else
    ::unsetenv("CXX");
  EXPECT_THAT(message, HasSubstr("cannot run the C++ compiler "
                                 "'tessera-no-such-compiler'"));
  EXPECT_THAT(message, HasSubstr("set CXX to a C++20 compiler"));
}

TEST(Codelet, MissingFileIsNamed) {
  VertexRegistry registry;
  EXPECT_THAT(errorOf([&] { registry.addCodelets("no/such/codelet.cpp"); }),
              HasSubstr("codelet file 'no/such/codelet.cpp' not found"));
}

TEST(Codelet, FileWithoutVerticesIsAnError) {
  VertexRegistry registry;
  std::string file = codeletDir + "/NoVertices.cpp";
  EXPECT_THAT(errorOf([&] { registry.addCodelets(file); }),
              HasSubstr("no vertex classes found in '" + file +
                        "': a vertex class derives from poplar::Vertex or "
                        "poplar::MultiVertex"));
}

TEST(Codelet, PrivateFieldIsReportedBeforeCompiling) {
  VertexRegistry registry;
  std::uint64_t runs = VertexRegistry::codeletCompilerRuns();
  EXPECT_THAT(
      errorOf([&] { registry.addCodelets(codeletDir + "/PrivateField.cpp"); }),
      HasSubstr("PrivateField.cpp:6: field 'in' of vertex 'Hidden' is "
                "private; make vertex fields public"));
  EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs);
}

TEST(Codelet, AnotherDefinitionOfARegisteredNameIsAnError) {
  VertexRegistry registry;
  registry.addCodelets(tutorialFile);
  std::uint64_t runs = VertexRegistry::codeletCompilerRuns();
  std::string message = errorOf([&] {
    registry.addCodeletSource(
        "class SumVertex : public Vertex { public: Input<float> in; };",
        "mine.cpp");
  });
  EXPECT_THAT(message, HasSubstr("vertex class 'SumVertex' is defined twice: "
                                 "in codelet '" +
                                 tutorialFile + "' and in codelet 'mine.cpp'"));
  EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs);
}
