#include "tessera/passes/Pass.hpp"

#include "tessera/ir/Text.hpp"
#include "tessera/support/File.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>

namespace tessera::passes {
namespace {

// A file name part: characters other than letters, digits, '.', '-' and
// '_' (a module named "dense/train") become '_'.
std::string fileNamePart(std::string_view text) {
  std::string out(text.empty() ? "module" : text);
  for (char &c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' &&
        c != '_')
      c = '_';
  return out;
}

void dumpToFolder(const std::string &folder, const ir::Module &module,
                  std::size_t index, std::string_view pass) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec || !std::filesystem::is_directory(folder))
    throw Error("cannot write IR dumps into \"" + folder + "\" (" +
                (ec ? ec.message() : std::string("not a folder")) +
                "); set TESSERA_DUMP_IR to a folder you can write to, or "
                "unset it");
  char number[8];
  std::snprintf(number, sizeof number, "%02zu", index);
  const std::string name = fileNamePart(module.name()) + "." + number + "." +
                           fileNamePart(pass) + ".ir";
  writeFileAtomically((std::filesystem::path(folder) / name).string(),
                      ir::print(module));
}

} // namespace

PassManagerOptions PassManagerOptions::fromEnvironment() {
  PassManagerOptions o;
  if (const char *dir = std::getenv("TESSERA_DUMP_IR"))
    o.dumpDirectory = dir;
  return o;
}

bool PassManager::run(ir::Module &module) {
  bool changed = false;
  if (!options_.dumpDirectory.empty())
    dumpToFolder(options_.dumpDirectory, module, 0, "input");
  for (std::size_t i = 0; i < passes_.size(); ++i) {
    const auto &pass = passes_[i];
    changed |= pass->run(module);
    if (options_.dump)
      *options_.dump << "# after " << pass->name() << "\n" << ir::print(module);
    if (!options_.dumpDirectory.empty())
      dumpToFolder(options_.dumpDirectory, module, i + 1, pass->name());
    if (!options_.verifyEachPass)
      continue;
    try {
      ir::verify(module, options_.verify);
    } catch (const Error &e) {
      throw ir::IrError("the module does not verify after pass '" +
                        std::string(pass->name()) + "': " + e.what());
    }
  }
  return changed;
}

} // namespace tessera::passes
