/// \file
/// The subcommands of the `tessera` command line. Each <Name>Command.cpp
/// adds one subcommand, its options and the code that runs it to the app;
/// Main.cpp calls every add function. A new subcommand (`tessera train`)
/// is a new file with its add function, declared here, called in Main.cpp
/// and listed in CMakeLists.txt.
///
/// A subcommand reports a user error by throwing tessera::Error (or a
/// subclass); main prints "tessera <subcommand>: error: <message>" on
/// stderr and exits with status 1, as it does for any other exception
/// (std::bad_alloc, std::system_error, ...): nothing escapes main. Bad
/// command lines exit with CLI11's status and usage message.
#pragma once

#include <CLI/CLI.hpp>

#include <iosfwd>

namespace tessera::tools {

/// Where subcommands write: standard output for results, standard error for
/// notes. Tests run the built binary, so these are the process's streams.
struct CommandStreams {
  std::ostream &out;
  std::ostream &err;
};

/// `tessera info`: the system's IPUs and devices (as gc-info).
void addInfoCommand(CLI::App &app, const CommandStreams &streams);
/// `tessera monitor`: the devices and the processes attached to them (as
/// gc-monitor).
void addMonitorCommand(CLI::App &app, const CommandStreams &streams);
/// `tessera report`: a profile folder rendered as one HTML page.
void addReportCommand(CLI::App &app, const CommandStreams &streams);
/// `tessera train`: a Keras-style MLP or CNN trained on Fashion-MNIST on
/// the IPU Model (nn::Sequential).
void addTrainCommand(CLI::App &app, const CommandStreams &streams);
/// `tessera plan`: the estimated step time, pipeline bubble and memory per
/// IPU of a train model under each pipeline schedule, with and without
/// recomputation, side by side, without training.
void addPlanCommand(CLI::App &app, const CommandStreams &streams);
/// `tessera poprun`: a command run as several instances over MPI (as
/// PopRun), each told its replicas through the POPDIST_ variables.
void addPoprunCommand(CLI::App &app, const CommandStreams &streams);
/// `tessera bench dataset`: how fast an input pipeline produces elements.
void addBenchCommand(CLI::App &app, const CommandStreams &streams);

} // namespace tessera::tools
