// The processes the tools tests start, on the system the environment
// describes (TESSERA_SYSTEM, TESSERA_SYSTEM_DIR):
//   hold N                   attaches the first free device of N IPUs,
//                            prints "attached device <id>" and holds it
//                            until stdin closes (or it is killed);
//   compile FILE device ID   compiles the two-IPU program for device ID's
//                            target without attaching it, saves it to FILE;
//   compile FILE target SPEC the same for a target such as "2xipu2", with no
//                            device at all;
//   run FILE ID              attaches device ID, loads FILE, runs it and
//                            checks the sums ("sums ok").
// A tessera::Error is printed on stderr with exit status 3.
#include "tools/TwoIpuProgram.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/device/DeviceManager.hpp"
#include "tessera/support/Error.hpp"

#include <cstdlib>
#include <iostream>
#include <string>

using namespace tessera;

namespace {

unsigned number(const std::string &text) {
  return static_cast<unsigned>(std::strtoul(text.c_str(), nullptr, 10));
}

int hold(unsigned numIPUs) {
  Device device =
      DeviceManager::createDeviceManager().acquireAvailableDevice(numIPUs);
  std::cout << "attached device " << device.getId() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return 0;
}

int compile(const std::string &file, const std::string &kind,
            const std::string &what) {
  Target target;
  if (kind == "device") {
    // Only the device's description is used: it is never attached, so
    // another process may hold its IPUs meanwhile.
    Device device =
        DeviceManager::createDeviceManager().getDevice(number(what));
    target = device.getTarget();
  } else {
    const SystemConfig c = SystemConfig::fromSpec(what, "target");
    target = Target::createIPUTarget(c.numIPUs, c.arch);
  }
  Graph graph(target);
  program::Program prog = testing::buildTwoIpuProgram(graph);
  compileGraph(graph, {prog}).save(file);
  std::cout << "compiled for " << target.getNumIPUs() << " "
            << target.getTargetArchString() << " IPUs" << std::endl;
  return 0;
}

int run(const std::string &file, unsigned deviceId) {
  Executable exe = Executable::load(file);
  const unsigned tiles = exe.tilesPerIPU;
  Device device = DeviceManager::createDeviceManager().getDevice(deviceId);
  device.attach();
  Engine engine(std::move(exe));
  engine.load(device);
  const std::vector<float> sums = testing::runTwoIpuProgram(engine, tiles);
  if (sums != testing::twoIpuExpectedSums(tiles)) {
    std::cout << "sums differ" << std::endl;
    return 4;
  }
  std::cout << "sums ok on device " << deviceId << std::endl;
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "hold")
      return hold(number(args[1]));
    if (args.size() == 4 && args[0] == "compile")
      return compile(args[1], args[2], args[3]);
    if (args.size() == 3 && args[0] == "run")
      return run(args[1], number(args[2]));
  } catch (const Error &e) {
    std::cerr << e.what() << '\n';
    return 3;
  }
  std::cerr << "usage: " << argv[0]
            << " hold N | compile FILE (device ID | target SPEC) | run FILE "
               "ID\n";
  return 2;
}
