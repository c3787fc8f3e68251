// Compiled codelet files (.gp, popc's output): written with the codelet's
// source hash and Tessera's version, loaded without the compiler, refused
// when another Tessera version wrote them. The codelet uses the
// addCodelets(__FILE__) idiom: its host part is hidden behind __POPC__.
#include "tessera/graph/CodeletArchive.hpp"
#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

using namespace tessera;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

// Host code that would not compile as a codelet (no such function, no
// main's headers) sits in the #else branch, as in Poplar's single-file
// programs.
const char *singleFileProgram = R"(
#ifdef __POPC__
#include <poplar/Vertex.hpp>
using namespace poplar;
class DoubleIt : public Vertex {
public:
  InOut<Vector<float>> data;
  bool compute() {
    for (unsigned i = 0; i < data.size(); ++i)
      data[i] *= 2;
    return true;
  }
};
#else
int main() { return hostOnlyFunctionThatDoesNotExist(); }
#endif
)";

/// A fresh folder holding the codelet file, and the codelet cache.
class ArchiveFixture : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessera-gp-test-" + std::to_string(::getpid()) + "-" +
            std::to_string(
                std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
    const char *old = std::getenv("TESSERA_CACHE_DIR");
    oldCache_ = old ? old : "";
    ::setenv("TESSERA_CACHE_DIR", (dir_ / "cache").c_str(), 1);
    source_ = (dir_ / "program.cpp").string();
    std::ofstream(source_) << singleFileProgram;
    gp_ = (dir_ / "program.gp").string();
  }
  void TearDown() override {
    ::setenv("TESSERA_CACHE_DIR", oldCache_.c_str(), 1);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string read(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path dir_;
  std::string oldCache_, source_, gp_;
};

} // namespace

TEST_F(ArchiveFixture, CompiledCodeletLoadsWithoutTheCompilerAndRuns) {
  compileCodeletArchive(source_, "-O2 -DUNUSED=1", gp_);
  std::string gp = read(gp_);
  EXPECT_TRUE(isCodeletArchive(gp_));
  EXPECT_FALSE(isCodeletArchive(source_));
  EXPECT_THAT(gp, HasSubstr(std::string("tessera-version ") +
                            std::to_string(std::strlen(tesseraVersion())) +
                            "\n" + tesseraVersion() + "\n"));
  EXPECT_THAT(gp, HasSubstr("source-hash 16\n"));
  EXPECT_THAT(gp, HasSubstr("\x7f"
                            "ELF")); // the compiled shared object
  // A new cache: loading must not find the compile in it.
  ::setenv("TESSERA_CACHE_DIR", (dir_ / "cache2").c_str(), 1);
  std::uint64_t runs = VertexRegistry::codeletCompilerRuns();
  VertexRegistry registry;
  EXPECT_THAT(registry.addCodelets(gp_), ElementsAre("DoubleIt"));
  EXPECT_EQ(VertexRegistry::codeletCompilerRuns(), runs);
  const RegisteredVertex *v = registry.find("DoubleIt");
  ASSERT_NE(v, nullptr);
  EXPECT_THAT(v->codeletSource, HasSubstr("class DoubleIt"));
  EXPECT_EQ(v->compileFlags, "-O2 -DUNUSED=1");
  ASSERT_EQ(v->info.fields.size(), 1u);
  std::vector<unsigned char> object(v->info.size + v->info.align);
  std::size_t addr = reinterpret_cast<std::size_t>(object.data());
  unsigned char *p =
      object.data() + (v->info.align - addr % v->info.align) % v->info.align;
  v->info.construct(p);
  float data[3] = {1, 2, 3.5f};
  codelet::Span span{data, 3};
  std::memcpy(p + v->info.fields[0].offset, &span, sizeof span);
  EXPECT_TRUE(v->info.compute(p, 0));
  v->info.destroy(p);
  EXPECT_FLOAT_EQ(data[2], 7.0f);
}

TEST_F(ArchiveFixture, CodeletSourceSeesPopcDefined) {
  VertexRegistry registry;
  EXPECT_THAT(registry.addCodelets(source_), ElementsAre("DoubleIt"));
}

TEST_F(ArchiveFixture, ArchiveFromAnotherVersionNamesBothVersions) {
  compileCodeletArchive(source_, "", gp_);
  std::string gp = read(gp_);
  std::string field = std::string("tessera-version ") +
                      std::to_string(std::strlen(tesseraVersion())) + "\n" +
                      tesseraVersion() + "\n";
  std::size_t at = gp.find(field);
  ASSERT_NE(at, std::string::npos);
  gp.replace(at, field.size(), "tessera-version 6\n0.0.42\n");
  std::ofstream(gp_, std::ios::binary | std::ios::trunc) << gp;
  VertexRegistry registry;
  try {
    registry.addCodelets(gp_);
    FAIL() << "expected CodeletError";
  } catch (const CodeletError &e) {
    EXPECT_THAT(e.what(), HasSubstr("Tessera 0.0.42"));
    EXPECT_THAT(e.what(),
                HasSubstr(std::string("this is Tessera ") + tesseraVersion()));
  }
}

TEST_F(ArchiveFixture, DamagedOrEditedArchiveIsRefused) {
  compileCodeletArchive(source_, "", gp_);
  std::string gp = read(gp_);
  std::ofstream(gp_, std::ios::binary | std::ios::trunc)
      << gp.substr(0, gp.size() / 2);
  VertexRegistry registry;
  EXPECT_THROW(
      {
        try {
          registry.addCodelets(gp_);
        } catch (const CodeletError &e) {
          EXPECT_THAT(e.what(), HasSubstr("not a complete compiled codelet"));
          throw;
        }
      },
      CodeletError);
  std::size_t at = gp.find("*= 2");
  ASSERT_NE(at, std::string::npos);
  gp[at + 3] = '3'; // the recorded source no longer matches its hash
  std::ofstream(gp_, std::ios::binary | std::ios::trunc) << gp;
  EXPECT_THROW(registry.addCodelets(gp_), CodeletError);
}
