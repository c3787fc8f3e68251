// popc: compiles a codelet file to a compiled codelet (.gp) that
// Graph::addCodelets loads, accepting the options of Poplar's popc.
#include "tessera/graph/CodeletArchive.hpp"
#include "tessera/support/Error.hpp"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

const char *usage =
    "usage: popc [-O0|-O1|-O2|-O3] [-g] [-I dir] [-D name[=value]]\n"
    "            [--target ipu1|ipu2|ipu21|cpu|ipu_model] [-o out.gp] "
    "file.cpp\n"
    "Compiles the vertex classes of file.cpp for the IPU Model into a\n"
    "compiled codelet that graph.addCodelets(\"out.gp\") loads (default\n"
    "output: file.gp). __POPC__ is defined while compiling.\n";

struct Arguments {
  std::string flags, output, input;
};

bool takesValue(const std::string &a) {
  return a == "-I" || a == "-D" || a == "-o" || a == "--target" ||
         a == "-target";
}

/// Turns argv into compiler flags; returns false (after printing why) on a
/// bad command line.
bool parse(int argc, char **argv, Arguments &args) {
  std::vector<std::string> in(argv + 1, argv + argc);
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::string a = in[i], value;
    if (takesValue(a)) {
      if (i + 1 == in.size()) {
        std::cerr << "popc: " << a << " needs a value\n" << usage;
        return false;
      }
      value = in[++i];
    }
    auto add = [&](const std::string &flag) {
      args.flags += (args.flags.empty() ? "" : " ") + flag;
    };
    if (a == "-h" || a == "--help") {
      std::cout << usage;
      std::exit(0);
    } else if (a == "-o") {
      args.output = value;
    } else if (a == "-I" || a == "-D") {
      add(a + value);
    } else if (a.rfind("-I", 0) == 0 || a.rfind("-D", 0) == 0 ||
               a.rfind("-O", 0) == 0 || a == "-g") {
      add(a);
    } else if (a == "--target" || a == "-target" ||
               a.rfind("--target=", 0) == 0) {
      // The IPU Model runs every target's codelets on the host.
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "popc: unknown option '" << a << "'\n" << usage;
      return false;
    } else if (!args.input.empty()) {
      std::cerr << "popc: one codelet file at a time (got '" << args.input
                << "' and '" << a << "')\n";
      return false;
    } else {
      args.input = a;
    }
  }
  if (args.input.empty()) {
    std::cerr << "popc: no codelet file given\n" << usage;
    return false;
  }
  if (args.output.empty()) {
    std::size_t dot = args.input.find_last_of('.');
    std::size_t slash = args.input.find_last_of('/');
    bool hasExt =
        dot != std::string::npos && (slash == std::string::npos || dot > slash);
    args.output = (hasExt ? args.input.substr(0, dot) : args.input) + ".gp";
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Arguments args;
  if (!parse(argc, argv, args))
    return 2;
  try {
    tessera::compileCodeletArchive(args.input, args.flags, args.output);
  } catch (const tessera::Error &e) {
    std::cerr << "popc: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
