// tessera_fuzz_corpus OUT: writes the seed corpus of every harness, one
// folder per harness under OUT, from Tessera's own writers (IR printer,
// checkpoint writer, executable encoder, profile maker) so that the seeds
// follow the formats as they change. The build runs it (fuzz/CMakeLists).
#include "tessera/compiler/Compiler.hpp"
#include "tessera/compiler/ExecutableFormat.hpp"
#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/engine/Profile.hpp"
#include "tessera/ir/Lowering.hpp"
#include "tessera/ir/Text.hpp"
#include "tessera/onnx/ModelBuilder.hpp"
#include "tessera/session/Checkpoint.hpp"
#include "tessera/support/File.hpp"

#include "../tests/ir/IrTestModels.hpp"
#include "FuzzCommon.hpp"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <vector>

namespace {

using namespace tessera;
namespace fs = std::filesystem;

fs::path out;

void put(const std::string &harness, const std::string &name,
         std::string_view content) {
  fs::create_directories(out / harness);
  writeFileAtomically((out / harness / name).string(), content);
}

std::string gzip(const std::string &text) {
  const std::string tmp = (out / "tmp.gz").string();
  gzFile f = gzopen(tmp.c_str(), "wb");
  if (!f ||
      gzwrite(f, text.data(), static_cast<unsigned>(text.size())) !=
          static_cast<int>(text.size()) ||
      gzclose(f) != Z_OK)
    throw Error("cannot write " + tmp + " with zlib");
  std::string bytes = readFile(tmp);
  fs::remove(tmp);
  return bytes;
}

// An IDX file: magic (0, 0, type code, rank), big-endian dimensions, then
// \p elements already big-endian. (Tessera reads IDX but writes none.)
std::string idx(unsigned code, const std::vector<std::uint32_t> &dims,
                const std::string &elements) {
  std::string s{'\0', '\0', char(code), char(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      s += char((d >> shift) & 0xFF);
  return s + elements;
}

void idxSeeds() {
  std::string pixels;
  for (int i = 0; i < 2 * 3 * 3; ++i)
    pixels += char(i * 14);
  put("idx", "images-u8.idx", idx(0x08, {2, 3, 3}, pixels));
  put("idx", "images-u8.idx.gz", gzip(idx(0x08, {2, 3, 3}, pixels)));
  put("idx", "labels-i8.idx",
      idx(0x09, {4}, std::string("\x01\xff\x07\x00", 4)));
  put("idx", "shorts.idx", idx(0x0B, {2}, std::string("\x01\x02\xff\xfe", 4)));
  put("idx", "ints.idx",
      idx(0x0C, {1, 2}, std::string("\x00\x00\x00\x09\xff\xff\xff\xfe", 8)));
  // 1.5f and -2.0f, big-endian.
  put("idx", "floats.idx",
      idx(0x0D, {2}, std::string("\x3f\xc0\x00\x00\xc0\x00\x00\x00", 8)));
  // 0.25 as a double, big-endian.
  put("idx", "doubles.idx",
      idx(0x0E, {1}, std::string("\x3f\xd0\x00\x00\x00\x00\x00\x00", 8)));
  put("idx", "empty.idx", idx(0x08, {0, 5}, ""));
}

void csvSeeds() {
  const std::string withHeader = "x,y,label\n"
                                 "0.5,1e-3,1\n"
                                 "-2,3.25,0\n"
                                 "nan,inf,2\n";
  const std::string noHeader = "1,2.5,3\r\n4,5,6\r\n";
  const std::string quoted = "\xEF\xBB\xBF\"a\",\"b\"\n1,\"2\"\n\n";
  for (const char *h : {"csv", "csv_gzip"}) {
    put(h, "header.csv", withHeader);
    put(h, "plain.csv", noHeader);
    put(h, "bom-quoted.csv", quoted);
  }
  put("csv", "header.csv.gz", gzip(withHeader));
}

void checkpointSeeds() {
  session::Checkpoint c;
  c.model = "mlp";
  c.step = 42;
  c.variables.emplace_back(
      "dense/kernel",
      data::HostTensor::fromValues<float>({2, 3}, {0.5f, -1, 2, 0, 3.25f, 7}));
  c.variables.emplace_back("dense/bias",
                           data::HostTensor::fromValues<int>({2}, {1, -2}));
  c.variables.emplace_back("step", data::HostTensor(Type::UNSIGNED_INT, {}));
  const std::string path = (out / "tmp.ckpt").string();
  session::saveCheckpoint(path, c);
  const std::string bytes = readFile(path);
  fs::remove(path);
  for (const char *h : {"checkpoint", "checkpoint_checked"})
    put(h, "mlp.ckpt", bytes);
  session::saveCheckpoint(path, session::Checkpoint{"empty", 0, {}});
  for (const char *h : {"checkpoint", "checkpoint_checked"})
    put(h, "empty.ckpt", readFile(path));
  fs::remove(path);
}

// A small MLP module: the IR text seed and, compiled, the executable and
// profile seeds.
ir::Module mlp(bool sharded) {
  ir::Module m("mlp");
  ir::Builder b(m);
  ir::Value x = b.input("x", FLOAT, {4, 8});
  ir::Value w = b.variable("w", {8, 3}, ir::init::glorotUniform(1));
  ir::Value bias = b.variable("b", {3}, ir::init::zeros());
  ir::Value h = ir::relu(ir::add(ir::matmul(x, w), bias));
  if (sharded) {
    ir::ShardScope s(b, 1);
    h = ir::softmax(h);
  }
  b.output("y", h);
  return m;
}

void compiledSeeds(const std::string &name, bool sharded) {
  const ir::Module m = mlp(sharded);
  put("ir_text", name + ".ir", ir::print(m));
  IPUModel model;
  model.numIPUs = sharded ? 2 : 1;
  model.tilesPerIPU = 4;
  Device device = model.createDevice();
  Graph graph(device.getTarget());
  program::Sequence prog;
  const ir::LoweredModule lowered = ir::lowerToGraph(m, graph, prog);
  graph.createHostWrite("x", lowered.tensor(*m.findValue("x")));
  graph.createHostRead("y", lowered.tensor(*m.findValue("y")));
  const Executable exe = compileGraph(graph, {prog});
  const std::string bytes =
      fuzz::joinPayload(detail::encodeExecutablePayload(exe));
  for (const char *h : {"executable", "engine_load"})
    put(h, name + ".payload", bytes);
  std::ostringstream file;
  exe.serialize(file);
  put("executable", name + ".tsx", file.str());

  Engine engine(exe);
  engine.load(device);
  std::vector<float> input(4 * 8, 0.25f);
  engine.writeTensor("x", input.data(), input.data() + input.size());
  engine.run(0);
  put("report", name + "-run.json",
      makeProfile(exe, &engine.getExecutionCounts()).dump(1));
  put("report", name + "-graph.json", makeProfile(exe, nullptr).dump());
}

// The codelet files of the tests and examples, as users write them.
void codeletSeeds(const fs::path &sourceDir) {
  for (const char *dir :
       {"tests/graph/codelets", "tests/engine/codelets", "examples/poplar"})
    for (const auto &entry : fs::directory_iterator(sourceDir / dir)) {
      const std::string file = entry.path().filename().string();
      const std::string text = readFile(entry.path().string());
      if (text.find("Vertex") != std::string::npos)
        put("codelet", fs::path(dir).filename().string() + "-" + file, text);
    }
}

// Inputs issue 14 found to crash the loaders, kept in the corpus so that
// every run checks them again: an IDX header whose element count wraps,
// initialiser seeds no uint64 holds, and nesting deep enough to overflow a
// recursive parser's stack.
void hostileSeeds() {
  put("idx", "hostile-count-wraps.idx",
      std::string("\x00\x00\x0c\x02\x80\x00\x00\x00\x80\x00\x00\x00", 12));
  for (const char *seed : {"-1", "1e300", "nan", "9007199254740993"})
    put("ir_text", std::string("hostile-seed") + seed + ".ir",
        std::string("module \"m\" {\n  %w = variable : float[2] init "
                    "glorotUniform(seed = ") +
            seed + ")\n  output \"w\" = %w\n}\n");
  constexpr int kDepth = 20000;
  std::string ns;
  for (int i = 0; i < kDepth; ++i)
    ns += "namespace n {\n";
  ns +=
      "struct V : public Vertex { int x; bool compute() { return true; } };\n";
  ns += std::string(kDepth, '}');
  put("codelet", "hostile-deep-namespaces.cpp", ns);
  put("report", "hostile-deep-array.json",
      "{\"format\": \"tessera-profile\", \"version\": " +
          std::string(kDepth, '[') + std::string(kDepth, ']') + "}");
}

// ONNX models as PyTorch exports them: a small CNN and an MLP with shape
// arithmetic that the importer folds.
void onnxSeeds() {
  {
    onnx::ModelBuilder b(13);
    const std::string x = b.addInput(FLOAT, {1, 1, 6, 6}, "x");
    const std::string w =
        b.addInitializer(FLOAT, {2, 1, 3, 3}, std::vector<double>(18, 0.1));
    std::string y = b.addNode(
        "Conv", {x, w}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}})[0];
    y = b.addNode("Relu", {y})[0];
    y = b.addNode("MaxPool", {y},
                  {{"kernel_shape", std::vector<std::int64_t>{2, 2}},
                   {"strides", std::vector<std::int64_t>{2, 2}}})[0];
    y = b.addNode("GlobalAveragePool", {y})[0];
    y = b.addNode("Flatten", {y})[0];
    b.addOutput(b.addNode("Softmax", {y}, {{"axis", std::int64_t{1}}})[0]);
    put("onnx", "cnn.onnx", b.modelProto());
  }
  {
    onnx::ModelBuilder b(17);
    const std::string x = b.addInput(FLOAT, {2, 3, 4}, "x");
    const std::string shape = b.addNode("Shape", {x})[0];
    const std::string zero = b.addConstant(INT, {1}, {0});
    const std::string batch =
        b.addNode("Gather", {shape, zero}, {{"axis", std::int64_t{0}}})[0];
    const std::string rest = b.addConstant(INT, {1}, {-1});
    const std::string target =
        b.addNode("Concat", {batch, rest}, {{"axis", std::int64_t{0}}})[0];
    std::string y = b.addNode("Reshape", {x, target})[0];
    const std::string w =
        b.addInitializer(FLOAT, {12, 5}, std::vector<double>(60, 0.05));
    const std::string bias =
        b.addInitializer(FLOAT, {5}, std::vector<double>(5, 0.0));
    y = b.addNode("Gemm", {y, w, bias})[0];
    b.addOutput(b.addNode("LogSoftmax", {y}, {{"axis", std::int64_t{1}}})[0]);
    put("onnx", "mlp.onnx", b.modelProto());
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: tessera_fuzz_corpus OUTPUT_DIR SOURCE_DIR\n";
    return 2;
  }
  try {
    out = argv[1];
    fs::create_directories(out);
    idxSeeds();
    csvSeeds();
    checkpointSeeds();
    put("ir_text", "every-op.ir", ir::print(test::everyOpModule()));
    compiledSeeds("mlp", false);
    compiledSeeds("mlp-2ipu", true);
    codeletSeeds(argv[2]);
    hostileSeeds();
    onnxSeeds();
  } catch (const std::exception &e) {
    std::cerr << "tessera_fuzz_corpus: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
