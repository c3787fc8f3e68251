// The IR's text form. Whatever parse() accepts must print, and the printed
// text must parse to a module that prints the same: the round trip the
// text format promises (print(parse(print(m))) == print(m)).
#include "FuzzCommon.hpp"

#include "tessera/ir/Text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  using namespace tessera;
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  std::string printed;
  try {
    printed = ir::print(ir::parse(text));
  } catch (const Error &) {
    return 0;
  }
  std::string again;
  try {
    again = ir::print(ir::parse(printed));
  } catch (const Error &e) {
    std::fprintf(stderr, "%s\nfails to parse again: %s\n", printed.c_str(),
                 e.what());
    fuzz::require(false, "a printed module does not parse");
  }
  if (again != printed)
    std::fprintf(stderr, "printed:\n%s\nprinted again:\n%s\n", printed.c_str(),
                 again.c_str());
  fuzz::require(again == printed, "print(parse(print(m))) != print(m)");
  return 0;
}
