// The `tessera` command line: parses the subcommand with CLI11 and turns
// Tessera's typed user errors into one clear line and exit status 1.
#include "Commands.hpp"

#include "tessera/support/Error.hpp"

#include <iostream>

int main(int argc, char **argv) {
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
  addBenchCommand(app, streams);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  } catch (const tessera::Error &e) {
    const std::string command =
        app.get_subcommands().empty()
            ? "tessera"
            : "tessera " + app.get_subcommands()[0]->get_name();
    std::cerr << command << ": error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
