// The `tessera` command line: parses the subcommand with CLI11 and turns
// every error that reaches it into one clear line and exit status 1:
// Tessera's typed user errors, and the standard exceptions a hostile
// argument or a starved machine can still raise (out of memory, no more
// threads), which would otherwise abort the program with a core dump.
#include "Commands.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/Memory.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <system_error>
#include <utility>

namespace {

constexpr const char *kOutOfMemory =
    "out of host memory (std::bad_alloc); ask for less work (a smaller "
    "model, batch, file or fewer tiles) or give the process more memory";

// The whole out-of-memory line, made before anything runs: when memory
// runs out where no exception can pass, there is none left to make it.
std::string outOfMemoryLine = "tessera: error: ";

// Running out of memory where an exception cannot pass (a destructor,
// which nlohmann::json's allocates in, or a worker thread) ends in
// std::terminate. It is still the user's out-of-memory, not a crash in
// Tessera, so it gets the same line and status; anything else aborts as
// usual, with its core dump for the bug it is.
[[noreturn]] void onTerminate() {
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc &) {
      std::fputs(outOfMemoryLine.c_str(), stderr);
      std::_Exit(1);
    } catch (...) {
    }
  }
  std::abort();
}

// "tessera train": the subcommand that was running, for the error line.
std::string commandName(const CLI::App &app) {
  return app.get_subcommands().empty()
             ? "tessera"
             : "tessera " + app.get_subcommands()[0]->get_name();
}

// One line, whatever the message holds.
std::string oneLine(std::string s) {
  for (char &c : s)
    if (c == '\n' || c == '\r')
      c = ' ';
  return s;
}

} // namespace

int main(int argc, char **argv) {
  // Large compiles and loads touch gigabytes of fresh heap: in huge pages
  // they take about a fifth less time (README, "Host memory").
  tessera::restartWithHugePageHeap(argv);
  using namespace tessera::tools;
  CLI::App app("Tessera's tools for the simulated IPU system and its profiles",
               "tessera");
  app.require_subcommand(1);
  app.footer("Run `tessera <command> --help` for a command's options.");
  const CommandStreams streams{std::cout, std::cerr};
  addInfoCommand(app, streams);
  addMonitorCommand(app, streams);
  addReportCommand(app, streams);
  addTrainCommand(app, streams);
  addPlanCommand(app, streams);
  addBenchCommand(app, streams);
  addPoprunCommand(app, streams);
  // The subcommand is the first argument naming one (options come after).
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto named = std::as_const(app).get_subcommands(
        [&](const CLI::App *s) { return s->get_name() == arg; });
    if (!named.empty()) {
      outOfMemoryLine = "tessera " + arg + ": error: ";
      break;
    }
  }
  outOfMemoryLine += std::string(kOutOfMemory) + "\n";
  std::set_terminate(onTerminate);
  std::string error;
  try {
    app.parse(argc, argv);
    return 0;
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  } catch (const tessera::Error &e) {
    error = e.what();
  } catch (const std::bad_alloc &) {
    error = kOutOfMemory;
  } catch (const std::system_error &e) {
    error = "the system refused a resource (" + std::string(e.what()) +
            "); ask for fewer host threads (engine.hostThreads) or raise the "
            "process limits";
  } catch (const std::exception &e) {
    error = "unexpected failure: " + oneLine(e.what());
  }
  std::cerr << commandName(app) << ": error: " << error << '\n';
  return 1;
}
